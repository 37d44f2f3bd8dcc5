import { describe, expect, it } from 'vitest';
import {
  Mover,
  SourceUnavailableError,
  type CopyJob,
  type MoverCatalog,
  type MoverTransfers,
  type SurplusCopy,
  type TransferContext,
} from './mover';
import { FakeClock } from './testing';

const MiB = 1024 * 1024;

function job(id: string, size: number, sources = ['a'], attempts = 0): CopyJob {
  return {
    replicaId: id,
    objectId: `o${id}`,
    path: `/p/${id}`,
    size,
    checksum: `sha256:${id}`,
    attempts,
    sources,
  };
}

class FakeCatalog implements MoverCatalog {
  jobs: CopyJob[] = [];
  surplusCopies: SurplusCopy[] = [];
  failures: Array<{ id: string; error: string; attempts: number; next: number }> = [];
  plans = 0;
  plan() {
    this.plans += 1;
    return Promise.resolve({ added: 0, staled: 0 });
  }
  due(limit: number, skip: readonly string[]) {
    return Promise.resolve(this.jobs.filter((j) => !skip.includes(j.replicaId)).slice(0, limit));
  }
  recordFailure(j: CopyJob, error: string, attempts: number, next: Date) {
    this.failures.push({ id: j.replicaId, error, attempts, next: next.getTime() });
    this.jobs = this.jobs.filter((x) => x.replicaId !== j.replicaId);
    return Promise.resolve();
  }
  surplus() {
    return Promise.resolve(this.surplusCopies);
  }
}

/** Transfers that complete when released, recording what was asked. */
class FakeTransfers implements MoverTransfers {
  singles: Array<{ id: string; source: string }> = [];
  batches: Array<{ ids: string[]; source: string }> = [];
  keepAnswers = new Map<string, boolean>();
  keepAsked: string[] = [];
  removed: string[] = [];
  fail: Error | undefined;
  private releases: Array<() => void> = [];
  hold = false;
  constructor(private readonly catalog: FakeCatalog) {}
  private async wait(): Promise<void> {
    if (this.hold) await new Promise<void>((r) => this.releases.push(r));
  }
  release(): void {
    for (const r of this.releases.splice(0)) r();
  }
  async copy(j: CopyJob, source: string, context: TransferContext) {
    this.singles.push({ id: j.replicaId, source });
    await context.received(j.replicaId, j.size);
    await this.wait();
    if (this.fail) throw this.fail;
    this.catalog.jobs = this.catalog.jobs.filter((x) => x.replicaId !== j.replicaId);
  }
  async copyBatch(jobs: CopyJob[], source: string, context: TransferContext) {
    this.batches.push({ ids: jobs.map((j) => j.replicaId), source });
    for (const j of jobs) await context.received(j.replicaId, j.size);
    await this.wait();
    const out = new Map<string, Error | undefined>();
    for (const j of jobs) {
      out.set(j.replicaId, j.replicaId === 'bad' ? new Error('checksum differs') : undefined);
      if (j.replicaId !== 'bad')
        this.catalog.jobs = this.catalog.jobs.filter((x) => x.replicaId !== j.replicaId);
    }
    return out;
  }
  keep(site: string, objectId: string) {
    this.keepAsked.push(`${site}:${objectId}`);
    return Promise.resolve(this.keepAnswers.get(site) ?? true);
  }
  remove(copy: SurplusCopy) {
    this.removed.push(copy.replicaId);
    return Promise.resolve(true);
  }
}

function setup(options: Partial<ConstructorParameters<typeof Mover>[0]> = {}) {
  const clock = new FakeClock(1_000_000);
  const catalog = new FakeCatalog();
  const transfers = new FakeTransfers(catalog);
  const mover = new Mover({ siteId: 'b', catalog, transfers, clock, ...options });
  return { clock, catalog, transfers, mover };
}

