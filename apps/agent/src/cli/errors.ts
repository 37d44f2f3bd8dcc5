import { ApiError, ErrorCode, PathError } from '@tributary/shared';
import { ChecksumMismatchError, TransportError } from '@tributary/buffer';
import { ConfigError } from '../config/config';

/**
 * Exit codes of `trib`, stable for scripts (documented in apps/agent/README.md).
 */
export const ExitCode = {
  Ok: 0,
  /** Anything not listed below. */
  Error: 1,
  /** Bad arguments or options, an invalid path, a value the API refused as invalid. */
  Usage: 2,
  /** The path, token, conflict or group does not exist. */
  NotFound: 3,
  /** Not logged in, token invalid/expired/revoked, or not allowed. */
  Auth: 4,
  /** The name is taken, the entry is of the wrong kind, the conflict is closed, too early to purge. */
  Conflict: 5,
  /** The site did not answer (down, wrong URL) or answered 5xx/503 (replica unavailable). */
  Unreachable: 6,
  /** Bytes did not match their checksum after retries. */
  Integrity: 7,
  /** Not possible on this machine (no FUSE, no browser). */
  Unsupported: 8,
  /** Interrupted (Ctrl-C). */
  Interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** An error the CLI reports with its own exit code and message (and optionally a hint). */
export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: ExitCode = ExitCode.Error,
    readonly hint?: string,
    readonly code?: string,
  ) {
    super(message);
    this.name = 'CliError';
  }
}

export const usage = (message: string, hint?: string): CliError =>
  new CliError(message, ExitCode.Usage, hint, 'USAGE');

const CODE_EXIT: Partial<Record<ErrorCode, ExitCode>> = {
  VALIDATION_FAILED: ExitCode.Usage,
  INVALID_PATH: ExitCode.Usage,
  MOVE_INTO_ITSELF: ExitCode.Usage,
  ROOT_IMMUTABLE: ExitCode.Usage,
  INVALID_CURSOR: ExitCode.Usage,
  INVALID_QUERY: ExitCode.Usage,
  BATCH_REJECTED: ExitCode.Usage,
  RANGE_NOT_SATISFIABLE: ExitCode.Usage,
  PAYLOAD_TOO_LARGE: ExitCode.Usage,
  NOT_FOUND: ExitCode.NotFound,
  ROUTE_NOT_FOUND: ExitCode.NotFound,
  UNAUTHENTICATED: ExitCode.Auth,
  INVALID_CREDENTIALS: ExitCode.Auth,
  ACCOUNT_DISABLED: ExitCode.Auth,
  TOKEN_INVALID: ExitCode.Auth,
  TOKEN_EXPIRED: ExitCode.Auth,
  TOKEN_REVOKED: ExitCode.Auth,
  TOKEN_SCOPE_INSUFFICIENT: ExitCode.Auth,
  TOKEN_OUTSIDE_COLLECTION: ExitCode.Auth,
  PERMISSION_DENIED: ExitCode.Auth,
  ADMIN_REQUIRED: ExitCode.Auth,
  CSRF_FAILED: ExitCode.Auth,
  NOT_A_MEMBER: ExitCode.Auth,
  PEER_UNAUTHORIZED: ExitCode.Auth,
  NAME_TAKEN: ExitCode.Conflict,
  CACHE_DISABLED: ExitCode.Conflict,
  CACHE_FULL: ExitCode.Conflict,
  NOT_A_COLLECTION: ExitCode.Conflict,
  NOT_AN_OBJECT: ExitCode.Conflict,
  SNAPSHOT_REFUSED: ExitCode.Conflict,
  UPLOAD_OFFSET_MISMATCH: ExitCode.Conflict,
  PURGE_NOT_YET: ExitCode.Conflict,
  CONFLICT_CLOSED: ExitCode.Conflict,
  UPLOAD_EXPIRED: ExitCode.Conflict,
  UPLOAD_INCOMPLETE: ExitCode.Error,
  CHECKSUM_MISMATCH: ExitCode.Integrity,
  RATE_LIMITED: ExitCode.Unreachable,
  REPLICA_UNAVAILABLE: ExitCode.Unreachable,
  STORAGE_UNAVAILABLE: ExitCode.Unreachable,
  OBJECT_STAGING: ExitCode.Unreachable,
  INTERNAL: ExitCode.Unreachable,
};

