import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
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
    const meter = new Transform({
      transform(chunk: Buffer, _enc, done) {
        size += chunk.length;
        if (size > limits.maxBytes) {
          done(new StagingError('too-large', `the upload exceeds the limit of ${limits.maxBytes} bytes`));
          return;
        }
        hash.update(chunk);
        done(null, chunk);
      },
    });
    try {
      // `flush: true` fsyncs before close: once the catalog says an object exists, its bytes are on disk.
      await pipeline(source, meter, createWriteStream(tempPath, { flush: true }));
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
      commit: async (key) => {
        const target = this.resolve(key);
        const dir = path.dirname(target);
        if (!this.shards.has(dir)) {
          await fs.mkdir(dir, { recursive: true });
          this.shards.add(dir);
        }
        await fs.rename(tempPath, target);
        committed = true;
      },
      discard: async () => {
        if (!committed) await fs.rm(tempPath, { force: true });
      },
    };
  }

  open(key: string, range?: { start: number; end: number }): Readable {
    return createReadStream(this.resolve(key), range ? { start: range.start, end: range.end } : {});
  }

  async remove(key: string): Promise<void> {
    await fs.rm(this.resolve(key), { force: true });
  }
}
