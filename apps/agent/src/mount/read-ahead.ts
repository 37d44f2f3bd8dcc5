import type { ApiConnection } from '@tributary/buffer';
import type { EntryDto } from '@tributary/shared';

/** Files at most this large are read many to a request. */
export const SMALL_READ_BYTES = 1024 * 1024;
/** One batch: at most this many files and bytes. */
export const BATCH_FILES = 64;
export const BATCH_BYTES = 8 * 1024 * 1024;
/** Bytes read ahead and not opened yet, across all folders (the oldest are dropped first). */
export const READ_AHEAD_BYTES = 32 * 1024 * 1024;
/** How long a file read ahead waits to be opened. */
export const READ_AHEAD_TTL_MS = 10_000;

interface Kept {
  sha256: string;
  bytes: Buffer;
  until: number;
}

const hex = (checksum: string | null): string => (checksum ?? '').replace(/^sha256:/, '');

/**
 * Small files read many to a request: opening a small file whose folder the mount has listed fetches
 * it and the files listed after it (`POST /api/v1/data/batch-read`), and the next opens are answered
 * from memory. A kept file is used only while the entry the open finds (cached attributes, dropped by
 * the change feed, or a fresh stat) has the same checksum: a file changed since is read as usual.
 */
export class ReadAhead {
  private readonly kept = new Map<string, Kept>();
  private bytes = 0;
  /**
   * Folders whose last batch failed (a file in it one may not read, or removed meanwhile), until
   * when: their files are read one by one meanwhile, not each first in a batch that fails again.
   */
  private readonly failed = new Map<string, number>();

  constructor(
    private readonly api: ApiConnection,
    private readonly now: () => number = Date.now,
  ) {}

  /** The bytes of `entry` if they were read ahead and are still its current version (taken once). */
  take(entry: EntryDto): Buffer | undefined {
    const hit = this.kept.get(entry.path);
    if (!hit) return undefined;
    this.drop(entry.path);
    if (hit.until <= this.now() || hit.sha256 === '' || hit.sha256 !== hex(entry.checksum)) return undefined;
    return hit.bytes;
  }

  /**
   * Reads `entry` and as many of `next` (the entries listed after it) as fit in one batch; keeps
   * the others. Undefined when the batch failed (the caller reads the file as usual).
   */
  async read(entry: EntryDto, next: EntryDto[]): Promise<Buffer | undefined> {
    const folder = entry.path.slice(0, entry.path.lastIndexOf('/'));
    const failedUntil = this.failed.get(folder);
    if (failedUntil !== undefined) {
      if (failedUntil > this.now()) return undefined;
      this.failed.delete(folder);
    }
    const batch = [entry];
    let size = entry.size;
    for (const e of next) {
      if (batch.length >= BATCH_FILES) break;
      if (e.kind !== 'object' || e.size > SMALL_READ_BYTES || this.kept.has(e.path)) continue;
      if (size + e.size > BATCH_BYTES) break;
      batch.push(e);
      size += e.size;
    }
    let objects: Map<string, { sha256: string; bytes: Buffer }>;
    try {
      const { body } = await this.api.bytes({
        method: 'POST',
        url: '/api/v1/data/batch-read',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ paths: batch.map((e) => e.path) }),
        timeout: 'data',
      });
      objects = parseBatch(Buffer.from(body.buffer, body.byteOffset, body.byteLength));
    } catch {
      this.failed.set(folder, this.now() + READ_AHEAD_TTL_MS);
      if (this.failed.size > 1000) this.failed.delete(this.failed.keys().next().value!);
      return undefined;
    }
    const until = this.now() + READ_AHEAD_TTL_MS;
    for (const e of batch.slice(1)) {
      const got = objects.get(e.path);
      if (got) this.keep(e.path, { ...got, until });
    }
    const own = objects.get(entry.path);
    return own && own.sha256 === hex(entry.checksum) ? own.bytes : undefined;
  }

  /** Read ahead and not opened yet (for tests). */
  get keptFiles(): number {
    return this.kept.size;
  }

  clear(): void {
    this.kept.clear();
    this.failed.clear();
    this.bytes = 0;
  }

  private keep(path: string, kept: Kept): void {
    this.drop(path);
    this.kept.set(path, kept);
    this.bytes += kept.bytes.length;
    for (const [oldest] of this.kept) {
      if (this.bytes <= READ_AHEAD_BYTES) break;
      this.drop(oldest);
    }
  }

  private drop(path: string): void {
    const hit = this.kept.get(path);
    if (!hit) return;
    this.kept.delete(path);
    this.bytes -= hit.bytes.length;
  }
}

/**
 * A batch-read answer: per object a line of JSON `{"path","size","sha256"}`, then exactly `size`
 * bytes. A short or malformed answer throws (never a partial result).
 */
export function parseBatch(body: Buffer): Map<string, { sha256: string; bytes: Buffer }> {
  const objects = new Map<string, { sha256: string; bytes: Buffer }>();
  let at = 0;
  while (at < body.length) {
    const end = body.indexOf(0x0a, at);
    if (end < 0) throw new Error('the batch answer ended inside a header');
    const header = JSON.parse(body.subarray(at, end).toString('utf8')) as {
      path?: unknown;
      size?: unknown;
      sha256?: unknown;
    };
    const { path, size, sha256 } = header;
    if (typeof path !== 'string' || typeof size !== 'number' || !Number.isSafeInteger(size) || size < 0)
      throw new Error('the batch answer holds a header without path and size');
    const start = end + 1;
    if (start + size > body.length) throw new Error(`the batch answer ended inside ${path}`);
    // A copy: the answer's buffer is dropped once every file of it was opened or dropped.
    objects.set(path, {
      sha256: typeof sha256 === 'string' ? hex(sha256) : '',
      bytes: Buffer.from(body.subarray(start, start + size)),
    });
    at = start + size;
  }
  return objects;
}
