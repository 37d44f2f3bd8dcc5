import { describe, expect, it } from 'vitest';
import type { Clock } from './clock';
import { Pacer } from './pace';
import {
  findingError,
  type HashResult,
  type ScrubFinding,
  type ScrubHasher,
  type ScrubRecorder,
  type ScrubSource,
  Scrubber,
} from './scrub';
import { FakeClock } from './testing';

const MiB = 1024 * 1024;
const PIECE = 64 * 1024;

interface Copy {
  id: number;
  checksum: string;
  size: number;
  verifiedAt: number | null;
  /** What the file holds now: its hash, or missing. */
  file: { sha256: string } | 'missing';
}

const copy = (id: number, verifiedAt: number | null, size = MiB, file?: Copy['file']): Copy => ({
  id,
  checksum: `sum-${id}`,
  size,
  verifiedAt,
  file: file ?? { sha256: `sum-${id}` },
});

/** The catalog's order, as the site's SQL has it: never verified first, then oldest verified, then id. */
function memorySource(
  copies: Copy[],
  calls?: Array<{ after: number | null; limit: number }>,
): ScrubSource<Copy> {
  const key = (c: Copy): [number, number] => [c.verifiedAt ?? -Infinity, c.id];
  const before = (a: [number, number], b: [number, number]): boolean =>
    a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);
  return {
    next: (after, limit, passStartedAt) => {
      calls?.push({ after: after?.id ?? null, limit });
      const rows = copies
        .filter((c) => c.verifiedAt === null || c.verifiedAt < passStartedAt)
        .filter((c) => after === null || before(key(after), key(c)))
        .sort((a, b) => (before(key(a), key(b)) ? -1 : 1))
        .slice(0, limit);
      return Promise.resolve(rows.map((c) => ({ ...c })));
    },
  };
}

/** Reads each copy in 64 KiB pieces without real I/O. */
function pieceHasher(copies: Copy[], log?: (id: number) => void): ScrubHasher<Copy> {
  return {
    async hash(c, onPiece): Promise<HashResult> {
      log?.(c.id);
      const file = copies.find((x) => x.id === c.id)!.file;
      if (file === 'missing') return null;
      for (let done = 0; done < c.size; done += PIECE) await onPiece(Math.min(PIECE, c.size - done));
      return { sha256: file.sha256, bytes: c.size };
    },
  };
}

function catalogRecorder(
  copies: Copy[],
  clock: Clock,
  found: Array<[number, ScrubFinding]>,
  changed = new Set<number>(),
): ScrubRecorder<Copy> {
  return {
    record: (c, finding) => {
      if (changed.has(c.id)) return Promise.resolve(false);
      found.push([c.id, finding]);
      if (finding.kind === 'ok') copies.find((x) => x.id === c.id)!.verifiedAt = clock.now();
      return Promise.resolve(true);
    },
  };
}

