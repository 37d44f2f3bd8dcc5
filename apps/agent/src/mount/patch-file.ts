import { mkdtemp, open, readdir, rm, type FileHandle } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  ApiRemoteFile,
  UploadSessionClient,
  withRetry,
  type AdvanceBufferPool,
  type ApiConnection,
  type BufferedFile,
  type FileAttributes,
  type RetryPolicy,
} from '@tributary/buffer';
import { ApiError, ByteRangeSet, ErrorCode, splitRange, type EntryDto } from '@tributary/shared';

/** Largest part sent in one request when a partial update is committed. */
export const PATCH_PART_BYTES = 8 * 1024 * 1024;

/** The version of an object a PatchFile changes: what the catalog said when it was opened. */
export interface PatchBase {
  version: number;
  /** `sha256:<hex>` or `<hex>`, as the entry gave it. */
  sha256: string;
  size: number;
}

export interface PatchFileOptions {
  api: ApiConnection;
  path: string;
  base: PatchBase;
  /** Opens the base version for reading (shares the mount's memory limit). */
  pool: AdvanceBufferPool;
  retry: RetryPolicy;
  /** The size the file has now (the base's, unless it was cut or replaced since it was opened). */
  size?: number;
  /**
   * Bytes below this come from the base where nothing was written; zeros at and past it. The base's
   * size, unless the file was cut shorter (or replaced) since.
   */
  visibleBase?: number;
  /** Where written bytes wait for the commit (a temporary directory of its own under it). */
  spillDir?: string;
}

/**
 * An existing object changed in place through the mount: writes at any offset, reads, and
 * truncation to any size, committed as a partial update (an upload session with a `base`) that
 * sends only the written ranges. The written bytes wait in a temporary file on disk (only their
 * ranges are held in memory), so a large rewrite does not take memory; reads see them at once,
 * the base's bytes (read through the advance buffer) elsewhere, zeros past the base's end.
 *
 * A commit (flush, fsync, close) makes a new version; the file then goes on from that version.
 * If the object changed meanwhile, the commit fails (409 UPLOAD_BASE_CHANGED) and nothing changes.
 */
export class PatchFile {
  private readonly dirty = new ByteRangeSet();
  private base: PatchBase;
  private visibleBase: number;
  private spill: { dir: string; file: FileHandle } | undefined;
  private spilling: Promise<FileHandle> | undefined;
  private baseReader: BufferedFile | undefined;
  private readonly sessions: UploadSessionClient;
  /** Size now (what getattr reports). */
  size: number;
  /** Written or resized since the last commit. */
  changed = false;
  /** The entry of the last commit. */
  entry: EntryDto | undefined;
  /**
   * Writes, truncations and commits run one at a time, in order: a commit must not clear a write
   * that arrived while its parts were being sent. Reads wait for them too (they see whole writes).
   */
  private queue: Promise<unknown> = Promise.resolve();

  constructor(private readonly options: PatchFileOptions) {
    this.base = options.base;
    this.size = options.size ?? options.base.size;
    this.visibleBase = Math.min(options.visibleBase ?? options.base.size, options.base.size, this.size);
    this.sessions = new UploadSessionClient(options.api);
    this.changed = this.size !== options.base.size;
  }

  write(position: number, data: Uint8Array): Promise<void> {
    return this.serial(() => this.writeNow(position, data));
  }

  read(position: number, length: number): Promise<Uint8Array> {
    return this.serial(() => this.readNow(position, length));
  }

  resize(size: number): Promise<void> {
    return this.serial(() => {
      this.resizeNow(size);
      return Promise.resolve();
    });
  }

  /** `attributes`: a file time and permission bits the new version gets with the commit itself. */
  commit(attributes: FileAttributes = {}): Promise<EntryDto | undefined> {
    return this.serial(() => this.commitNow(attributes));
  }

  /** The object was renamed while open: its base is read, and its changes committed, at `path` from now on. */
  rename(path: string): Promise<void> {
    return this.serial(async () => {
      this.options.path = path;
      const reader = this.baseReader;
      this.baseReader = undefined;
      await reader?.close().catch(() => undefined);
    });
  }

  get path(): string {
    return this.options.path;
  }

  private serial<T>(op: () => Promise<T>): Promise<T> {
    const run = this.queue.then(op, op);
    this.queue = run.catch(() => undefined);
    return run;
  }

  private async writeNow(position: number, data: Uint8Array): Promise<void> {
    if (data.length === 0) return;
    const file = await this.spillFile();
    let done = 0;
    while (done < data.length) {
      const { bytesWritten } = await file.write(data, done, data.length - done, position + done);
      done += bytesWritten;
    }
    this.dirty.add(position, position + data.length);
    this.size = Math.max(this.size, position + data.length);
    this.changed = true;
  }

  /** Up to `length` bytes at `position` as this handle sees them (fewer only at the end). */
  private async readNow(position: number, length: number): Promise<Uint8Array> {
    const end = Math.min(this.size, position + length);
    if (end <= position) return new Uint8Array(0);
    const out = new Uint8Array(end - position);
    for (const seg of this.dirty.segments(position, end)) {
      const at = seg.start - position;
      if (seg.covered) {
        await this.readSpill(out.subarray(at, at + seg.end - seg.start), seg.start);
        continue;
      }
      const fromBase = Math.min(seg.end, this.visibleBase);
      if (seg.start < fromBase) {
        const bytes = await this.reader().read(seg.start, fromBase - seg.start);
        out.set(bytes, at);
      }
      // The rest of `out` is zeros already.
    }
    return out;
  }

