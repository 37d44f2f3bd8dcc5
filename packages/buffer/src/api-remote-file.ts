import { createHash, type Hash } from 'node:crypto';
import { ApiError, ErrorCode, type EntryDto } from '@tributary/shared';
import { ApiConnection, dataUrl } from './http';
import type { RemoteFile } from './remote-file';
import { DEFAULT_RETRY, withRetry, type RetryPolicy } from './retry';
import { UploadSessionClient, type ChunkChecksum, type FileAttributes } from './upload-session';

export interface ApiRemoteFileOptions {
  retry?: RetryPolicy;
  /** For writing: replace an existing object (a new version). */
  overwrite?: boolean;
  contentType?: string;
}

/**
 * An object in the API as a RemoteFile. Reading uses ranged GETs. Writing creates the object
 * through an upload session: bytes must arrive in order from offset 0 (which is what the buffer's
 * write-behind sends), each chunk checksummed; `close` commits the session. A file is opened
 * either for reading or for writing; rewriting parts of an existing object is not offered by the
 * API yet.
 */
export class ApiRemoteFile implements RemoteFile {
  private readonly sessions: UploadSessionClient;
  private sessionId: string | undefined;
  private sessionReady: Promise<string> | undefined;
  private readonly retry: RetryPolicy;
  /**
   * SHA-256 of the bytes written so far, in order from offset 0: each chunk is sent with the hash
   * through its end (X-Prefix-Sha256), which the site checks against the whole-object hash it keeps
   * anyway, so neither side hashes the chunk on its own as well.
   */
  private written: Hash = createHash('sha256');
  private writtenBytes = 0;
  /** The running hash's queue: each part is hashed after the one before it. */
  private hashing: Promise<void> = Promise.resolve();
  /** The object as committed by the last `close` of a file written. */
  entry: EntryDto | undefined;
  /** For writing: the file time and permission bits the commit gives the new version. */
  attributes: FileAttributes = {};

  private constructor(
    private readonly api: ApiConnection,
    readonly path: string,
    readonly mode: 'read' | 'write',
    readonly size: number | undefined,
    private readonly options: ApiRemoteFileOptions,
  ) {
    this.sessions = new UploadSessionClient(api);
    this.retry = options.retry ?? DEFAULT_RETRY;
  }

  /** Opens an existing object for reading (one HEAD request learns its size). */
  static async openForRead(
    api: ApiConnection,
    path: string,
    options: ApiRemoteFileOptions = {},
  ): Promise<ApiRemoteFile> {
    const res = await withRetry(
      () => api.send({ method: 'HEAD', url: dataUrl(path) }),
      options.retry ?? DEFAULT_RETRY,
    );
    return ApiRemoteFile.forRead(api, path, Number(res.headers.get('content-length') ?? 0), options);
  }

  /** An existing object for reading whose size the caller already knows (from a listing): no request. */
  static forRead(
    api: ApiConnection,
    path: string,
    size: number,
    options: ApiRemoteFileOptions = {},
  ): ApiRemoteFile {
    return new ApiRemoteFile(api, path, 'read', size, options);
  }

  /** Opens a new object (or, with `overwrite`, a new version) for sequential writing. */
  static openForWrite(api: ApiConnection, path: string, options: ApiRemoteFileOptions = {}): ApiRemoteFile {
    return new ApiRemoteFile(api, path, 'write', 0, options);
  }

