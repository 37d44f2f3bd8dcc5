import { createHash } from 'node:crypto';
import {
  ApiError,
  CHUNK_SHA256_HEADER,
  ErrorCode,
  PREFIX_SHA256_HEADER,
  type CreateUploadRequest,
  type EntryDto,
  type UploadSessionDto,
} from '@tributary/shared';
import type { ApiConnection } from './http';
import { withRetry, type RetryPolicy } from './retry';

/**
 * How a chunk is checksummed: the chunk's own SHA-256 (a string, sent as X-Chunk-Sha256), or the
 * SHA-256 of the session's bytes from offset 0 through the chunk (X-Prefix-Sha256: cheaper for the
 * site, which computes that hash anyway, and for a client that writes in order).
 */

/**
 * A file time (milliseconds since 1970) and permission bits given with a commit, so that they
 * arrive with the new version itself rather than as a second change after it.
 */
export interface FileAttributes {
  mtime?: number;
  mode?: number;
}

export type ChunkChecksum = string | { prefixSha256: string };

/**
 * Hears about the upload sessions a connection opens and ends (`ApiConnectionOptions.uploadSessions`),
 * so that a client can keep a record of those still open and remove them from the site after a
 * crash (the mount does: docs/mount.md). Its methods must not throw.
 */
export interface UploadSessionObserver {
  /** A session was opened; it is used once the promise settles (so it can be recorded first). */
  opened(session: UploadSessionDto): void | Promise<void>;
  /** The session ended: committed, abandoned, or the site no longer has it. */
  ended(id: string): void;
  /** Abandoning the session failed (the site did not answer, or was still busy with it): it may still be open there. */
  abandoned(id: string): void;
}

/** The answers after which a session is no longer open at the site. */
function sessionGone(err: unknown): boolean {
  return (
    err instanceof ApiError &&
    (err.code === ErrorCode.NotFound ||
      err.code === ErrorCode.UploadExpired ||
      // Completing ends the session when the bytes are wrong or the base moved on.
      err.code === ErrorCode.ChecksumMismatch ||
      err.code === ErrorCode.UploadBaseChanged)
  );
}

/** The API's resumable upload sessions (`/api/v1/uploads`), one call per method. */
export class UploadSessionClient {
  constructor(private readonly api: ApiConnection) {}

  private get observer(): UploadSessionObserver | undefined {
    return this.api.options.uploadSessions;
  }

  async create(request: CreateUploadRequest, signal?: AbortSignal): Promise<UploadSessionDto> {
    const session = await this.api.json<UploadSessionDto>({
      method: 'POST',
      url: '/api/v1/uploads',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
      signal,
    });
    await this.observer?.opened(session);
    return session;
  }

  get(id: string, signal?: AbortSignal): Promise<UploadSessionDto> {
    return this.api.json<UploadSessionDto>({ method: 'GET', url: `/api/v1/uploads/${id}`, signal });
  }

  /**
   * Sends one chunk with a checksum (by default its SHA-256), so the API refuses it if it arrives
   * corrupted. `inPlace`: sent without fetch's copy of the bytes (`ApiRequest.bodyInPlace`); the
   * caller leaves them unchanged until this settles.
   */
  putChunk(
    id: string,
    offset: number,
    chunk: Uint8Array,
    signal?: AbortSignal,
    checksum: ChunkChecksum = createHash('sha256').update(chunk).digest('hex'),
    inPlace = false,
  ): Promise<UploadSessionDto> {
    const header: Record<string, string> =
      typeof checksum === 'string'
        ? { [CHUNK_SHA256_HEADER]: checksum }
        : { [PREFIX_SHA256_HEADER]: checksum.prefixSha256 };
    return this.api.json<UploadSessionDto>({
      method: 'PUT',
      url: `/api/v1/uploads/${id}?offset=${offset}`,
      headers: { 'content-type': 'application/octet-stream', ...header },
      body: chunk,
      bodyInPlace: inPlace,
      signal,
    });
  }

  /**
   * `putChunk` with retries. A retry refused with UPLOAD_OFFSET_MISMATCH is a success when the session
   * already holds the chunk: an earlier attempt landed before its answer was lost.
   */
  async putChunkRetrying(
    id: string,
    offset: number,
    chunk: Uint8Array,
    retry: RetryPolicy,
    checksum?: ChunkChecksum,
    inPlace = false,
  ): Promise<void> {
    // Hashed once, not once per attempt.
    const sent = checksum ?? createHash('sha256').update(chunk).digest('hex');
    await withRetry(async () => {
      try {
        await this.putChunk(id, offset, chunk, undefined, sent, inPlace);
      } catch (err) {
        if (err instanceof ApiError && err.code === ErrorCode.UploadOffsetMismatch) {
          const session = await this.get(id);
          if (session.received >= offset + chunk.length) return;
        }
        throw err;
      }
    }, retry);
  }

  /**
   * Commits the session. The site composes and hashes the object before it answers (time that
   * grows with its size), so this waits as long as the site shows signs of life (`commit` timeout).
   */
  async complete(
    id: string,
    sha256?: string,
    signal?: AbortSignal,
    attributes: FileAttributes = {},
  ): Promise<EntryDto> {
    try {
      const entry = await this.api.json<EntryDto>({
        method: 'POST',
        url: `/api/v1/uploads/${id}/complete`,
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ ...(sha256 ? { sha256 } : {}), ...attributes }),
        signal,
        timeout: 'commit',
      });
      this.observer?.ended(id);
      return entry;
    } catch (err) {
      if (sessionGone(err)) this.observer?.ended(id);
      throw err;
    }
  }

  /** Abandons the session and its bytes; one the site no longer has (404, 410) is not an error. */
  async abort(id: string): Promise<void> {
    try {
      await this.api.send({ method: 'DELETE', url: `/api/v1/uploads/${id}` });
    } catch (err) {
      if (!sessionGone(err)) {
        this.observer?.abandoned(id);
        throw err;
      }
    }
    this.observer?.ended(id);
  }
}

/** The offset an UPLOAD_OFFSET_MISMATCH or CHECKSUM_MISMATCH answer says the session holds. */
export function receivedFrom(err: unknown): number | undefined {
  if (!(err instanceof ApiError)) return undefined;
  const value = err.details?.received?.[0];
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}
