import { createRequire } from 'node:module';

/**
 * Erasure coding of one object into k data shards and m parity shards (issue 30, docs/erasure.md),
 * in stripes, never holding the whole object: stripe s holds the object's bytes
 * [s·k·chunk, (s+1)·k·chunk), cut into k chunks of `chunk` bytes (the last stripe zero-padded), and
 * m parity chunks computed from them. Shard i is the concatenation of chunk i of every stripe, so
 * every shard has `stripes · chunk` bytes and byte b of the object is at shard
 * `floor(b / chunk) mod k`, offset `floor(b / (k·chunk))·chunk + b mod chunk`. Any k shards rebuild
 * the rest. The Galois-field work is done by @ronomon/reed-solomon (a native addon that runs in
 * libuv's thread pool, so the event loop stays free).
 */

interface ReedSolomonBinding {
  MAX_K: number;
  MAX_M: number;
  create(k: number, m: number): unknown;
  encode(
    context: unknown,
    sources: number,
    targets: number,
    buffer: Buffer,
    bufferOffset: number,
    bufferSize: number,
    parity: Buffer,
    parityOffset: number,
    paritySize: number,
    callback: (error: Error | undefined) => void,
  ): void;
}

// The addon ships no types; it is loaded the CommonJS way from either build of this package.
const ReedSolomon = createRequire(__filename)('@ronomon/reed-solomon') as ReedSolomonBinding;

/** Largest k and m the codec takes (the addon's limits: 24 and 6). */
export const ERASURE_MAX_K = ReedSolomon.MAX_K;
export const ERASURE_MAX_M = ReedSolomon.MAX_M;
/** Largest chunk of one shard in one stripe: a 4+2 stripe then holds 4 MiB of the object. */
export const ERASURE_MAX_CHUNK = 1024 * 1024;

export interface ErasureLayout {
  k: number;
  m: number;
  /** Bytes of one shard per stripe: a multiple of 8 (the addon's rule), at least 8. */
  chunk: number;
  /** The object's size in bytes. */
  size: number;
}

/** The layout the codec uses for an object of `size` bytes: chunks no larger than the object needs. */
export function erasureLayout(
  k: number,
  m: number,
  size: number,
  maxChunk = ERASURE_MAX_CHUNK,
): ErasureLayout {
  checkShape(k, m);
  if (!Number.isSafeInteger(size) || size < 0)
    throw new RangeError(`size must be a whole number >= 0, got ${size}`);
  if (maxChunk < 8 || maxChunk % 8 !== 0)
    throw new RangeError(`chunk must be a positive multiple of 8, got ${maxChunk}`);
  const needed = Math.ceil(size / k);
  const chunk = Math.max(8, Math.min(maxChunk, Math.ceil(needed / 8) * 8));
  return { k, m, chunk, size };
}

export function checkShape(k: number, m: number): void {
  if (!Number.isInteger(k) || k < 1 || k > ERASURE_MAX_K)
    throw new RangeError(`k must be 1 to ${ERASURE_MAX_K}, got ${k}`);
  if (!Number.isInteger(m) || m < 1 || m > ERASURE_MAX_M)
    throw new RangeError(`m must be 1 to ${ERASURE_MAX_M}, got ${m}`);
}

/** Stripes of the object (0 for an empty one). */
export function stripeCount(layout: ErasureLayout): number {
  return Math.ceil(layout.size / (layout.k * layout.chunk));
}

/** Bytes of every shard of the object. */
export function shardSize(layout: ErasureLayout): number {
  return stripeCount(layout) * layout.chunk;
}

/** Bytes all k+m shards hold together. */
export function storedBytes(layout: ErasureLayout): number {
  return shardSize(layout) * (layout.k + layout.m);
}

const contexts = new Map<string, unknown>();
function context(k: number, m: number): unknown {
  const key = `${k}+${m}`;
  let found = contexts.get(key);
  if (found === undefined) {
    found = ReedSolomon.create(k, m);
    contexts.set(key, found);
  }
  return found;
}

/**
 * Computes the `targets` shards (bit i: shard i) of one stripe from the `sources` (at least k bits):
 * `data` holds the k data chunks one after the other, `parity` the m parity chunks.
 */
export function codeStripe(
  layout: Pick<ErasureLayout, 'k' | 'm' | 'chunk'>,
  sources: number,
  targets: number,
  data: Buffer,
  parity: Buffer,
): Promise<void> {
  const { k, m, chunk } = layout;
  if (targets === 0) return Promise.resolve();
  if (bitCount(sources) < k)
    return Promise.reject(new Error(`need ${k} shards to rebuild, have ${bitCount(sources)}`));
  return new Promise((resolve, reject) => {
    ReedSolomon.encode(context(k, m), sources, targets, data, 0, k * chunk, parity, 0, m * chunk, (error) =>
      error ? reject(error) : resolve(),
    );
  });
}