describe('Mover', () => {
  it('batches small objects per source site and copies large ones alone', async () => {
    const { catalog, transfers, mover } = setup();
    catalog.jobs = [
      job('1', 10, ['a']),
      job('2', 20, ['c', 'a']),
      job('3', 30, ['a']),
      job('4', 5 * MiB, ['a']),
    ];
    const report = await mover.pass();
    await mover.idle();
    expect(report).toMatchObject({ started: 3, objects: 4 });
    expect(transfers.batches).toEqual([
      { ids: ['1', '3'], source: 'a' },
      { ids: ['2'], source: 'c' },
    ]);
    expect(transfers.singles).toEqual([{ id: '4', source: 'a' }]);
    expect(mover.status().bytesTotal).toBe(60 + 5 * MiB);
  });

  it('paced passes space planning and trimming by ten times their last cost; copies are not held back', async () => {
    const { clock, catalog, transfers, mover } = setup();
    let surplusCalls = 0;
    catalog.plan = () => {
      catalog.plans += 1;
      clock.advance(300); // a plan of a large catalog: 300 ms
      return Promise.resolve({ added: 0, staled: 0 });
    };
    catalog.surplus = () => {
      surplusCalls += 1;
      clock.advance(100);
      return Promise.resolve([]);
    };
    await mover.pass({ paced: true });
    expect([catalog.plans, surplusCalls]).toEqual([1, 1]);
    // 1 s after the plan started: not due (3 s), but the due copies start.
    clock.advance(600);
    catalog.jobs = [job('1', 10)];
    expect(await mover.pass({ paced: true })).toMatchObject({ started: 1 });
    await mover.idle();
    expect(transfers.batches).toEqual([{ ids: ['1'], source: 'a' }]);
    expect([catalog.plans, surplusCalls]).toEqual([1, 1]);
    // The trim (100 ms) is due 1 s after its start, the plan 3 s after its start.
    clock.advance(1000);
    await mover.pass({ paced: true });
    expect([catalog.plans, surplusCalls]).toEqual([1, 2]);
    clock.advance(2000);
    await mover.pass({ paced: true });
    expect(catalog.plans).toBe(2);
    // A pass asked for directly (tests, the API) always plans and trims.
    await mover.pass();
    expect([catalog.plans, surplusCalls]).toEqual([3, 4]);
  });

  it('keeps to the concurrency across passes and does not take a row twice', async () => {
    const { catalog, transfers, mover } = setup({ concurrency: 2 });
    transfers.hold = true;
    catalog.jobs = ['1', '2', '3'].map((id) => job(id, 2 * MiB));
    await mover.pass();
    await mover.pass();
    expect(transfers.singles.map((s) => s.id)).toEqual(['1', '2']);
    expect(
      mover
        .status()
        .inFlight.map((t) => t.replicaId)
        .sort(),
    ).toEqual(['1', '2']);
    expect(mover.status().inFlight[0]).toMatchObject({ bytesDone: 2 * MiB, size: 2 * MiB, from: 'a' });
    transfers.hold = false;
    transfers.release();
    await mover.idle();
    // The freed slots are filled at once, without waiting for the next pass.
    expect(transfers.singles.map((s) => s.id)).toEqual(['1', '2', '3']);
    await mover.pass();
    await mover.idle();
    expect(transfers.singles.map((s) => s.id)).toEqual(['1', '2', '3']);
  });

  it('records failures with exponential backoff, per object of a batch', async () => {
    const { clock, catalog, transfers, mover } = setup({ backoffMs: 1000, maxBackoffMs: 5000 });
    catalog.jobs = [job('bad', 10, ['a'], 0), job('ok', 10)];
    await mover.pass();
    await mover.idle();
    expect(catalog.failures).toEqual([
      { id: 'bad', error: 'checksum differs', attempts: 1, next: clock.now() + 1000 },
    ]);
    transfers.fail = new Error('boom');
    catalog.failures = [];
    catalog.jobs = [job('x', 2 * MiB, ['a'], 3), job('y', 2 * MiB, ['a'], 10)];
    await mover.pass();
    await mover.idle();
    expect(catalog.failures.map((f) => [f.id, f.attempts, f.next - clock.now()])).toEqual([
      ['x', 4, 5000], // 1 s · 2^3 = 8 s, capped at 5 s
      ['y', 11, 5000],
    ]);
  });

  it('tries a source that failed last, and fails a row that no site can serve', async () => {
    const { catalog, transfers, mover } = setup();
    transfers.fail = new SourceUnavailableError('a', 'a is down');
    catalog.jobs = [job('1', 2 * MiB, ['a', 'c'])];
    await mover.pass();
    await mover.idle();
    transfers.fail = undefined;
    catalog.jobs = [job('2', 2 * MiB, ['a', 'c']), job('3', 2 * MiB, [])];
    await mover.pass();
    await mover.idle();
    expect(transfers.singles.map((s) => `${s.id}@${s.source}`)).toEqual(['1@a', '2@c']);
    expect(catalog.failures.map((f) => f.id)).toEqual(['1', '3']);
    expect(catalog.failures[1]!.error).toMatch(/no other site/);
  });

  it('paces the bytes it receives to the bandwidth', async () => {
    const { clock, catalog, mover } = setup({ bytesPerSecond: MiB });
    const start = clock.now();
    catalog.jobs = [job('1', 4 * MiB), job('2', 3 * MiB)];
    await mover.pass();
    await mover.idle();
    // 7 MiB at 1 MiB/s, less the first second's burst.
    expect(clock.now() - start).toBeGreaterThanOrEqual(6000);
  });

  describe('trim', () => {
    const surplus = (over: Partial<SurplusCopy> = {}): SurplusCopy => ({
      replicaId: 'r1',
      objectId: 'o1',
      path: '/p/f',
      checksum: 'sha256:x',
      good: true,
      wanted: ['a', 'c'],
      goodAt: ['a', 'b', 'c'],
      ...over,
    });

    it('removes a good surplus copy only after every wanted site promised', async () => {
      const { catalog, transfers, mover } = setup();
      catalog.surplusCopies = [surplus()];
      expect((await mover.pass()).trimmed).toBe(1);
      expect(transfers.keepAsked).toEqual(['a:o1', 'c:o1']);
      expect(transfers.removed).toEqual(['r1']);
    });

    it('keeps it when a wanted site refuses, is not good yet, or there is no wanted site', async () => {
      const { catalog, transfers, mover } = setup();
      transfers.keepAnswers.set('c', false);
      catalog.surplusCopies = [surplus()];
      await mover.pass();
      transfers.keepAnswers.clear();
      catalog.surplusCopies = [surplus({ goodAt: ['a', 'b'] }), surplus({ wanted: [] })];
      await mover.pass();
      expect(transfers.removed).toEqual([]);
      expect(transfers.keepAsked).toEqual(['a:o1', 'c:o1']);
    });

    it('removes a surplus copy that is not good without asking anyone', async () => {
      const { catalog, transfers, mover } = setup();
      catalog.surplusCopies = [surplus({ good: false, goodAt: [] })];
      await mover.pass();
      expect(transfers.removed).toEqual(['r1']);
      expect(transfers.keepAsked).toEqual([]);
    });

    it('does not trim what it promised to keep, until the lease ends; refuses promises while trimming', async () => {
      const { clock, catalog, transfers, mover } = setup({ leaseMs: 60_000 });
      expect(mover.reserve('o1')).toBeDefined();
      catalog.surplusCopies = [surplus()];
      await mover.pass();
      expect(transfers.removed).toEqual([]);
      clock.advance(60_001);
      // While asking the wanted sites, this site promises nothing about the object.
      let answered: unknown = 'not asked';
      transfers.keep = () => {
        answered = mover.reserve('o1');
        return Promise.resolve(true);
      };
      await mover.pass();
      expect(answered).toBeUndefined();
      expect(transfers.removed).toEqual(['r1']);
      expect(mover.reserve('o1')).toBeDefined();
    });

    it('a promise withdrawn (the answer was no) does not hold back a trim; others given meanwhile do', async () => {
      const { catalog, transfers, mover } = setup();
      const first = mover.reserve('o1')!;
      const second = mover.reserve('o1')!;
      first.release();
      expect(mover.leased('o1')).toBe(true);
      second.release();
      expect(mover.leased('o1')).toBe(false);
      catalog.surplusCopies = [surplus()];
      await mover.pass();
      expect(transfers.removed).toEqual(['r1']);
    });

    it('a removal claimed outside the trim (eviction) excludes promises, and waits for those given', () => {
      const { clock, mover } = setup({ leaseMs: 10_000 });
      const promise = mover.reserve('o1')!;
      expect(mover.claimRemoval('o1'), 'promised to keep: no removal').toBeUndefined();
      promise.release();
      const claim = mover.claimRemoval('o1')!;
      expect(claim).toBeDefined();
      expect(mover.reserve('o1'), 'removing: no promise').toBeUndefined();
      expect(mover.claimRemoval('o1'), 'one removal at a time').toBeUndefined();
      claim.release();
      expect(mover.reserve('o1')).toBeDefined();
      clock.advance(10_001);
      expect(mover.claimRemoval('o1')).toBeDefined();
      expect(mover.leaseMs).toBe(10_000);
    });

    it('does not remove the copy when the promises took more than half the lease', async () => {
      const { clock, catalog, transfers, mover } = setup({ leaseMs: 10_000 });
      transfers.keep = () => {
        clock.advance(3000);
        return Promise.resolve(true);
      };
      catalog.surplusCopies = [surplus()];
      await mover.pass();
      expect(transfers.removed).toEqual([]);
    });
  });

  it('stops: aborts transfers in flight without recording them as failures', async () => {
    const { catalog, transfers, mover } = setup();
    transfers.copy = (_j, _s, context) =>
      new Promise((_resolve, reject) =>
        context.signal.addEventListener('abort', () => reject(new Error('aborted'))),
      );
    catalog.jobs = [job('1', 2 * MiB)];
    await mover.pass();
    expect(mover.copying('1')).toBe(true);
    await mover.stop();
    expect(mover.copying('1')).toBe(false);
    expect(catalog.failures).toEqual([]);
  });
});