describe('Scrubber', () => {
  it.each([1, 4])(
    'keeps to its rate with %i at once: bytes hashed by any moment stay within the burst plus the rate',
    async (concurrency) => {
      const clock = new FakeClock(1_000_000);
      const copies = Array.from({ length: 16 }, (_, i) => copy(i + 1, null));
      const rate = 4 * MiB;
      const pacer = new Pacer({ bytesPerSecond: rate, burstBytes: PIECE, clock });
      const samples: Array<{ t: number; bytes: number }> = [];
      let bytes = 0;
      const scrubber = new Scrubber<Copy>({
        source: memorySource(copies),
        hasher: pieceHasher(copies),
        recorder: catalogRecorder(copies, clock, []),
        pacer,
        clock,
        intervalMs: 1000,
        batchSize: 5,
        concurrency,
        onBytes: (n) => {
          bytes += n;
          samples.push({ t: clock.now() - 1_000_000, bytes });
        },
      });
      const stats = await scrubber.pass();
      expect(stats.bytes).toBe(16 * MiB);
      expect(stats.ok).toBe(16);
      const seconds = (stats.finishedAt - stats.startedAt) / 1000;
      // 16 MiB at 4 MiB/s, less the burst that passes at once: 4 s within 2%.
      expect(seconds).toBeGreaterThan(((16 * MiB - PIECE) / rate) * 0.98);
      expect(seconds).toBeLessThan(((16 * MiB) / rate) * 1.02);
      // Never ahead of the budget (the piece being spent is what waits).
      for (const s of samples) expect(s.bytes).toBeLessThanOrEqual(PIECE + (rate * s.t) / 1000 + PIECE);
    },
  );

  it('checks never-verified copies first, then oldest verified, each once per pass, across batches', async () => {
    const clock = new FakeClock(10_000);
    const copies = [
      copy(1, 5_000),
      copy(2, null),
      copy(3, 1_000),
      copy(4, null),
      copy(5, 9_000),
      copy(6, 20_000), // verified after the pass started (a check on demand): not again in this pass
    ];
    const order: number[] = [];
    const calls: Array<{ after: number | null; limit: number }> = [];
    const scrubber = new Scrubber<Copy>({
      source: memorySource(copies, calls),
      hasher: pieceHasher(copies, (id) => order.push(id)),
      recorder: catalogRecorder(copies, clock, []),
      pacer: new Pacer({ bytesPerSecond: 0, clock }),
      clock,
      intervalMs: 1000,
      batchSize: 2,
    });
    const stats = await scrubber.pass();
    expect(order).toEqual([2, 4, 3, 1, 5]);
    expect(stats.checked).toBe(5);
    // The cursor moves on from the last copy of each batch; a short batch ends the pass.
    expect(calls.map((c) => c.after)).toEqual([null, 4, 1]);
    // The copies checked now carry the pass's time: a later pass takes them by id, then the newer one.
    clock.advance(20_000);
    order.length = 0;
    await scrubber.pass();
    expect(order).toEqual([1, 2, 3, 4, 5, 6]);
  });

  it('hashes up to `concurrency` copies at once, each once', async () => {
    const clock = new FakeClock();
    const copies = Array.from({ length: 23 }, (_, i) => copy(i + 1, null, 1000));
    let inFlight = 0;
    let most = 0;
    const hashed: number[] = [];
    const scrubber = new Scrubber<Copy>({
      source: memorySource(copies),
      hasher: {
        async hash(c) {
          inFlight++;
          most = Math.max(most, inFlight);
          await new Promise((r) => setTimeout(r, 1));
          inFlight--;
          hashed.push(c.id);
          return { sha256: c.checksum, bytes: 1000 };
        },
      },
      recorder: catalogRecorder(copies, clock, []),
      pacer: new Pacer({ bytesPerSecond: 0, clock }),
      clock,
      intervalMs: 1000,
      batchSize: 10,
      concurrency: 3,
    });
    const stats = await scrubber.pass();
    expect(most).toBe(3);
    expect(stats.ok).toBe(23);
    expect(hashed.sort((a, b) => a - b)).toEqual(copies.map((c) => c.id));
  });

  it('reports ok, missing and mismatch, and drops a finding on a copy that changed meanwhile', async () => {
    const clock = new FakeClock();
    const copies = [
      copy(1, null),
      copy(2, null, MiB, 'missing'),
      copy(3, null, MiB, { sha256: 'other' }),
      copy(4, null, MiB, 'missing'),
    ];
    const found: Array<[number, ScrubFinding]> = [];
    const seen: number[] = [];
    const scrubber = new Scrubber<Copy>({
      source: memorySource(copies),
      hasher: pieceHasher(copies),
      recorder: catalogRecorder(copies, clock, found, new Set([4])),
      pacer: new Pacer({ bytesPerSecond: 0, clock }),
      clock,
      intervalMs: 1000,
      onFinding: (c) => seen.push(c.id),
    });
    const stats = await scrubber.pass();
    expect(found).toEqual([
      [1, { kind: 'ok', bytes: MiB }],
      [2, { kind: 'missing', bytes: 0 }],
      [3, { kind: 'mismatch', bytes: MiB, found: 'other' }],
    ]);
    expect(seen).toEqual([1, 2, 3]);
    expect(stats).toMatchObject({ checked: 4, ok: 1, missing: 1, mismatch: 1, changed: 1, failed: 0 });
    expect(findingError(found[1]![1], 'sum-2')).toBe('file missing');
    expect(findingError(found[2]![1], 'sum-3')).toBe('SHA-256 differs: found other expected sum-3');
    expect(findingError(found[0]![1], 'sum-1')).toBeNull();
  });

  it('goes on after a read that fails, leaving that copy unrecorded', async () => {
    const clock = new FakeClock();
    const copies = [copy(1, null), copy(2, null), copy(3, null)];
    const found: Array<[number, ScrubFinding]> = [];
    const errors: Array<number | null> = [];
    const inner = pieceHasher(copies);
    const scrubber = new Scrubber<Copy>({
      source: memorySource(copies),
      hasher: {
        hash: (c, onPiece, signal) =>
          c.id === 2 ? Promise.reject(new Error('EIO')) : inner.hash(c, onPiece, signal),
      },
      recorder: catalogRecorder(copies, clock, found),
      pacer: new Pacer({ bytesPerSecond: 0, clock }),
      clock,
      intervalMs: 1000,
      onError: (_err, c) => errors.push(c?.id ?? null),
    });
    const stats = await scrubber.pass();
    expect(found.map(([id]) => id)).toEqual([1, 3]);
    expect(errors).toEqual([2]);
    expect(stats).toMatchObject({ checked: 2, ok: 2, failed: 1 });
  });

  it('spends nothing of the budget on a check on demand', async () => {
    const clock = new FakeClock();
    const copies = [copy(1, null, 8 * MiB)];
    const pacer = new Pacer({ bytesPerSecond: MiB, burstBytes: PIECE, clock });
    const scrubber = new Scrubber<Copy>({
      source: memorySource(copies),
      hasher: pieceHasher(copies),
      recorder: catalogRecorder(copies, clock, []),
      pacer,
      clock,
      intervalMs: 1000,
    });
    const check = await scrubber.check(copies[0]!, { paced: false });
    expect(check).toEqual({ finding: { kind: 'ok', bytes: 8 * MiB }, recorded: true });
    expect(clock.now()).toBe(0);
    expect(pacer.delayFor(PIECE)).toBe(0);
  });

  it('pauses when there is nothing to check, and wake starts the next pass', async () => {
    const sleeps: number[] = [];
    let release: (() => void) | null = null;
    // A clock whose sleep waits until woken or stopped, so the loop's pauses can be counted.
    const clock: Clock = {
      now: () => 0,
      sleep: (ms, signal) =>
        new Promise<void>((resolve, reject) => {
          sleeps.push(ms);
          release = resolve;
          signal?.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
        }),
    };
    const calls: Array<{ after: number | null; limit: number }> = [];
    const scrubber = new Scrubber<Copy>({
      source: memorySource([], calls),
      hasher: pieceHasher([]),
      recorder: catalogRecorder([], clock, []),
      pacer: new Pacer({ bytesPerSecond: MiB, clock }),
      clock,
      intervalMs: 60_000,
    });
    scrubber.start();
    await until(() => sleeps.length === 1);
    expect(calls).toHaveLength(1);
    expect(sleeps).toEqual([60_000]);
    scrubber.wake();
    await until(() => sleeps.length === 2);
    expect(calls).toHaveLength(2);
    release!();
    await until(() => sleeps.length === 3);
    expect(calls).toHaveLength(3);
    await scrubber.stop();
    expect(scrubber.running).toBe(false);
    // Started to wait first: no pass before the first pause ends.
    calls.length = 0;
    sleeps.length = 0;
    scrubber.start({ delayFirst: true });
    await until(() => sleeps.length === 1);
    expect(calls).toHaveLength(0);
    release!();
    await until(() => sleeps.length === 2);
    expect(calls).toHaveLength(1);
    await scrubber.stop();
  });

  it('stops promptly in the middle of a hash, recording nothing for it', async () => {
    const clock = new FakeClock();
    const copies = [copy(1, null), copy(2, null)];
    const found: Array<[number, ScrubFinding]> = [];
    let hashing = 0;
    const scrubber = new Scrubber<Copy>({
      source: memorySource(copies),
      // A hash that never ends on its own (a huge file, a hung disk) until the signal aborts.
      hasher: {
        hash: (_c, _onPiece, signal) =>
          new Promise<HashResult>((_resolve, reject) => {
            hashing++;
            signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
          }),
      },
      recorder: catalogRecorder(copies, clock, found),
      pacer: new Pacer({ bytesPerSecond: 0, clock }),
      clock,
      intervalMs: 1000,
    });
    scrubber.start();
    await until(() => hashing === 1);
    const t0 = Date.now();
    await scrubber.stop();
    expect(Date.now() - t0).toBeLessThan(500);
    expect(found).toEqual([]);
    expect(hashing).toBe(1);
    expect(scrubber.running).toBe(false);
  });

  it('stops promptly while paced (waiting out the budget)', async () => {
    const copies = [copy(1, null, 64 * MiB)];
    const found: Array<[number, ScrubFinding]> = [];
    let pieces = 0;
    // Real time: 64 MiB at 1 MiB/s would take a minute.
    const pacer = new Pacer({ bytesPerSecond: MiB, burstBytes: PIECE });
    const scrubber = new Scrubber<Copy>({
      source: memorySource(copies),
      hasher: pieceHasher(copies),
      recorder: catalogRecorder(copies, { now: Date.now, sleep: () => Promise.resolve() }, found),
      pacer,
      intervalMs: 1000,
      onBytes: () => pieces++,
    });
    scrubber.start();
    await until(() => pieces >= 2);
    const t0 = Date.now();
    await scrubber.stop();
    expect(Date.now() - t0).toBeLessThan(500);
    expect(found).toEqual([]);
    expect(pieces).toBeLessThan(40);
  });
});

async function until(cond: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 1));
  }
}