function bitCount(mask: number): number {
  let n = 0;
  for (let v = mask; v !== 0; v &= v - 1) n += 1;
  return n;
}

/** One encoded stripe: `shards[i]` is shard i's chunk (views into two reused buffers: copy to keep). */
export interface EncodedStripe {
  index: number;
  shards: Buffer[];
}

/**
 * Encodes a byte stream of exactly `layout.size` bytes stripe by stripe. Each yielded stripe's
 * buffers are reused for the next one, so a consumer writes them out before asking for the next
 * (backpressure is the iteration itself: at most one stripe is in memory). Throws when the source
 * gives more or fewer bytes than the layout's size.
 */
export async function* encodeStripes(
  layout: ErasureLayout,
  source: AsyncIterable<Uint8Array>,
): AsyncGenerator<EncodedStripe> {
  const { k, m, chunk } = layout;
  const stripeBytes = k * chunk;
  const data = Buffer.alloc(stripeBytes);
  const parity = Buffer.alloc(m * chunk);
  const allData = (1 << k) - 1;
  const allParity = ((1 << (k + m)) - 1) & ~allData;
  const shards = [...Array(k + m).keys()].map((i) =>
    i < k ? data.subarray(i * chunk, (i + 1) * chunk) : parity.subarray((i - k) * chunk, (i - k + 1) * chunk),
  );
  let filled = 0;
  let index = 0;
  let total = 0;
  const emit = async (): Promise<EncodedStripe> => {
    if (filled < stripeBytes) data.fill(0, filled);
    await codeStripe(layout, allData, allParity, data, parity);
    filled = 0;
    return { index: index++, shards };
  };
  for await (const piece of source) {
    let at = 0;
    total += piece.length;
    if (total > layout.size) throw new Error(`the object has more than the ${layout.size} bytes expected`);
    while (at < piece.length) {
      const n = Math.min(stripeBytes - filled, piece.length - at);
      data.set(piece.subarray(at, at + n), filled);
      filled += n;
      at += n;
      if (filled === stripeBytes) yield await emit();
    }
  }
  if (total !== layout.size) throw new Error(`the object has ${total} bytes, ${layout.size} expected`);
  if (filled > 0) yield await emit();
}

/** Where a read of shard i starts and ends (byte offsets in the shard, end exclusive). */
export interface ShardRange {
  start: number;
  end: number;
}

/** The stripes a byte range [start, end) of the object touches, and the shard bytes that hold them. */
export function stripesFor(
  layout: ErasureLayout,
  start: number,
  end: number,
): { first: number; last: number; shard: ShardRange } {
  const stripeBytes = layout.k * layout.chunk;
  if (end <= start) return { first: 0, last: -1, shard: { start: 0, end: 0 } };
  const first = Math.floor(start / stripeBytes);
  const last = Math.floor((end - 1) / stripeBytes);
  return { first, last, shard: { start: first * layout.chunk, end: (last + 1) * layout.chunk } };
}

/**
 * Opens shard `index` from shard byte `start` to `end` (exclusive); rejects (or its iterator throws)
 * when the shard cannot be read: the decoder then takes another one.
 */
export type ShardOpener = (index: number, range: ShardRange) => Promise<AsyncIterable<Uint8Array>>;

export interface DecodeOptions {
  /** Shards to try, best first (usually data shards first: no Galois work when they all answer). */
  candidates: number[];
  open: ShardOpener;
  /** Told each shard given up, and why (for logs and for marking sites down). */
  onShardFailed?: (index: number, error: unknown) => void;
  /**
   * Read one shard more than needed (when there is one) and check every stripe against it: a shard
   * whose bytes disagree with the others is found (reading more shards when needed) and left out,
   * so bad bytes are never returned while the others can outvote them.
   */
  verify?: boolean;
}

/**
 * Reads bytes [start, end) of the object from any k of its shards, stripe by stripe, fetching only
 * the stripes the range touches. A shard that cannot be opened, or breaks off, is replaced by the
 * next candidate from the stripe it had reached. Throws when fewer than k shards can be read.
 */
