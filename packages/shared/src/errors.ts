/**
 * Stable error codes. The API answers every failure with `{ error: { code, message, details? } }`;
 * the portal, the agent and scripts branch on `code`, never on the message text.
 */
export const ErrorCode = {
  ValidationFailed: 'VALIDATION_FAILED',
  InvalidPath: 'INVALID_PATH',
  NotFound: 'NOT_FOUND',
  NameTaken: 'NAME_TAKEN',
  NotACollection: 'NOT_A_COLLECTION',
  NotAnObject: 'NOT_AN_OBJECT',
  IsASymlink: 'IS_A_SYMLINK',
  MoveIntoItself: 'MOVE_INTO_ITSELF',
  RootImmutable: 'ROOT_IMMUTABLE',
  Unauthenticated: 'UNAUTHENTICATED',
  InvalidCredentials: 'INVALID_CREDENTIALS',
  AccountDisabled: 'ACCOUNT_DISABLED',
  TokenInvalid: 'TOKEN_INVALID',
  TokenExpired: 'TOKEN_EXPIRED',
  TokenRevoked: 'TOKEN_REVOKED',
  TokenScopeInsufficient: 'TOKEN_SCOPE_INSUFFICIENT',
  TokenOutsideCollection: 'TOKEN_OUTSIDE_COLLECTION',
  PermissionDenied: 'PERMISSION_DENIED',
  AdminRequired: 'ADMIN_REQUIRED',
  CsrfFailed: 'CSRF_FAILED',
  NotAMember: 'NOT_A_MEMBER',
  RateLimited: 'RATE_LIMITED',
  PayloadTooLarge: 'PAYLOAD_TOO_LARGE',
  RangeNotSatisfiable: 'RANGE_NOT_SATISFIABLE',
  UploadIncomplete: 'UPLOAD_INCOMPLETE',
  UploadOffsetMismatch: 'UPLOAD_OFFSET_MISMATCH',
  UploadExpired: 'UPLOAD_EXPIRED',
  UploadBaseChanged: 'UPLOAD_BASE_CHANGED',
  UploadRangeInvalid: 'UPLOAD_RANGE_INVALID',
  UploadRangeOverlap: 'UPLOAD_RANGE_OVERLAP',
  ChecksumMismatch: 'CHECKSUM_MISMATCH',
  InvalidCursor: 'INVALID_CURSOR',
  RouteNotFound: 'ROUTE_NOT_FOUND',
  ReplicaUnavailable: 'REPLICA_UNAVAILABLE',
  StorageUnavailable: 'STORAGE_UNAVAILABLE',
  PeerUnauthorized: 'PEER_UNAUTHORIZED',
  BatchRejected: 'BATCH_REJECTED',
  SnapshotRefused: 'SNAPSHOT_REFUSED',
  PurgeNotYet: 'PURGE_NOT_YET',
  PurgeBlocked: 'PURGE_BLOCKED',
  ConflictClosed: 'CONFLICT_CLOSED',
  UpdateRejected: 'UPDATE_REJECTED',
  InvalidQuery: 'INVALID_QUERY',
  CacheDisabled: 'CACHE_DISABLED',
  CacheFull: 'CACHE_FULL',
  /**
   * Not an error body: a download answered `202` while the object is staged from a compound
   * resource's archive (ObjectStagingDto). Clients that take answers as bytes report it so.
   */
  ObjectStaging: 'OBJECT_STAGING',
  Internal: 'INTERNAL',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

/** HTTP status that goes with each code; the API's exception filter and the client agree on it. */
export const errorStatus: Record<ErrorCode, number> = {
  VALIDATION_FAILED: 422,
  INVALID_PATH: 422,
  NOT_FOUND: 404,
  NAME_TAKEN: 409,
  NOT_A_COLLECTION: 409,
  NOT_AN_OBJECT: 409,
  IS_A_SYMLINK: 409,
  MOVE_INTO_ITSELF: 422,
  ROOT_IMMUTABLE: 422,
  UNAUTHENTICATED: 401,
  INVALID_CREDENTIALS: 401,
  ACCOUNT_DISABLED: 403,
  TOKEN_INVALID: 401,
  TOKEN_EXPIRED: 401,
  TOKEN_REVOKED: 401,
  TOKEN_SCOPE_INSUFFICIENT: 403,
  TOKEN_OUTSIDE_COLLECTION: 403,
  PERMISSION_DENIED: 403,
  ADMIN_REQUIRED: 403,
  CSRF_FAILED: 403,
  NOT_A_MEMBER: 403,
  RATE_LIMITED: 429,
  PAYLOAD_TOO_LARGE: 413,
  RANGE_NOT_SATISFIABLE: 416,
  UPLOAD_INCOMPLETE: 400,
  UPLOAD_OFFSET_MISMATCH: 409,
  UPLOAD_EXPIRED: 410,
  UPLOAD_BASE_CHANGED: 409,
  UPLOAD_RANGE_INVALID: 422,
  UPLOAD_RANGE_OVERLAP: 409,
  CHECKSUM_MISMATCH: 422,
  INVALID_CURSOR: 422,
  ROUTE_NOT_FOUND: 404,
  REPLICA_UNAVAILABLE: 503,
  STORAGE_UNAVAILABLE: 503,
  PEER_UNAUTHORIZED: 401,
  BATCH_REJECTED: 422,
  SNAPSHOT_REFUSED: 409,
  PURGE_NOT_YET: 409,
  PURGE_BLOCKED: 409,
  CONFLICT_CLOSED: 409,
  UPDATE_REJECTED: 409,
  INVALID_QUERY: 422,
  CACHE_DISABLED: 409,
  CACHE_FULL: 409,
  OBJECT_STAGING: 202,
  INTERNAL: 500,
};

export interface ErrorBody {
  error: {
    code: ErrorCode;
    message: string;
    /** For VALIDATION_FAILED: messages keyed by field path (`name`, `limit`, `members.0.role`). */
    details?: Record<string, string[]>;
  };
}
