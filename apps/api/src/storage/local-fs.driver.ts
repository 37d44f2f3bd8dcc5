import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { receiveFile, sendFile } from './file-io';
import { StagedFile, StagingError, StorageDriver } from './storage-driver';

/**
 * The default driver: a directory on the local file system. Objects live under `objects/`, sharded
 * by the key's last characters; uploads land in `.staging/` first and are renamed into place, so a
 * failed upload never leaves a partial object behind.
 */
export class LocalFsDriver implements StorageDriver {
  private readonly root: string;
  private readonly staging: string;
  /** Shard directories known to exist, so a commit is one rename. */
  private readonly shards = new Set<string>();

  constructor(root: string) {
    this.root = path.resolve(root);
    this.staging = path.join(this.root, '.staging');
  }

  async init(): Promise<void> {
    await fs.mkdir(this.staging, { recursive: true });
    // Leftovers of a crash mid-upload belong to no object.
    for (const name of await fs.readdir(this.staging))
      await fs.rm(path.join(this.staging, name), { force: true });
  }

  /** Absolute path of a key, refusing anything that would leave the root. */
  resolve(key: string): string {
    if (!/^[A-Za-z0-9._-]+$/.test(key) || key.startsWith('.'))
      throw new Error(`invalid storage key "${key}"`);
    const shard = key.split('.')[0]!.slice(-2).padStart(2, '0');
    const full = path.resolve(this.root, 'objects', shard, key);
    if (!full.startsWith(this.root + path.sep))
      throw new Error(`storage key "${key}" leaves the resource root`);
    return full;
  }

  async stage(source: Readable, limits: { maxBytes: number; expectedBytes?: number }): Promise<StagedFile> {
    const tempPath = path.join(this.staging, randomUUID());
    const hash = createHash('sha256');
    let size = 0;
    try {
      // Synced before it resolves: once the catalog says an object exists, its bytes are on disk.
      await receiveFile(source, tempPath, {
        start: 0,
        flags: 'w',
        sync: true,
        inspect: (piece) => {
          size += piece.length;
          if (size > limits.maxBytes)
            throw new StagingError('too-large', `the upload exceeds the limit of ${limits.maxBytes} bytes`);
          hash.update(piece);
        },
      });
    } catch (err) {
      await fs.rm(tempPath, { force: true });
      if (err instanceof StagingError) throw err;
      throw new StagingError('incomplete', 'the upload was interrupted before all bytes arrived');
    }
    if (limits.expectedBytes !== undefined && size !== limits.expectedBytes) {
      await fs.rm(tempPath, { force: true });
      throw new StagingError(
        'incomplete',
        `received ${size} bytes, but Content-Length said ${limits.expectedBytes}`,
      );
    }
    let committed = false;
    return {
      size,
      sha256: hash.digest('hex'),
      open: () => createReadStream(tempPath),
      commit: async (key) => {
        await fs.rename(tempPath, await this.prepare(key));
        committed = true;
      },
      discard: async () => {
        if (!committed) await fs.rm(tempPath, { force: true });
      },
    };
  }

  /**
   * Takes a file already written inside this resource's root (an upload session's bytes, whose
   * size and SHA-256 the caller measured as they arrived) as staged bytes, without copying it:
   * it is fsynced, and `commit` renames it into place. Until then it stays where it is and belongs
   * to the caller; `discard` after a commit moves it back, so a commit the catalog refused leaves
   * the caller's file as it was.
   */
  async adopt(file: string, measured: { size: number; sha256: string }): Promise<StagedFile> {
    const source = path.resolve(file);
    // Within the root (so the rename stays on one file system), and not an object's bytes.
    if (
      !source.startsWith(this.root + path.sep) ||
      source.startsWith(path.join(this.root, 'objects') + path.sep)
    )
      throw new Error(`${file} is not a file this storage resource can adopt`);
    const handle = await fs.open(source, 'r+');
    try {
      const { size } = await handle.stat();
      if (size !== measured.size)
        throw new StagingError(
          'incomplete',
          `the file holds ${size} bytes, not the ${measured.size} expected`,
        );
      // The same durability as `stage`: once the catalog says an object exists, its bytes are on disk.
      await handle.sync();
    } finally {
      await handle.close();
    }
    let committed: string | undefined;
    return {
      size: measured.size,
      sha256: measured.sha256,
      open: () => createReadStream(source),
      commit: async (key) => {
        const target = await this.prepare(key);
        await fs.rename(source, target);
        committed = target;
      },
      discard: async () => {
        if (committed === undefined) return;
        // Best effort: if the bytes cannot go back, the caller's removal of the key takes them.
        await fs.rename(committed, source).then(
          () => (committed = undefined),
          () => undefined,
        );
      },
    };
  }

  /** The absolute path of a key, with its shard directory made. */
  private async prepare(key: string): Promise<string> {
    const target = this.resolve(key);
    const dir = path.dirname(target);
    if (!this.shards.has(dir)) {
      await fs.mkdir(dir, { recursive: true });
      this.shards.add(dir);
    }
    return target;
  }

  open(key: string, range?: { start: number; end: number }): Readable {
    return createReadStream(this.resolve(key), range ? { start: range.start, end: range.end } : {});
  }

  send(key: string, range: { start: number; end: number } | undefined, out: Writable): Promise<number> {
    return sendFile(this.resolve(key), range, out);
  }

  async remove(key: string): Promise<void> {
    await fs.rm(this.resolve(key), { force: true });
  }
}