  async read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    if (this.mode !== 'read')
      throw new Error(`${this.path} is open for writing; reading it back needs close first`);
    const wanted = this.size === undefined ? length : Math.max(0, Math.min(length, this.size - offset));
    if (wanted === 0) return new Uint8Array(0);
    const out = Buffer.allocUnsafe(wanted);
    const n = await this.readInto(offset, out, () => undefined, signal);
    return out.subarray(0, n);
  }

  /**
   * Reads a range straight into `target` (over plain HTTP the kernel writes the body there; see
   * `ApiConnection.receiveInto`). A transfer that breaks off is retried (with backoff) from the
   * first byte not yet in place, so what was reported stays valid.
   */
  async readInto(
    offset: number,
    target: Uint8Array,
    onProgress: (filled: number) => void,
    signal?: AbortSignal,
  ): Promise<number> {
    if (this.mode !== 'read')
      throw new Error(`${this.path} is open for writing; reading it back needs close first`);
    const wanted = this.size === undefined ? target.length : Math.min(target.length, this.size - offset);
    let filled = 0;
    if (wanted <= 0) return 0;
    await withRetry(
      async () => {
        const from = offset + filled;
        const before = filled;
        const { filled: got } = await this.api.receiveInto(
          {
            method: 'GET',
            url: dataUrl(this.path),
            headers: { range: `bytes=${from}-${offset + wanted - 1}` },
            signal,
          },
          target.subarray(before, wanted),
          {
            // 200 means the server sent the whole object (a range it would not serve as such).
            skip: (response) => (response.status === 200 ? from : 0),
            onProgress: (n) => {
              filled = before + n;
              onProgress(filled);
            },
          },
        );
        filled = before + got;
      },
      this.retry,
      { signal },
    ).catch((err: unknown) => {
      if (err instanceof ApiError && err.code === ErrorCode.RangeNotSatisfiable) return;
      throw err;
    });
    return filled;
  }

  async write(offset: number, data: Uint8Array): Promise<void> {
    if (this.mode !== 'write') throw new Error(`${this.path} is open for reading`);
    // Hashing is queued before the first await, so parts sent concurrently are hashed in the order
    // written (and the session is opened meanwhile).
    let checksum: Promise<ChunkChecksum> | undefined;
    if (offset === this.writtenBytes) {
      this.writtenBytes += data.length;
      const hash = this.written;
      const digest = this.hashing
        .then(() => updateInSlices(hash, data))
        .then(() => hash.copy().digest('hex'));
      this.hashing = digest.then(
        () => undefined,
        () => undefined,
      );
      checksum = digest.then((prefixSha256) => ({ prefixSha256 }));
    }
    // Parts may be sent concurrently: the first one opens the session, the others wait for it.
    this.sessionReady ??= withRetry(
      () =>
        this.sessions.create({
          path: this.path,
          overwrite: this.options.overwrite ?? false,
          contentType: this.options.contentType,
        }),
      this.retry,
    ).then((session) => (this.sessionId = session.id));
    const [id, sums] = await Promise.all([this.sessionReady, checksum]);
    // Out of order (not what the buffer sends): no prefix checksum. Sent without a copy: the
    // caller leaves `data` unchanged until this settles (RemoteFile.write).
    await this.sessions.putChunkRetrying(id, offset, data, this.retry, sums, true);
  }

  /** Acknowledged chunks are already held by the site; nothing more to wait for. */
  async sync(): Promise<void> {}

  async close(): Promise<void> {
    if (this.mode !== 'write') return;
    if (this.sessionReady) await this.sessionReady;
    if (this.sessionId === undefined) {
      // Nothing was written: the file is created empty.
      const session = await withRetry(
        () => this.sessions.create({ path: this.path, size: 0, overwrite: this.options.overwrite ?? false }),
        this.retry,
      );
      this.sessionId = session.id;
    }
    const id = this.sessionId;
    this.sessionId = undefined;
    this.sessionReady = undefined;
    this.restartHash();
    try {
      this.entry = await this.sessions.complete(id, undefined, undefined, this.attributes);
    } catch (err) {
      // Nothing completes it later: its bytes go now (a session the site already ended is no
      // error). During an outage this fails at once, and the connection's observer keeps the
      // session to be removed once the site answers again.
      await this.sessions.abort(id).catch(() => undefined);
      throw err;
    }
  }

  async abort(): Promise<void> {
    await this.sessionReady?.catch(() => undefined);
    this.sessionReady = undefined;
    const id = this.sessionId;
    this.sessionId = undefined;
    this.restartHash();
    if (id !== undefined) await this.sessions.abort(id);
  }

  /** A next write starts a new session from offset 0. */
  private restartHash(): void {
    this.written = createHash('sha256');
    this.writtenBytes = 0;
  }
}

/** Hashed a slice at a time, with a turn of the event loop between slices. */
const HASH_SLICE_BYTES = 1024 * 1024;

/**
 * Adds `data` to `hash` in slices, letting other work run between them: a 32 MiB part hashed in
 * one call held up everything else on the thread (the mount's FUSE requests) for 40 ms or more.
 */
async function updateInSlices(hash: Hash, data: Uint8Array): Promise<void> {
  for (let at = 0; at < data.length; at += HASH_SLICE_BYTES) {
    if (at > 0) await new Promise<void>((resolve) => setImmediate(resolve));
    hash.update(data.subarray(at, at + HASH_SLICE_BYTES));
  }
}
