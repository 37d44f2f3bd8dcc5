import { createHash } from 'node:crypto';
import {
  ApiError,
  CHUNK_SHA256_HEADER,
  ErrorCode,
  type CreateUploadRequest,
  type EntryDto,
  type UploadSessionDto,
} from '@tributary/shared';
import type { ApiConnection } from './http';
import { withRetry, type RetryPolicy } from './retry';

/** The API's resumable upload sessions (`/api/v1/uploads`), one call per method. */
export class UploadSessionClient {
  constructor(private readonly api: ApiConnection) {}

  create(request: CreateUploadRequest, signal?: AbortSignal): Promise<UploadSessionDto> {
    return this.api.json<UploadSessionDto>({
      method: 'POST',
      url: '/api/v1/uploads',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(request),
      signal,
    });
  }

  get(id: string, signal?: AbortSignal): Promise<UploadSessionDto> {
    return this.api.json<UploadSessionDto>({ method: 'GET', url: `/api/v1/uploads/${id}`, signal });
  }

  /** Sends one chunk with its SHA-256, so the API refuses it if it arrives corrupted. */
  putChunk(
    id: string,
    offset: number,
    chunk: Uint8Array,
    signal?: AbortSignal,
    sha256 = createHash('sha256').update(chunk).digest('hex'),
  ): Promise<UploadSessionDto> {
    return this.api.json<UploadSessionDto>({
      method: 'PUT',
      url: `/api/v1/uploads/${id}?offset=${offset}`,
      headers: { 'content-type': 'application/octet-stream', [CHUNK_SHA256_HEADER]: sha256 },
      body: chunk,
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
    sha256?: string,
  ): Promise<void> {
    await withRetry(async () => {
      try {
        await this.putChunk(id, offset, chunk, undefined, sha256);
      } catch (err) {
        if (err instanceof ApiError && err.code === ErrorCode.UploadOffsetMismatch) {
          const session = await this.get(id);
          if (session.received >= offset + chunk.length) return;
        }
        throw err;
      }
    }, retry);
  }

  complete(id: string, sha256?: string, signal?: AbortSignal): Promise<EntryDto> {
    return this.api.json<EntryDto>({
      method: 'POST',
      url: `/api/v1/uploads/${id}/complete`,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(sha256 ? { sha256 } : {}),
      signal,
    });
  }

  async abort(id: string): Promise<void> {
    try {
      await this.api.send({ method: 'DELETE', url: `/api/v1/uploads/${id}` });
    } catch (err) {
      if (!(err instanceof ApiError && err.code === ErrorCode.NotFound)) throw err;
    }
  }
}

/** The offset an UPLOAD_OFFSET_MISMATCH or CHECKSUM_MISMATCH answer says the session holds. */
export function receivedFrom(err: unknown): number | undefined {
  if (!(err instanceof ApiError)) return undefined;
  const value = err.details?.received?.[0];
  return value !== undefined && /^\d+$/.test(value) ? Number(value) : undefined;
}
