import { ErrorCode, MODE_HEADER, MTIME_HEADER, parseMode, parseMtime, type Parsed } from '@tributary/shared';
import type { Request } from 'express';
import { DomainError } from '../common/domain-error';
import type { UploadOptions } from './upload-staging';

/**
 * The content type to store for `PUT /api/v1/data`'s raw body, from its Content-Type header.
 * `application/x-www-form-urlencoded` is what curl sends with `-d`/`--data-binary` unless told
 * otherwise: the bytes of a file are never a submitted form, so it is taken as no type given
 * (stored as `application/octet-stream`). Longer than the catalog keeps: no type either.
 */
function storedContentType(header: string | undefined): string | undefined {
  if (!header || header.length > 255) return undefined;
  const mediaType = header.split(';', 1)[0]!.trim().toLowerCase();
  return mediaType === 'application/x-www-form-urlencoded' ? undefined : header;
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

/** An attribute header's value, if sent; a bad one is 422 VALIDATION_FAILED naming the header. */
function attributeHeader<T>(
  req: Request,
  name: string,
  display: string,
  parse: (value: unknown) => Parsed<T>,
): T | undefined {
  const value = req.headers[name];
  if (value === undefined) return undefined;
  const parsed = parse(Array.isArray(value) ? value.join(',') : value);
  if (parsed.ok) return parsed.value;
  throw new DomainError(ErrorCode.ValidationFailed, `${display} ${parsed.message}`, {
    [name]: [parsed.message],
  });
}

/**
 * What the headers of `PUT /api/v1/data` say about the upload: its length and type,
 * `X-Checksum-Sha256`, `X-Tributary-Mtime` and `X-Tributary-Mode` (a bad one is 422).
 */
export function uploadOptions(req: Request, overwrite: boolean): UploadOptions {
  const lengthHeader = req.headers['content-length'];
  const expected = req.headers['x-checksum-sha256'];
  if (typeof expected === 'string' && !SHA256_HEX.test(expected.toLowerCase())) {
    throw new DomainError(ErrorCode.ValidationFailed, 'X-Checksum-Sha256 must be 64 hex digits', {
      'x-checksum-sha256': ['must be 64 hex digits'],
    });
  }
  const mtimeNs = attributeHeader(req, MTIME_HEADER, 'X-Tributary-Mtime', parseMtime);
  const mode = attributeHeader(req, MODE_HEADER, 'X-Tributary-Mode', parseMode);
  const contentType = req.headers['content-type'];
  return {
    overwrite,
    contentLength: lengthHeader !== undefined ? Number(lengthHeader) : undefined,
    contentType: storedContentType(contentType),
    expectedSha256: typeof expected === 'string' ? expected.toLowerCase() : undefined,
    mtimeNs,
    mode,
  };
}
