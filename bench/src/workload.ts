import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createWriteStream } from 'node:fs';
import { finished } from 'node:stream/promises';

export const KiB = 1024;
export const MiB = 1024 * KiB;
export const GiB = 1024 * MiB;

/** The seed's Table 2 (seeds/000): many small files, then single large ones. */
export const SHAPE_KEYS = ['10KBx1000', '100KBx1000', '1MBx1000', '10MB', '100MB', '1GB'] as const;
export type ShapeKey = (typeof SHAPE_KEYS)[number];

export interface Shape {
  key: ShapeKey;
  files: number;
  /** Bytes per file. */
  size: number;
}

const FULL: Record<ShapeKey, Omit<Shape, 'key'>> = {
  '10KBx1000': { files: 1000, size: 10 * KiB },
  '100KBx1000': { files: 1000, size: 100 * KiB },
  '1MBx1000': { files: 1000, size: MiB },
  '10MB': { files: 1, size: 10 * MiB },
  '100MB': { files: 1, size: 100 * MiB },
  '1GB': { files: 1, size: GiB },
};

/** `--quick`: a smoke check in seconds. Counts divided by 10, single files at most 16 MiB. */
const QUICK: Record<ShapeKey, Omit<Shape, 'key'>> = {
  '10KBx1000': { files: 100, size: 10 * KiB },
  '100KBx1000': { files: 100, size: 100 * KiB },
  '1MBx1000': { files: 100, size: MiB },
  '10MB': { files: 1, size: 10 * MiB },
  '100MB': { files: 1, size: 16 * MiB },
  '1GB': { files: 1, size: 16 * MiB },
};

export function shapesFor(keys: readonly ShapeKey[], quick: boolean): Shape[] {
  return keys.map((key) => ({ key, ...(quick ? QUICK : FULL)[key] }));
}

export function parseShapeList(list: string): ShapeKey[] {
  const keys = list
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  const unknown = keys.filter((k) => !(SHAPE_KEYS as readonly string[]).includes(k));
  if (unknown.length > 0 || keys.length === 0) {
    throw new Error(`--shapes takes a comma-separated list of ${SHAPE_KEYS.join(', ')}; got "${list}"`);
  }
  return SHAPE_KEYS.filter((k) => keys.includes(k));
}

/** Above this size a file is streamed from a generated temp file instead of sent from memory. */
export const STREAM_THRESHOLD = 8 * MiB;

/**
 * Payload bytes: random content (incompressible), distinct per file. Each in-flight slot owns one
 * buffer; `stamp` rewrites its first bytes with the file's number, so no per-file copies are made
 * and the API and the baseline get byte-identical input.
 */
export class PayloadPool {
  private readonly buffers: Buffer[];

  constructor(size: number, slots: number) {
    const base = randomBytes(size);
    this.buffers = Array.from({ length: slots }, () => Buffer.from(base));
  }

  stamp(slot: number, fileIndex: number): Buffer {
    const buf = this.buffers[slot];
    if (!buf) throw new Error(`no payload slot ${slot}`);
    if (buf.length >= 8) buf.writeBigUInt64BE(BigInt(fileIndex), 0);
    return buf;
  }
}

/** Writes `size` random bytes to `file` in 1 MiB chunks, never holding the whole file in memory. */
export async function generateFile(file: string, size: number): Promise<void> {
  const chunk = randomBytes(MiB);
  const out = createWriteStream(file);
  let written = 0;
  let n = 0;
  while (written < size) {
    const len = Math.min(MiB, size - written);
    const piece = Buffer.from(chunk.subarray(0, len));
    if (len >= 8) piece.writeBigUInt64BE(BigInt(n++), 0);
    written += len;
    if (!out.write(piece)) await once(out, 'drain');
  }
  out.end();
  await finished(out);
}

/**
 * Runs `task(i, slot)` for i in [0, count) with at most `limit` in flight; `slot` is in [0, limit)
 * and is never held by two tasks at once.
 */
export async function runPool(
  count: number,
  limit: number,
  task: (index: number, slot: number) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (slot: number): Promise<void> => {
    while (next < count) {
      const i = next++;
      await task(i, slot);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, count) }, (_, slot) => worker(slot)));
}
