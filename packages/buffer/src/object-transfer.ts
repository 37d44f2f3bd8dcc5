/**
 * One object between a local file and a site: resumable upload sessions in chunks and parallel ranged
 * downloads, each checked against SHA-256. Trees of files (many objects, small ones in batches) are
 * the agent's `cli/tree-transfer.ts`, which calls this for large files.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import {
  ApiError,
  ErrorCode,
  type EntryDetailDto,
  type EntryDto,
  type UploadSessionDto,
} from '@tributary/shared';
import { ApiConnection, dataUrl, TransportError } from './http';
import { ProgressMeter, type TransferProgress, type TransferRetry } from './progress';
import { DEFAULT_RETRY, abortReason, withRetry, type RetryPolicy } from './retry';
import { receivedFrom, UploadSessionClient } from './upload-session';
import { WaitList } from './wait-list';

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

/** Reads ranges of one object's bytes from wherever it lives (a site's API, a peer site). */
export interface RangeReader {
  /**
   * Reads the bytes from `start` into `into` (its whole length), calling `onProgress` with the
   * bytes filled so far as they land; resolves with the bytes filled. Throws a non-transient error
   * when the object is no longer the version being downloaded.
   */
  read(
    start: number,
    into: Buffer,
    onProgress: (filled: number) => void,
    signal: AbortSignal,
  ): Promise<number>;
}

/** Where downloaded ranges go. */
export interface RangeWriter {
  write(bytes: Buffer, position: number): Promise<void>;
}

export interface RangesOptions extends DownloadOptions {
  /** Bytes already in place from the start (a resumed download), already fed to `hash`. */
  offset?: number;
  /** The running SHA-256 of the bytes before `offset`. */
  hash?: Hash;
  /** Awaited after each range arrives, before it is written (a bandwidth budget, say). */
  onRange?: (bytes: number) => Promise<void>;
}

/**
 * Downloads bytes `[offset, size)` with `streams` ranged reads in parallel, retrying a range that
 * breaks off from its first missing byte. Ranges are written and hashed in order (a range waits for
 * the one before it), so the target's length is always a prefix of the object whose hash is known:
 * an interrupted download resumes from that length. Resolves with the hex SHA-256 of the whole.
 */
export async function downloadRanges(
  reader: RangeReader,
  writer: RangeWriter,
  size: number,
  options: RangesOptions = {},
): Promise<string> {
  const retry = options.retry ?? DEFAULT_RETRY;
  const chunkBytes = options.chunkBytes ?? 8 * MiB;
  const streams = Math.max(1, options.streams ?? 4);
  const signal = options.signal;
  const offset = options.offset ?? 0;
  // Stops the other streams when one fails (and follows the caller's signal).
  const stop = new AbortController();
  const follow = (): void => stop.abort(signal?.reason);
  signal?.addEventListener('abort', follow, { once: true });
  if (signal?.aborted) follow();
  const hash = options.hash ?? createHash('sha256');
  /** Bytes hashed (and written) so far, in order from the start. */
  let hashed = offset;
  const hashTurns = new WaitList();
  try {
    const meter = new ProgressMeter('transfer', size, options.onProgress);
    if (offset > 0) meter.reset(offset);
    let next = offset;
    const worker = async (): Promise<void> => {
      const buf = Buffer.allocUnsafe(Math.min(chunkBytes, size - offset));
      while (next < size && !stop.signal.aborted) {
        const start = next;
        const end = Math.min(size, start + chunkBytes);
        next = end;
        const range = buf.subarray(0, end - start);
        let filled = 0;
        await withRetry(
          async () => {
            const from = filled;
            await reader.read(
              start + from,
              range.subarray(from),
              (n) => {
                meter.add(from + n - filled);
                filled = from + n;
              },
              stop.signal,
            );
            if (filled !== range.length)
              throw new TransportError(`short range: ${filled} of ${range.length} bytes`);
          },
          retry,
          {
            signal: stop.signal,
            onRetry: (error, n) => options.onRetry?.({ reason: 'transient', attempt: n, error }),
          },
        );
        await options.onRange?.(range.length);
        // Ranges are handed out in order, so the one before this is always being fetched or done.
        while (hashed !== start) {
          if (stop.signal.aborted) throw abortReason(stop.signal);
          await hashTurns.next();
        }
        await writer.write(range, start);
        hash.update(range);
        hashed = end;
        hashTurns.wakeAll();
      }
    };
    const workers = Array.from(
      { length: Math.min(streams, Math.ceil((size - offset) / chunkBytes) || 1) },
      () =>
        worker().catch((err: unknown) => {
          if (!stop.signal.aborted) stop.abort(err);
          hashTurns.wakeAll();
          throw err;
        }),
    );
    // Every stream has stopped before the caller closes the target.
    const outcomes = await Promise.allSettled(workers);
    if (signal?.aborted) throw abortReason(signal);
    const failed = outcomes.find((o): o is PromiseRejectedResult => o.status === 'rejected');
    if (failed) throw stop.signal.reason ?? failed.reason;
  } finally {
    signal?.removeEventListener('abort', follow);
  }
  return hash.digest('hex');
}

/**
 * Downloads an object to a local file with `streams` ranged requests in parallel (each pinned to
 * the object's version with If-Range). Each range is read straight into a buffer of its stream
 * (`ApiConnection.receiveInto`), written with one positioned write, and added to a running
 * SHA-256 in order, so the file is not read back to be verified. A range that breaks off is
 * retried from its first missing byte; a whole object whose SHA-256 differs from the catalog's is
 * downloaded again, then reported.
 */
export async function downloadFile(
  api: ApiConnection,
  remotePath: string,
  localPath: string,
  options: DownloadOptions = {},
): Promise<DownloadResult> {
  const retry = options.retry ?? DEFAULT_RETRY;
  const signal = options.signal;
  const head = await withRetry(() => api.send({ method: 'HEAD', url: dataUrl(remotePath), signal }), retry, {
    signal,
    onRetry: (error, attempt) => options.onRetry?.({ reason: 'transient', attempt, error }),
  });
  const size = Number(head.headers.get('content-length') ?? 0);
  const etag = head.headers.get('etag') ?? '';
  const expected = /^"([0-9a-f]{64})"$/.exec(etag)?.[1];
  if (!expected) throw new Error(`the API sent no SHA-256 ETag for ${remotePath}`);
  const changed = (): ApiError =>
    new ApiError(409, ErrorCode.ChecksumMismatch, `${remotePath} changed during the download`);
  const reader: RangeReader = {
    read: async (start, into, onProgress, stopSignal) => {
      let filled = 0;
      await api.receiveInto(
        {
          method: 'GET',
          url: dataUrl(remotePath),
          headers: { range: `bytes=${start}-${start + into.length - 1}`, 'if-range': etag },
          signal: stopSignal,
        },
        into,
        {
          // Anything but the range (200: If-Range no longer matches) means a new version.
          skip: (response) => {
            if (response.status !== 206) throw changed();
            return 0;
          },
          onProgress: (n) => {
            filled = n;
            onProgress(n);
          },
        },
      );
      return filled;
    },
  };

  for (let attempt = 0; ; attempt++) {
    const handle = await fs.open(localPath, 'w');
    let actual: string;
    try {
      await handle.truncate(size);
      actual = await downloadRanges(
        reader,
        { write: async (bytes, position) => void (await handle.write(bytes, 0, bytes.length, position)) },
        size,
        options,
      );
    } finally {
      await handle.close();
    }
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
