import { createHash, randomUUID } from 'node:crypto';
import { constants as fsConstants, createReadStream, promises as fs } from 'node:fs';
import path from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { receiveFile, sendFile } from './file-io';
import { FileSystemFlush } from './file-system-flush';
import {
  DraftGoneError,
  type DraftStore,
  ObjectTooLargeError,
  type DraftWriter,
  type ResourceHealth,
  type StagedFile,
  StagingError,
  type StorageDriver,
} from './storage-driver';

/** Storage keys and draft ids: one plain file name, never hidden. */
const NAME = /^[A-Za-z0-9._-]+$/;
const isName = (name: string): boolean => NAME.test(name) && !name.startsWith('.');

/** Small files of one stageAll written at once. */
const STAGE_ALL_WRITERS = 16;

/** Reads of a draft's bytes back (hashing them): larger pieces than a stream's default. */
const DRAFT_READ_BYTES = 1024 * 1024;

/**
 * The default driver: a directory on the local file system. Objects live under `objects/`, sharded
 * by the key's last characters; uploads land in `.staging/` first and are renamed into place, so a
 * failed upload never leaves a partial object behind. Drafts (upload sessions' bytes) live in
 * `.uploads/`, on the same file system, so committing one is a rename too.
 */
export class LocalFsDriver implements StorageDriver {
  private readonly root: string;
  private readonly staging: string;
  /** Shard directories known to exist, so a commit is one rename. */
  private readonly shards = new Set<string>();
  private readonly flush: FileSystemFlush;
  readonly drafts: LocalDrafts;
  readonly copies: LocalDrafts;

  constructor(root: string) {
    this.root = path.resolve(root);
    this.staging = path.join(this.root, '.staging');
    this.flush = new FileSystemFlush(this.staging);
    this.drafts = new LocalDrafts(path.join(this.root, '.uploads'), (key) => this.prepare(key));
    this.copies = new LocalDrafts(path.join(this.root, '.copies'), (key) => this.prepare(key));
  }

  async init(): Promise<void> {
    await fs.mkdir(this.staging, { recursive: true });
    await fs.mkdir(this.drafts.dir, { recursive: true });
    await fs.mkdir(this.copies.dir, { recursive: true });
    // Leftovers of a crash mid-upload belong to no object.
    for (const name of await fs.readdir(this.staging))
      await fs.rm(path.join(this.staging, name), { force: true });
  }

  /** Absolute path of a key, refusing anything that would leave the root. */
  resolve(key: string): string {
    if (!isName(key)) throw new Error(`invalid storage key "${key}"`);
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
    return this.staged(tempPath, size, hash.digest('hex'));
  }

  async stageAll(bodies: readonly Buffer[]): Promise<StagedFile[]> {
    const paths = bodies.map(() => path.join(this.staging, randomUUID()));
    const written: string[] = [];
    try {
      for (let at = 0; at < bodies.length; at += STAGE_ALL_WRITERS) {
        await Promise.all(
          bodies.slice(at, at + STAGE_ALL_WRITERS).map(async (body, i) => {
            const file = paths[at + i]!;
            written.push(file);
            await fs.writeFile(file, body, { flag: 'wx', mode: 0o600 });
          }),
        );
      }
      await this.flush.files(paths);
    } catch (err) {
      await Promise.all(written.map((f) => fs.rm(f, { force: true })));
      throw err;
    }
    return bodies.map((body, i) =>
      this.staged(paths[i]!, body.length, createHash('sha256').update(body).digest('hex')),
    );
  }

  /** Durable bytes in staging, as the StagedFile that commits (renames) or discards them. */
  private staged(tempPath: string, size: number, sha256: string): StagedFile {
    let committed = false;
    return {
      size,
      sha256,
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

  async readSmall(key: string, maxBytes: number): Promise<Buffer> {
    const handle = await fs.open(this.resolve(key), 'r');
    try {
      const { size } = await handle.stat();
      if (size > maxBytes) throw new ObjectTooLargeError(key, size);
      const bytes = Buffer.allocUnsafe(size);
      let filled = 0;
      while (filled < size) {
        const { bytesRead } = await handle.read(bytes, filled, size - filled, filled);
        if (bytesRead === 0) break;
        filled += bytesRead;
      }
      // A file cut short meanwhile answers with what it holds; the caller checks the size.
      return filled === size ? bytes : bytes.subarray(0, filled);
    } finally {
      await handle.close();
    }
  }

  send(key: string, range: { start: number; end: number } | undefined, out: Writable): Promise<number> {
    return sendFile(this.resolve(key), range, out);
  }

  async remove(key: string): Promise<void> {
    await fs.rm(this.resolve(key), { force: true });
  }

  async check(): Promise<ResourceHealth> {
    try {
      await fs.access(this.staging, fsConstants.W_OK);
      return { status: 'ok' };
    } catch (err) {
      return { status: 'failing', error: (err as Error).message };
    }
  }

  async close(): Promise<void> {}
}

/** Drafts as files of one directory, each named by its id. */
export class LocalDrafts implements DraftStore {
  constructor(
    readonly dir: string,
    /** The path a key's bytes go to, its directory made. */
    private readonly place: (key: string) => Promise<string>,
  ) {}

  async list(): Promise<string[]> {
    return fs.readdir(this.dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return [];
      throw err;
    });
  }

  async create(id: string): Promise<void> {
    await fs.writeFile(this.file(id), '');
  }

  async exists(id: string): Promise<boolean> {
    return fs.access(this.file(id)).then(
      () => true,
      () => false,
    );
  }

  write(
    id: string,
    source: AsyncIterable<Buffer>,
    options: { start: number; inspect?(piece: Buffer): void },
  ): Promise<number> {
    return present(id, () => receiveFile(source, this.file(id), { ...options, flags: 'r+' }));
  }

  async open(id: string): Promise<DraftWriter> {
    const handle = await present(id, () => fs.open(this.file(id), 'r+'));
    return {
      write: async (bytes, offset, length, position) => {
        await handle.write(bytes, offset, length, position);
      },
      truncate: (size) => handle.truncate(size),
      close: () => handle.close(),
    };
  }

  read(id: string, range?: { start: number; end: number }): Readable {
    return createReadStream(this.file(id), { ...range, highWaterMark: DRAFT_READ_BYTES });
  }

  truncate(id: string, size: number): Promise<void> {
    return present(id, () => fs.truncate(this.file(id), size));
  }

  async remove(id: string): Promise<void> {
    await fs.rm(this.file(id), { force: true });
  }

  /**
   * Takes the draft as staged bytes without copying it: it is fsynced, and `commit` renames it
   * into place (the same durability as `stage`: once the catalog says an object exists, its bytes
   * are on disk).
   */
  async adopt(id: string, measured: { size: number; sha256: string }): Promise<StagedFile> {
    if (!isName(id)) throw new Error(`${id} is not a file this storage resource can adopt`);
    const source = this.file(id);
    const handle = await present(id, () => fs.open(source, 'r+'));
    try {
      const { size } = await handle.stat();
      if (size !== measured.size)
        throw new StagingError(
          'incomplete',
          `the file holds ${size} bytes, not the ${measured.size} expected`,
        );
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
        const target = await this.place(key);
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

  private file(id: string): string {
    if (!isName(id)) throw new Error(`invalid draft id "${id}"`);
    return path.join(this.dir, id);
  }
}

/** Runs a file operation on a draft, telling a missing draft apart from other failures. */
async function present<T>(id: string, op: () => Promise<T>): Promise<T> {
  try {
    return await op();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new DraftGoneError(id);
    throw err;
  }
}