/** What to do about an API error code, when the message alone does not say. */
const CODE_HINT: Partial<Record<ErrorCode, string>> = {
  UNAUTHENTICATED: 'log in with `trib login --site <url> --token <token>`',
  TOKEN_INVALID: 'the token is not known to this site: log in again with a new token',
  TOKEN_EXPIRED: 'create a new token in the portal (or `trib token create`) and `trib login` with it',
  TOKEN_REVOKED: 'create a new token in the portal and `trib login` with it',
  TOKEN_SCOPE_INSUFFICIENT: 'this needs a token with a wider scope (write or admin)',
  TOKEN_OUTSIDE_COLLECTION: 'the token is confined to another collection',
  PERMISSION_DENIED: 'ask the owner of the collection for access',
  NAME_TAKEN: 'choose another name, or pass --force to replace the existing object',
  NOT_A_MEMBER: 'see your groups with `trib group list`',
  PURGE_NOT_YET: 'the delete has not reached every site yet; try again after the next replication cycle',
  REPLICA_UNAVAILABLE: 'the site holding the bytes is not answering; try again later',
  STORAGE_UNAVAILABLE: 'the storage the site keeps these bytes on is not answering; try again later',
  OBJECT_STAGING: 'the site is copying these bytes from its archive into its cache; try again shortly',
};

/** A stable description of any failure: its exit code, a message, a hint and the API code if any. */
export interface FailureReport {
  exitCode: ExitCode;
  code: string;
  message: string;
  hint?: string;
  status?: number;
}

export function describeError(err: unknown): FailureReport {
  if (err instanceof CliError) {
    return {
      exitCode: err.exitCode,
      code: err.code ?? exitName(err.exitCode),
      message: err.message,
      hint: err.hint,
    };
  }
  if (err instanceof ApiError) {
    return {
      exitCode: CODE_EXIT[err.code] ?? (err.status >= 500 ? ExitCode.Unreachable : ExitCode.Error),
      code: err.code,
      message: apiMessage(err),
      hint: CODE_HINT[err.code],
      status: err.status,
    };
  }
  if (err instanceof TransportError || isFetchFailure(err)) {
    const cause = rootCause(err);
    return {
      exitCode: ExitCode.Unreachable,
      code: 'UNREACHABLE',
      message: `the site did not answer (${cause})`,
      hint: 'check the site URL (`trib site`) and that the site is running',
    };
  }
  if (err instanceof ChecksumMismatchError) {
    return { exitCode: ExitCode.Integrity, code: 'CHECKSUM_MISMATCH', message: err.message };
  }
  if (err instanceof PathError) {
    return {
      exitCode: ExitCode.Usage,
      code: 'INVALID_PATH',
      message: `${JSON.stringify(err.input)}: ${err.message}`,
    };
  }
  if (err instanceof ConfigError) return { exitCode: ExitCode.Usage, code: 'CONFIG', message: err.message };
  if (isAbort(err)) return { exitCode: ExitCode.Interrupted, code: 'INTERRUPTED', message: 'interrupted' };
  const errno = (err as NodeJS.ErrnoException | undefined)?.code;
  if (typeof errno === 'string' && err instanceof Error) {
    const exitCode =
      errno === 'ENOENT'
        ? ExitCode.NotFound
        : errno === 'EACCES' || errno === 'EPERM'
          ? ExitCode.Auth
          : ExitCode.Error;
    return { exitCode, code: errno, message: localMessage(err) };
  }
  return {
    exitCode: ExitCode.Error,
    code: 'ERROR',
    message: err instanceof Error ? err.message : String(err),
  };
}

function apiMessage(err: ApiError): string {
  const details = Object.entries(err.details ?? {})
    .filter(([field]) => field !== 'received')
    .map(([field, messages]) => `${field}: ${messages.join('; ')}`);
  return details.length > 0 ? `${err.message} (${details.join(', ')})` : err.message;
}

function localMessage(err: NodeJS.ErrnoException): string {
  const what = err.path ? ` ${err.path}` : '';
  switch (err.code) {
    case 'ENOENT':
      return `no such local file or directory:${what}`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied:${what}`;
    case 'EISDIR':
      return `is a directory:${what} (pass -r to copy directories)`;
    case 'ENOTDIR':
      return `not a directory:${what}`;
    default:
      return err.message;
  }
}

function isFetchFailure(err: unknown): boolean {
  return err instanceof TypeError && err.message === 'fetch failed';
}

function rootCause(err: unknown): string {
  let current: unknown = err;
  for (let i = 0; i < 5 && current instanceof Error && current.cause; i++) current = current.cause;
  if (current instanceof Error) {
    const code = (current as NodeJS.ErrnoException).code;
    return code ? `${code}: ${current.message}` : current.message;
  }
  return String(current);
}

function isAbort(err: unknown): boolean {
  return err instanceof Error && err.name === 'AbortError';
}

function exitName(code: ExitCode): string {
  const entry = Object.entries(ExitCode).find(([, value]) => value === code);
  return (entry?.[0] ?? 'Error').replace(/[A-Z]/g, (c, i: number) => (i > 0 ? '_' : '') + c).toUpperCase();
}
