import { createHash } from 'node:crypto';
import {
  ApiRemoteFile,
  dataUrl,
  withRetry,
  type ApiConnection,
  type FileAttributes,
  type RemoteFile,
  type RetryPolicy,
} from '@tributary/buffer';
import { MODE_HEADER, MTIME_HEADER, type EntryDto } from '@tributary/shared';

/** A first part at most this large is held back: if nothing follows, the file is one PUT. */
export const SMALL_FILE_BYTES = 4 * 1024 * 1024;

/**
 * The remote side of a file written through the mount. Large files go through an upload session
 * (`ApiRemoteFile`: chunks in order, each with the SHA-256 of the bytes through its end, sent
 * without a copy, committed on close). A small file would cost three requests that way (open the
 * session, one chunk, complete), so the first part is held back: when `close` comes and nothing
 * else was written, the file is sent as one `PUT /api/v1/data` with its SHA-256; otherwise the held
 * part goes into the session first.
 */
export class MountWriteFile implements RemoteFile {
  readonly size = 0;
  private held: Uint8Array | undefined;
  private sessionUsed = false;
  /** The committed entry, when the commit answered with it. */
  entry: EntryDto | undefined;
  /** The file time and permission bits the commit gives the new version (set before close). */
  attributes: FileAttributes = {};
  private readonly upload: ApiRemoteFile;

  constructor(
    private readonly api: ApiConnection,
    readonly path: string,
    private readonly retry: RetryPolicy,
  ) {
    this.upload = ApiRemoteFile.openForWrite(api, path, { overwrite: true, retry });
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
    // Both handed over before anything is awaited: the upload hashes its parts in the order given.
    const held = this.takeHeld();
    await Promise.all([held && this.upload.write(0, held), this.upload.write(offset, data)]);
  }

  /** Acknowledged chunks are already held by the site (nothing more to wait for). */
  async sync(): Promise<void> {
    const held = this.takeHeld();
    if (held) await this.upload.write(0, held);
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
            headers: {
              'content-type': 'application/octet-stream',
              'x-checksum-sha256': sha256,
              ...(this.attributes.mtime !== undefined
                ? { [MTIME_HEADER]: String(this.attributes.mtime) }
                : {}),
              ...(this.attributes.mode !== undefined
                ? { [MODE_HEADER]: this.attributes.mode.toString(8) }
                : {}),
            },
            body,
          }),
        this.retry,
      );
      return;
    }
    await this.sync();
    this.upload.attributes = this.attributes;
    await this.upload.close();
    this.entry = this.upload.entry;
  }

  async abort(): Promise<void> {
    this.held = undefined;
    await this.upload.abort();
  }

  /** From now on everything goes through the session; returns the held first part, if any. */
  private takeHeld(): Uint8Array | undefined {
    this.sessionUsed = true;
    const held = this.held;
    this.held = undefined;
    return held;
  }
}
