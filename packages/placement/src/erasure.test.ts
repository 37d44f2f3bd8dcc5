import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  decodeRange,
  encodeStripes,
  erasureLayout,
  shardSize,
  storedBytes,
  stripesFor,
  type ErasureLayout,
  type ShardRange,
} from './erasure';

async function* pieces(bytes: Buffer, size = 7919): AsyncGenerator<Buffer> {
  for (let at = 0; at < bytes.length; at += size) {
    await Promise.resolve();
    yield bytes.subarray(at, at + size);
  }
}

async function encode(layout: ErasureLayout, bytes: Buffer): Promise<Buffer[]> {
  const parts: Buffer[][] = Array.from({ length: layout.k + layout.m }, () => []);
  for await (const stripe of encodeStripes(layout, pieces(bytes))) {
    stripe.shards.forEach((s, i) => parts[i]!.push(Buffer.from(s)));
  }
  return parts.map((p) => Buffer.concat(p));
}

async function collect(source: AsyncIterable<Buffer>): Promise<Buffer> {
  const out: Buffer[] = [];
  for await (const b of source) out.push(b);
  return Buffer.concat(out);
}

function opener(shards: Buffer[], broken = new Set<number>(), opened: ShardRange[] = []) {
  return (index: number, range: ShardRange): Promise<AsyncIterable<Uint8Array>> => {
    if (broken.has(index)) return Promise.reject(new Error(`shard ${index} unreachable`));
    opened.push(range);
    return Promise.resolve(pieces(shards[index]!.subarray(range.start, range.end), 4099));
  };
}

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

describe('erasure layout', () => {
  it('picks chunks no larger than needed, multiples of 8, at most the maximum', () => {
    expect(erasureLayout(4, 2, 0).chunk).toBe(8);
    expect(erasureLayout(4, 2, 1).chunk).toBe(8);
    expect(erasureLayout(4, 2, 100).chunk).toBe(32);
    expect(erasureLayout(4, 2, 1 << 30).chunk).toBe(1 << 20);
    expect(shardSize(erasureLayout(4, 2, 0))).toBe(0);
    expect(storedBytes(erasureLayout(4, 2, 1 << 30)) / (1 << 30)).toBe(1.5);
    expect(() => erasureLayout(0, 2, 10)).toThrow(/k must be/);
    expect(() => erasureLayout(4, 7, 10)).toThrow(/m must be/);
  });

  it('maps a byte range to the stripes it touches', () => {
    const layout = erasureLayout(4, 2, 1000, 64); // stripes of 256 bytes
    expect(stripesFor(layout, 0, 1000)).toEqual({ first: 0, last: 3, shard: { start: 0, end: 256 } });
    expect(stripesFor(layout, 256, 257)).toEqual({ first: 1, last: 1, shard: { start: 64, end: 128 } });
    expect(stripesFor(layout, 255, 257)).toEqual({ first: 0, last: 1, shard: { start: 0, end: 128 } });
  });
});