  /** truncate/ftruncate: bytes past `size` are gone; growing again shows zeros there. */
  private resizeNow(size: number): void {
    if (size === this.size) return;
    this.dirty.truncate(size);
    this.visibleBase = Math.min(this.visibleBase, size);
    this.size = size;
    this.changed = true;
  }

  /**
   * Commits the changes as the object's next version: one upload session from the base, the
   * written ranges (and zeros where the file was cut below the base's end and grown again) in
   * parts of at most PATCH_PART_BYTES, each with its SHA-256. Nothing to do if nothing changed.
   */
  private async commitNow(attributes: FileAttributes): Promise<EntryDto | undefined> {
    if (!this.changed) return undefined;
    const parts = new ByteRangeSet(this.dirty.ranges);
    // Bytes the base still has there but the file must not: zeros, sent explicitly.
    for (const [start, end] of this.dirty.gaps(this.visibleBase, Math.min(this.size, this.base.size)))
      parts.add(start, end);
    const session = await withRetry(
      () =>
        this.sessions.create({
          path: this.options.path,
          size: this.size,
          overwrite: true,
          base: { version: this.base.version, sha256: this.base.sha256.replace(/^sha256:/, '') },
        }),
      this.options.retry,
    );
    let entry: EntryDto;
    try {
      for (const [start, end] of parts.ranges) {
        for (const [s, e] of splitRange(start, end, PATCH_PART_BYTES)) {
          const bytes = new Uint8Array(e - s);
          for (const seg of this.dirty.segments(s, e))
            if (seg.covered) await this.readSpill(bytes.subarray(seg.start - s, seg.end - s), seg.start);
          await this.sendPart(session.id, s, bytes);
        }
      }
      entry = await withRetry(
        () => this.sessions.complete(session.id, undefined, undefined, attributes),
        this.options.retry,
      );
    } catch (err) {
      await this.sessions.abort(session.id).catch(() => undefined);
      throw err;
    }
    await this.rebase(entry);
    return entry;
  }

  /** Drops the temporary file and the base's reader. Uncommitted changes are lost. */
  close(): Promise<void> {
    return this.serial(() => this.closeNow());
  }

  private async closeNow(): Promise<void> {
    const reader = this.baseReader;
    this.baseReader = undefined;
    await reader?.close().catch(() => undefined);
    const spill = this.spill ?? (await this.spilling?.then(() => this.spill).catch(() => undefined));
    this.spill = undefined;
    this.spilling = undefined;
    if (spill) {
      await spill.file.close().catch(() => undefined);
      await rm(spill.dir, { recursive: true, force: true });
    }
  }

  /** After a commit: the new version is the base, nothing is dirty. */
  private async rebase(entry: EntryDto): Promise<void> {
    this.entry = entry;
    this.base = {
      version: entry.version ?? this.base.version + 1,
      sha256: entry.checksum ?? '',
      size: entry.size,
    };
    this.size = entry.size;
    this.visibleBase = entry.size;
    this.dirty.clear();
    this.changed = false;
    const reader = this.baseReader;
    this.baseReader = undefined;
    await reader?.close().catch(() => undefined);
    await this.spill?.file.truncate(0);
  }

  /**
   * One part, with retries. A retry refused with UPLOAD_RANGE_OVERLAP is a success when the session
   * holds exactly that range's bytes already (an earlier attempt landed but its answer was lost):
   * this handle is the session's only writer and sends each range once.
   */
  private async sendPart(id: string, offset: number, bytes: Uint8Array): Promise<void> {
    const digest = await crypto.subtle.digest('SHA-256', bytes);
    const sha256 = Buffer.from(digest).toString('hex');
    await withRetry(async (attempt) => {
      try {
        await this.sessions.putChunk(id, offset, bytes, undefined, sha256);
      } catch (err) {
        if (attempt > 0 && err instanceof ApiError && err.code === ErrorCode.UploadRangeOverlap) {
          const session = await this.sessions.get(id);
          const held = new ByteRangeSet(session.ranges ?? []);
          if (held.gaps(offset, offset + bytes.length).length === 0) return;
        }
        throw err;
      }
    }, this.options.retry);
  }

  private reader(): BufferedFile {
    this.baseReader ??= this.options.pool.open(
      ApiRemoteFile.forRead(this.options.api, this.options.path, this.base.size, {
        retry: this.options.retry,
      }),
    );
    return this.baseReader;
  }

  private async readSpill(into: Uint8Array, position: number): Promise<void> {
    const file = await this.spillFile();
    let done = 0;
    while (done < into.length) {
      const { bytesRead } = await file.read(into, done, into.length - done, position + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
  }

  private spillFile(): Promise<FileHandle> {
    if (this.spill) return Promise.resolve(this.spill.file);
    this.spilling ??= (async () => {
      // Named after this process, so a later mount can tell a dead mount's leftovers (removeStaleSpills).
      const dir = await mkdtemp(
        path.join(this.options.spillDir ?? os.tmpdir(), `${SPILL_PREFIX}${process.pid}-`),
      );
      const file = await open(path.join(dir, 'bytes'), 'w+', 0o600);
      this.spill = { dir, file };
      return file;
    })();
    return this.spilling;
  }
}

const SPILL_PREFIX = 'tributary-dirty-';

/**
 * Removes the dirty-bytes directories that mounts which died before committing left in `dir`
 * (their process is gone); returns how many. Those of live processes stay.
 */
export async function removeStaleSpills(dir: string = os.tmpdir()): Promise<number> {
  let removed = 0;
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    const pid = /^tributary-dirty-(\d+)-/.exec(name)?.[1];
    if (pid === undefined || processAlive(Number(pid))) continue;
    await rm(path.join(dir, name), { recursive: true, force: true });
    removed++;
  }
  return removed;
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
