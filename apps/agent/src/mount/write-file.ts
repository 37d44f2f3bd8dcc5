import { createHash } from 'node:crypto';
import {
  UploadSessionClient,
  dataUrl,
  withRetry,
  type ApiConnection,
  type RemoteFile,
  type RetryPolicy,
} from '@tributary/buffer';
import type { EntryDto } from '@tributary/shared';

/** A first part at most this large is held back: if nothing follows, the file is one PUT. */
export const SMALL_FILE_BYTES = 4 * 1024 * 1024;

/**
 * The remote side of a file written through the mount. Large files go through an upload session
 * (as ApiRemoteFile does: chunks in order, each with its SHA-256, committed on close). A small file would cost three
 * requests that way (open the session, one chunk, complete), so the first part is held back: when
 * `close` comes and nothing else was written, the file is sent as one `PUT /api/v1/data` with its
 * SHA-256; otherwise the held part goes into the session first.
 */
export class MountWriteFile implements RemoteFile {
  readonly size = 0;
  private held: Uint8Array | undefined;
  private sessionUsed = false;
  /** The committed entry, when the commit answered with it (the one-request path). */
  entry: EntryDto | undefined;
  private readonly sessions: UploadSessionClient;
  private sessionId: Promise<string> | undefined;

  constructor(
    private readonly api: ApiConnection,
    readonly path: string,
    private readonly retry: RetryPolicy,
  ) {
    this.sessions = new UploadSessionClient(api);
  }

  read(): Promise<Uint8Array> {
    return Promise.reject(new Error(`${this.path} is open for writing`));
  }

  async write(offset: number, data: Uint8Array): Promise<void> {
    if (!this.sessionUsed && this.held === undefined && offset === 0 && data.length <= SMALL_FILE_BYTES) {
      // A copy: the caller may reuse `data` once this returns (RemoteFile.write).
      this.held = new Uint8Array(data);
      return;
    }
    await this.sendHeld();
    await this.sendChunk(offset, data);
  }

  /** Acknowledged chunks are already held by the site (as ApiRemoteFile: nothing more to wait for). */
  async sync(): Promise<void> {
    await this.sendHeld();
  }

  async close(): Promise<void> {
    if (!this.sessionUsed) {
      const body = this.held ?? new Uint8Array(0);
      this.held = undefined;
      const sha256 = createHash('sha256').update(body).digest('hex');
      this.entry = await withRetry(
        () =>
          this.api.json<EntryDto>({
            method: 'PUT',
            url: `${dataUrl(this.path)}&overwrite=true`,
            headers: { 'content-type': 'application/octet-stream', 'x-checksum-sha256': sha256 },
            body,
          }),
        this.retry,
      );
      return;
    }
    await this.sendHeld();
    const id = await this.session();
    this.entry = await this.sessions.complete(id);
  }

  async abort(): Promise<void> {
    this.held = undefined;
    const id = await this.sessionId?.catch(() => undefined);
    if (id !== undefined) await this.sessions.abort(id);
  }

  private async sendHeld(): Promise<void> {
    this.sessionUsed = true;
    const held = this.held;
    if (held === undefined) return;
    this.held = undefined;
    await this.sendChunk(0, held);
  }

  private session(): Promise<string> {
    // Parts may be sent concurrently: the first one opens the session, the others wait for it.
    this.sessionId ??= withRetry(
      () => this.sessions.create({ path: this.path, overwrite: true }),
      this.retry,
    ).then((s) => s.id);
    return this.sessionId;
  }

  /**
   * One chunk with its SHA-256, hashed by WebCrypto on libuv's thread pool: hashing a 32 MiB part
   * on the main thread (node:crypto) would hold up every FUSE request behind it for tens of ms.
   */
  private async sendChunk(offset: number, data: Uint8Array): Promise<void> {
    const [id, digest] = await Promise.all([
      this.session(),
      crypto.subtle.digest('SHA-256', data as Uint8Array<ArrayBuffer>),
    ]);
    const sha256 = Buffer.from(digest).toString('hex');
    await this.sessions.putChunkRetrying(id, offset, data, this.retry, sha256);
  }
}