export async function* decodeRange(
  layout: ErasureLayout,
  start: number,
  end: number,
  options: DecodeOptions,
): AsyncGenerator<Buffer> {
  const { k, m, chunk } = layout;
  end = Math.min(end, layout.size);
  if (end <= start) return;
  const { first, last } = stripesFor(layout, start, end);
  const stripeBytes = k * chunk;
  const waiting = [...options.candidates];
  const readers = new Map<number, ChunkReader>();
  const data = Buffer.alloc(stripeBytes);
  const parity = Buffer.alloc(m * chunk);
  const slot = (i: number): Buffer =>
    i < k ? data.subarray(i * chunk, (i + 1) * chunk) : parity.subarray((i - k) * chunk, (i - k + 1) * chunk);
  const lastShardByte = (last + 1) * chunk;
  // With `verify`, one shard more than needed is read and checked against the others.
  let want = k + (options.verify ? 1 : 0);

  const give = (i: number, error: unknown): void => {
    const reader = readers.get(i);
    readers.delete(i);
    void reader?.close();
    options.onShardFailed?.(i, error);
  };
  const fill = async (stripe: number): Promise<void> => {
    while (readers.size < want) {
      const i = waiting.shift();
      if (i === undefined) {
        if (readers.size >= k) return;
        throw new Error(`only ${readers.size} of the ${k} shards needed could be read`);
      }
      try {
        readers.set(i, new ChunkReader(await options.open(i, { start: stripe * chunk, end: lastShardByte })));
      } catch (error) {
        options.onShardFailed?.(i, error);
      }
    }
  };
  /** Starts every reader again at this stripe (they are ahead by one chunk after reading it). */
  const rewind = (): void => {
    const held = [...readers.keys()].sort((a, b) => a - b);
    for (const i of held) void readers.get(i)!.close();
    readers.clear();
    waiting.unshift(...held);
  };
  /**
   * Decodes the data chunks from `from` (k indexes) with the fetched chunks in `saved`, then checks
   * that the chunks of `checks` computed from them equal the fetched ones.
   */
  const attempt = async (from: number[], checks: number[], saved: Map<number, Buffer>): Promise<boolean> => {
    for (const [i, b] of saved) b.copy(slot(i));
    let sources = 0;
    for (const i of from) sources |= 1 << i;
    let targets = ((1 << k) - 1) & ~sources;
    for (const i of checks) targets |= 1 << i;
    await codeStripe(layout, sources, targets, data, parity);
    return checks.every((i) => slot(i).equals(saved.get(i)!));
  };
  try {
    for (let stripe = first; stripe <= last; stripe += 1) {
      for (;;) {
        await fill(stripe);
        const taken = [...readers.keys()];
        const results = await Promise.allSettled(taken.map((i) => readers.get(i)!.readInto(slot(i))));
        let broken = false;
        results.forEach((r, n) => {
          if (r.status === 'rejected') {
            broken = true;
            give(taken[n]!, r.reason);
          }
        });
        if (broken) {
          rewind();
          continue;
        }
        const fetched = [...readers.keys()].sort((a, b) => a - b);
        if (fetched.length === k) {
          let sources = 0;
          for (const i of fetched) sources |= 1 << i;
          await codeStripe(layout, sources, ((1 << k) - 1) & ~sources, data, parity);
          break;
        }
        const saved = new Map(fetched.map((i) => [i, Buffer.from(slot(i))]));
        if (await attempt(fetched.slice(0, k), fetched.slice(k), saved)) break;
        // The chunks disagree: find the one whose removal makes the others agree.
        let bad: number | undefined;
        if (fetched.length >= k + 2) {
          for (const b of fetched) {
            const rest = fetched.filter((i) => i !== b);
            if (await attempt(rest.slice(0, k), rest.slice(k), saved)) {
              bad = b;
              break;
            }
          }
        }
        if (bad !== undefined) {
          give(bad, new Error(`shard ${bad} disagrees with the others at stripe ${stripe}`));
          const rest = fetched.filter((i) => i !== bad);
          await attempt(rest.slice(0, k), rest.slice(k), saved);
          break;
        }
        if (waiting.length === 0)
          throw new Error(
            `the shards read disagree at stripe ${stripe} and too few are left to tell which is bad`,
          );
        want += 1;
        rewind();
      }
      const stripeStart = stripe * stripeBytes;
      const from = Math.max(start, stripeStart) - stripeStart;
      const to = Math.min(end, stripeStart + stripeBytes) - stripeStart;
      // A copy: the buffer is filled again for the next stripe while the consumer may still hold this.
      yield Buffer.from(data.subarray(from, to));
    }
  } finally {
    for (const reader of readers.values()) void reader.close();
  }
}

/** Reads exact-length chunks from an async byte stream. */
class ChunkReader {
  private readonly iterator: AsyncIterator<Uint8Array>;
  private rest: Uint8Array | undefined;

  constructor(source: AsyncIterable<Uint8Array>) {
    this.iterator = source[Symbol.asyncIterator]();
  }

  async readInto(target: Buffer): Promise<void> {
    let at = 0;
    while (at < target.length) {
      let piece = this.rest;
      this.rest = undefined;
      if (piece === undefined) {
        const next = await this.iterator.next();
        if (next.done) throw new Error(`shard ended ${target.length - at} bytes early`);
        piece = next.value;
      }
      const n = Math.min(piece.length, target.length - at);
      target.set(piece.subarray(0, n), at);
      at += n;
      if (n < piece.length) this.rest = piece.subarray(n);
    }
  }

  async close(): Promise<void> {
    try {
      await this.iterator.return?.();
    } catch {
      // closing a broken stream: nothing to keep
    }
  }
}