describe('encode and decode', () => {
  const chunk = 64;
  const stripe = 4 * chunk;
  const sizes = [0, 1, stripe - 1, stripe, stripe + 1, 3 * stripe + 5, 4 * 1000 + 3, 10 * stripe];

  for (const size of sizes) {
    it(`rebuilds ${size} bytes from every choice of 4 of 6 shards`, async () => {
      const bytes = randomBytes(size);
      const layout = erasureLayout(4, 2, size, chunk);
      const shards = await encode(layout, bytes);
      for (const s of shards) expect(s.length).toBe(shardSize(layout));
      // The data shards are the object's bytes, chunk by chunk, zero-padded at the end.
      if (size > 0) expect(Buffer.concat(shards.slice(0, 4)).length).toBeGreaterThanOrEqual(size);
      for (let a = 0; a < 6; a += 1) {
        for (let b = a + 1; b < 6; b += 1) {
          const out = await collect(
            decodeRange(layout, 0, size, {
              candidates: [0, 1, 2, 3, 4, 5],
              open: opener(shards, new Set([a, b])),
            }),
          );
          expect(sha(out)).toBe(sha(bytes));
        }
      }
    });
  }

  it('serves ranges, fetching only the stripes they touch', async () => {
    const size = 10 * stripe + 17;
    const bytes = randomBytes(size);
    const layout = erasureLayout(4, 2, size, chunk);
    const shards = await encode(layout, bytes);
    const ranges: Array<[number, number]> = [
      [0, 1],
      [stripe - 1, stripe + 1],
      [5 * stripe + 3, 7 * stripe],
      [size - 1, size],
      [100, size + 1000],
    ];
    for (const [start, end] of ranges) {
      const opened: ShardRange[] = [];
      const out = await collect(
        decodeRange(layout, start, end, {
          candidates: [0, 1, 2, 3, 4, 5],
          open: opener(shards, new Set([1, 3]), opened),
        }),
      );
      expect(out.equals(bytes.subarray(start, end))).toBe(true);
      const { shard } = stripesFor(layout, start, Math.min(end, size));
      for (const r of opened) expect(r).toEqual(shard);
    }
  });

  it('goes on from another shard when one breaks off mid-stream', async () => {
    const size = 20 * stripe;
    const bytes = randomBytes(size);
    const layout = erasureLayout(4, 2, size, chunk);
    const shards = await encode(layout, bytes);
    const failed: number[] = [];
    const open = (index: number, range: ShardRange): Promise<AsyncIterable<Uint8Array>> => {
      const body = shards[index]!.subarray(range.start, range.end);
      return Promise.resolve(
        (async function* () {
          if (index === 2 && range.start === 0) {
            yield body.subarray(0, 5 * chunk + 3);
            throw new Error('connection reset');
          }
          yield* pieces(body, 999);
        })(),
      );
    };
    const out = await collect(
      decodeRange(layout, 0, size, {
        candidates: [0, 1, 2, 3, 4, 5],
        open,
        onShardFailed: (i) => failed.push(i),
      }),
    );
    expect(out.equals(bytes)).toBe(true);
    expect(failed).toEqual([2]);
  });

  it('fails when fewer than k shards can be read', async () => {
    const size = 3 * stripe;
    const layout = erasureLayout(4, 2, size, chunk);
    const shards = await encode(layout, randomBytes(size));
    await expect(
      collect(
        decodeRange(layout, 0, size, {
          candidates: [0, 1, 2, 3, 4, 5],
          open: opener(shards, new Set([0, 4, 5])),
        }),
      ),
    ).rejects.toThrow(/only 3 of the 4 shards/);
  });

  it('refuses a source of another length than the layout says', async () => {
    const layout = erasureLayout(4, 2, 100, chunk);
    await expect(encode(layout, randomBytes(99))).rejects.toThrow(/has 99 bytes, 100 expected/);
    await expect(encode(layout, randomBytes(101))).rejects.toThrow(/more than the 100 bytes/);
  });
});

describe('verified decoding', () => {
  const chunk = 64;
  const stripe = 4 * chunk;

  it('leaves out a shard whose bytes were changed and returns the right bytes', async () => {
    const size = 12 * stripe + 9;
    const bytes = randomBytes(size);
    const layout = erasureLayout(4, 2, size, chunk);
    for (const bad of [0, 2, 3, 4, 5]) {
      const shards = await encode(layout, bytes);
      const damaged = shards[bad]!;
      damaged[5 * chunk + 7] = damaged[5 * chunk + 7]! ^ 0xff; // one byte of stripe 5
      const failed: number[] = [];
      const out = await collect(
        decodeRange(layout, 0, size, {
          candidates: [0, 1, 2, 3, 4, 5],
          open: opener(shards),
          verify: true,
          onShardFailed: (i) => failed.push(i),
        }),
      );
      expect(sha(out), `shard ${bad} damaged`).toBe(sha(bytes));
      // Shards 0-4 are read (one more than needed): a damaged shard 5 is never read at all.
      expect(failed).toEqual(bad === 5 ? [] : [bad]);
    }
  });

  it('refuses to guess when too few shards are left to tell the bad one', async () => {
    const size = 4 * stripe;
    const bytes = randomBytes(size);
    const layout = erasureLayout(4, 2, size, chunk);
    const shards = await encode(layout, bytes);
    const damaged = shards[1]!;
    damaged[3] = damaged[3]! ^ 1;
    await expect(
      collect(
        decodeRange(layout, 0, size, {
          candidates: [0, 1, 2, 3, 4, 5],
          open: opener(shards, new Set([5])),
          verify: true,
        }),
      ),
    ).rejects.toThrow(/disagree/);
  });
});
