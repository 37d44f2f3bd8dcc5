import { createHash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import {
  ApiError,
  ErrorCode,
  type EntryDetailDto,
  type EntryDto,
  type UploadSessionDto,
} from '@tributary/shared';
import { ApiConnection, dataUrl } from './http';
import { ProgressMeter, type TransferProgress, type TransferRetry } from './progress';
import { DEFAULT_RETRY, abortReason, withRetry, type RetryPolicy } from './retry';
import { receivedFrom, UploadSessionClient } from './upload-session';

const MiB = 1024 * 1024;

export interface TransferOptions {
  /** Bytes per ranged request or per upload chunk. Default 8 MiB. */
  chunkBytes?: number;
  retry?: RetryPolicy;
  /** How often a chunk (or, for downloads, the whole object) whose checksum differs is sent again. */
  checksumRetries?: number;
  signal?: AbortSignal;
  onProgress?: (progress: TransferProgress) => void;
  onRetry?: (retry: TransferRetry) => void;
}

export interface DownloadOptions extends TransferOptions {
  /** Parallel ranged requests. Default 4. */
  streams?: number;
}

export interface UploadOptions extends TransferOptions {
  overwrite?: boolean;
  contentType?: string;
  /** Hex SHA-256 of the file when already known (saves reading it once more). */
  sha256?: string;
  /** Resume this session (from the offset the API acknowledged) instead of starting one. */
  sessionId?: string;
  /** Hears the session id as soon as it exists, to keep for a resume after an interruption. */
  onSession?: (session: UploadSessionDto) => void;
}

export interface DownloadResult {
  size: number;
  sha256: string;
}

/** The bytes did not match their checksum, after the configured retries. */
export class ChecksumMismatchError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChecksumMismatchError';
  }
}

/** Hex SHA-256 of a local file, read as a stream. */
export async function sha256OfFile(
  file: string,
  onBytes?: (bytes: number) => void,
  signal?: AbortSignal,
): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(file, {
    highWaterMark: 1 * MiB,
    signal,
  }) as AsyncIterable<Buffer>) {
    hash.update(chunk);
    onBytes?.(chunk.length);
  }
  return hash.digest('hex');
}

/**
 * Downloads an object to a local file with `streams` ranged requests in parallel (each pinned to
 * the object's version with If-Range), retrying transient failures per range, then verifies the
 * whole file against the catalog's SHA-256; a mismatch downloads again, then is reported.
 */
export async function downloadFile(
  api: ApiConnection,
  remotePath: string,
  localPath: string,
  options: DownloadOptions = {},
): Promise<DownloadResult> {
  const retry = options.retry ?? DEFAULT_RETRY;
  const chunkBytes = options.chunkBytes ?? 8 * MiB;
  const streams = Math.max(1, options.streams ?? 4);
  const signal = options.signal;
  const head = await withRetry(() => api.send({ method: 'HEAD', url: dataUrl(remotePath), signal }), retry, {
    signal,
    onRetry: (error, attempt) => options.onRetry?.({ reason: 'transient', attempt, error }),
  });
  const size = Number(head.headers.get('content-length') ?? 0);
  const etag = head.headers.get('etag') ?? '';
  const expected = /^"([0-9a-f]{64})"$/.exec(etag)?.[1];
  if (!expected) throw new Error(`the API sent no SHA-256 ETag for ${remotePath}`);

  for (let attempt = 0; ; attempt++) {
    const handle = await fs.open(localPath, 'w');
    try {
      await handle.truncate(size);
      const meter = new ProgressMeter('transfer', size, options.onProgress);
      let next = 0;
      const worker = async (): Promise<void> => {
        while (next < size) {
          const start = next;
          const end = Math.min(size, start + chunkBytes);
          next = end;
          await withRetry(
            async () => {
              let written = 0;
              try {
                const res = await api.send({
                  method: 'GET',
                  url: dataUrl(remotePath),
                  headers: { range: `bytes=${start}-${end - 1}`, 'if-range': etag },
                  signal,
                });
                if (res.status !== 206 || !res.body) {
                  await res.body?.cancel();
                  throw new ApiError(
                    409,
                    ErrorCode.ChecksumMismatch,
                    `${remotePath} changed during the download`,
                  );
                }
                for await (const piece of res.body as unknown as AsyncIterable<Uint8Array>) {
                  await handle.write(piece, 0, piece.length, start + written);
                  written += piece.length;
                  meter.add(piece.length);
                }
              } catch (err) {
                meter.add(-written);
                throw err;
              }
              if (written !== end - start) throw new Error(`short range: ${written} of ${end - start} bytes`);
            },
            retry,
            { signal, onRetry: (error, n) => options.onRetry?.({ reason: 'transient', attempt: n, error }) },
          );
        }
      };
      await Promise.all(Array.from({ length: Math.min(streams, Math.ceil(size / chunkBytes) || 1) }, worker));
    } finally {
      await handle.close();
    }
    const verify = new ProgressMeter('verify', size, options.onProgress);
    const actual = await sha256OfFile(localPath, (n) => verify.add(n), signal);
    if (actual === expected) return { size, sha256: actual };
    if (attempt >= (options.checksumRetries ?? 1)) {
      throw new ChecksumMismatchError(
        `${remotePath}: the downloaded bytes hash to sha256:${actual}, the catalog says sha256:${expected}`,
      );
    }
    options.onRetry?.({
      reason: 'checksum',
      attempt: attempt + 1,
      error: new ChecksumMismatchError('whole-object checksum differs'),
    });
  }
}

