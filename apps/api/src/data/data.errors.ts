import { ErrorCode } from '@tributary/shared';
import { DomainError } from '../common/domain-error';
import type { StagingError } from '../storage/storage-driver';

export function baseChanged(path: string, version: number): DomainError {
  return new DomainError(
    ErrorCode.UploadBaseChanged,
    `${path} changed meanwhile (it is at version ${version}); read it again and redo the changes`,
    { version: [String(version)] },
  );
}

/** A data route asked about a symbolic link: it has no bytes, and the site never follows it. */
export function isASymlink(path: string, target: string): DomainError {
  return new DomainError(
    ErrorCode.IsASymlink,
    `${path} is a symbolic link (to ${JSON.stringify(target)}): it has no bytes to read or replace, and the site ` +
      'does not follow links; read or write its target, or remove the link first',
  );
}

export function checksumMismatch(actual: string, expected: string): DomainError {
  return new DomainError(
    ErrorCode.ChecksumMismatch,
    `the bytes received hash to sha256:${actual}, not the sha256:${expected} you sent; retry the upload`,
  );
}

/** The bytes of `path` are held at a site this one cannot reach through a peer link. */
export function noPeerLinkToHolder(path: string, holder: string): DomainError {
  return new DomainError(
    ErrorCode.ReplicaUnavailable,
    `the bytes of ${path} are held at ${holder}, which this site has no peer link to; update them there`,
  );
}

/** Why staging refused an upload's bytes, as the caller's error. */
export function stagingRefusal(err: StagingError): DomainError {
  return new DomainError(
    err.reason === 'too-large' ? ErrorCode.PayloadTooLarge : ErrorCode.UploadIncomplete,
    err.message,
  );
}
