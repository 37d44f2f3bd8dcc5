import { ErrorCode } from '@tributary/shared';
import { DomainError } from '../common/domain-error';

/**
 * A WebDAV refusal: its status, a stable code (Tributary's error codes where one fits, else a
 * `DAV`-specific one), a message saying what to do, and RFC 4918's precondition element if any.
 * Answered as `D:error` XML (dav-xml.ts, errorXml).
 */
export class DavError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly condition?: string,
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.name = 'DavError';
  }
}

/** Codes of WebDAV's own refusals (the API's codes are used where they fit). */
export const DavCode = {
  XmlInvalid: 'XML_INVALID',
  DepthInvalid: 'DEPTH_INVALID',
  DepthInfinity: 'PROPFIND_DEPTH_INFINITY',
  DestinationInvalid: 'DESTINATION_INVALID',
  DestinationExists: 'DESTINATION_EXISTS',
  ParentMissing: 'PARENT_MISSING',
  Locked: 'LOCKED',
  LockConflict: 'LOCK_CONFLICT',
  LockTokenInvalid: 'LOCK_TOKEN_INVALID',
  PreconditionFailed: 'PRECONDITION_FAILED',
  MethodNotAllowed: 'METHOD_NOT_ALLOWED',
  UnsupportedBody: 'UNSUPPORTED_BODY',
  PropertyProtected: 'PROPERTY_PROTECTED',
  PropertyTooLarge: 'PROPERTY_TOO_LARGE',
  SameSourceAndDestination: 'SAME_SOURCE_AND_DESTINATION',
} as const;

/**
 * A service's DomainError as a WebDAV answer: the status that goes with its code, except where
 * RFC 4918 names another (a missing parent is 409 Conflict; an invalid name 400).
 */
export function fromDomainError(err: DomainError): DavError {
  const status =
    err.code === ErrorCode.InvalidPath || err.code === ErrorCode.ValidationFailed
      ? 400
      : err.code === ErrorCode.RootImmutable || err.code === ErrorCode.MoveIntoItself
        ? 403
        : err.status;
  return new DavError(status, err.code, err.message, undefined, err.headers);
}