/**
 * Uploads a local file through a resumable upload session: chunks in order, each with its SHA-256
 * (a corrupted chunk is refused by the API and sent again), transient failures retried with
 * backoff after asking the API how far it got; the API verifies the whole object's SHA-256 on
 * completion and the engine checks the catalog's checksum against the local one. Pass
 * `sessionId` to resume an interrupted upload from the last acknowledged byte.
 */
export async function uploadFile(
  api: ApiConnection,
  localPath: string,
  remotePath: string,
  options: UploadOptions = {},
): Promise<EntryDto> {
  const retry = options.retry ?? DEFAULT_RETRY;
  const chunkBytes = options.chunkBytes ?? 8 * MiB;
  const checksumRetries = options.checksumRetries ?? 3;
  const signal = options.signal;
  const sessions = new UploadSessionClient(api);
  const onTransient = (error: unknown, attempt: number) =>
    options.onRetry?.({ reason: 'transient', attempt, error });
  const size = (await fs.stat(localPath)).size;

  let session: UploadSessionDto | undefined;
  if (options.sessionId) {
    session = await withRetry(() => sessions.get(options.sessionId!, signal), retry, {
      signal,
      onRetry: onTransient,
    });
    if (session.path !== remotePath || (session.size !== null && session.size !== size)) {
      throw new Error(
        `upload session ${session.id} is for ${session.path} (${session.size} bytes), not this file`,
      );
    }
  }
  let sha256 = options.sha256 ?? session?.sha256 ?? undefined;
  if (!sha256) {
    const hashing = new ProgressMeter('hash', size, options.onProgress);
    sha256 = await sha256OfFile(localPath, (n) => hashing.add(n), signal);
  }
  const expectedSha256 = sha256;
  if (!session) {
    session = await withRetry(
      () =>
        sessions.create(
          {
            path: remotePath,
            size,
            sha256: expectedSha256,
            overwrite: options.overwrite ?? false,
            contentType: options.contentType,
          },
          signal,
        ),
      retry,
      { signal, onRetry: onTransient },
    );
  }
  options.onSession?.(session);
  const id = session.id;

  const handle = await fs.open(localPath, 'r');
  let entry: EntryDto;
  try {
    const meter = new ProgressMeter('transfer', size, options.onProgress);
    let offset = session.received;
    meter.reset(offset);
    const buffer = Buffer.allocUnsafe(Math.min(chunkBytes, Math.max(size, 1)));
    let checksumFailures = 0;
    while (offset < size) {
      if (signal?.aborted) throw abortReason(signal);
      const length = Math.min(chunkBytes, size - offset);
      const { bytesRead } = await handle.read(buffer, 0, length, offset);
      if (bytesRead !== length) throw new Error(`${localPath} changed while it was being uploaded`);
      const chunk = buffer.subarray(0, length);
      const chunkSha256 = createHash('sha256').update(chunk).digest('hex');
      try {
        const updated = await withRetry(
          () => sessions.putChunk(id, offset, chunk, signal, chunkSha256),
          retry,
          {
            signal,
            onRetry: onTransient,
          },
        );
        offset = updated.received;
        meter.add(length);
      } catch (err) {
        if (signal?.aborted) throw abortReason(signal);
        if (err instanceof ApiError && err.code === ErrorCode.ChecksumMismatch) {
          // The chunk arrived damaged; the session stays where it was.
          if (++checksumFailures > checksumRetries) {
            throw new ChecksumMismatchError(
              `the chunk at offset ${offset} arrived damaged ${checksumFailures} times: ${err.message}`,
            );
          }
          options.onRetry?.({ reason: 'checksum', attempt: checksumFailures, error: err });
          continue;
        }
        const received = receivedFrom(err);
        if (
          err instanceof ApiError &&
          err.code === ErrorCode.UploadOffsetMismatch &&
          received !== undefined
        ) {
          // An earlier attempt landed after all (its answer was lost), or another writer moved on.
          options.onRetry?.({ reason: 'offset', attempt: 1, error: err });
          offset = received;
          meter.reset(offset);
          continue;
        }
        throw err;
      }
    }
  } finally {
    await handle.close();
  }

  try {
    entry = await withRetry(() => sessions.complete(id, undefined, signal), retry, {
      signal,
      onRetry: onTransient,
    });
  } catch (err) {
    // A completion whose answer was lost has ended the session: the catalog tells whether it landed.
    if (!(err instanceof ApiError && err.code === ErrorCode.NotFound)) throw err;
    const stat = await api.json<EntryDetailDto>({
      method: 'GET',
      url: `/api/v1/namespace/stat?path=${encodeURIComponent(remotePath)}`,
      signal,
    });
    if (stat.checksum !== `sha256:${expectedSha256}`) throw err;
    entry = stat;
  }
  if (entry.checksum !== `sha256:${expectedSha256}`) {
    throw new ChecksumMismatchError(
      `${remotePath}: the catalog records ${entry.checksum}, the local file is sha256:${expectedSha256}`,
    );
  }
  return entry;
}
