import { afterEach, describe, expect, it, vi } from 'vitest';
import { plainApplication } from './application';
import { ReplicationEngine, type CycleReport } from './engine';
import { MemoryTransport, PeerRequestError } from './transport';
import { systemClock, type Ack, type Batch, type Clock, type Db, type ReplicationLogger } from './types';

type Rows = Array<Record<string, unknown>>;

/**
 * A stand-in for an empty, quiet catalog: every query is recorded and answered as PostgreSQL would
 * for a site with nothing to inject, extract or send. `failNext` makes a matching query throw once.
 */
class FakeDb {
  readonly queries: string[] = [];
  failOn: RegExp | undefined;

  query(text: string): Promise<{ rows: Rows; rowCount: number }> {
    this.queries.push(text);
    if (this.failOn?.test(text)) {
      this.failOn = undefined;
      return Promise.reject(new Error('connection terminated'));
    }
    const rows = FakeDb.answer(text);
    return Promise.resolve({ rows, rowCount: rows.length });
  }

  connect(): Promise<{
    query: FakeDb['query'];
    release: () => void;
    on: () => void;
    off: () => void;
  }> {
    return Promise.resolve({
      query: (text: string) => this.query(text),
      release: () => undefined,
      on: () => undefined,
      off: () => undefined,
    });
  }

  count(pattern: RegExp): number {
    return this.queries.filter((q) => pattern.test(q)).length;
  }

  asDb(): Db {
    return this as unknown as Db;
  }

  private static answer(text: string): Rows {
    if (/SELECT DISTINCT origin FROM repl_incoming/.test(text)) return [];
    if (/SELECT last_seq FROM repl_local/.test(text)) return [{ last_seq: '0' }];
    if (/WITH moved AS \(DELETE FROM repl_changes/.test(text)) return [{ txs: '0', changes: null }];
    if (/FROM repl_outgoing o JOIN repl_log l ON l.seq = o.seq\s+WHERE o.peer_id = \$1 ORDER BY/.test(text))
      return [];
    if (/min\(seq\) FROM repl_outgoing/.test(text)) return [{ queued: null, last: '0', logged: null }];
    if (/count\(\*\) AS txs, sum\(l.change_count\)/.test(text))
      return [{ txs: '0', changes: null, oldest: null }];
    if (/count\(\*\) AS n/.test(text)) return [{ n: '0' }];
    return [];
  }
}

/** A clock the test drives: `sleep` resolves when the test advances past its deadline, or on abort. */
class FakeClock implements Clock {
  time = 1_800_000_000_000;
  readonly requested: number[] = [];
  private pending: Array<{ until: number; wake: () => void }> = [];

  now(): number {
    return this.time;
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.requested.push(ms);
    return new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const entry = {
        until: this.time + ms,
        wake: () => {
          this.pending = this.pending.filter((p) => p !== entry);
          resolve();
        },
      };
      this.pending.push(entry);
      signal?.addEventListener('abort', () => entry.wake(), { once: true });
    });
  }

  get sleeping(): number {
    return this.pending.length;
  }

  advance(ms: number): void {
    this.time += ms;
    for (const p of [...this.pending]) if (p.until <= this.time) p.wake();
  }
}

/** Records batches; `gate` (when set) holds every send until released. */
class RecordingTransport {
  readonly sent: Array<{ peer: string; batch: Batch }> = [];
  down = new Set<string>();
  gate: Promise<void> | undefined;
  inFlight = 0;
  maxInFlight = 0;

  async send(peer: string, batch: Batch): Promise<Ack> {
    this.inFlight += 1;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.gate) await this.gate;
      if (this.down.has(peer)) throw new PeerRequestError(`${peer} unreachable`);
      this.sent.push({ peer, batch });
      return { have: 0 };
    } finally {
      this.inFlight -= 1;
    }
  }
}

class RecordingLogger implements ReplicationLogger {
  readonly lines: Array<{ level: 'log' | 'warn' | 'error'; message: string }> = [];
  log(message: string): void {
    this.lines.push({ level: 'log', message });
  }
  warn(message: string): void {
    this.lines.push({ level: 'warn', message });
  }
  error(message: string): void {
    this.lines.push({ level: 'error', message });
  }
}

function setup(cycleMs = 1000) {
  const db = new FakeDb();
  const clock = new FakeClock();
  const transport = new RecordingTransport();
  const logger = new RecordingLogger();
  const reports: CycleReport[] = [];
  const engine = new ReplicationEngine({
    db: db.asDb(),
    siteId: 'lsu',
    peers: ['tulane', 'uno'],
    transport,
    clock,
    logger,
    cycleMs,
    application: plainApplication,
  });
  engine.onCycle = (r) => reports.push(r);
  return { db, clock, transport, logger, reports, engine };
}

/** A batch of one transaction from `origin`. */
function batchOf(origin: string): Batch {
  return {
    origin,
    txs: [{ seq: 1, changes: [{ t: 'users', o: 'I', k: '9', d: { id: 9 }, s: 5, b: null, bs: null }] }],
  };
}

let stopAll: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const stop of stopAll) await stop();
  stopAll = [];
});

function started(s: ReturnType<typeof setup>): ReturnType<typeof setup> {
  s.engine.start();
  stopAll.push(() => s.engine.stop());
  return s;
}

describe('ReplicationEngine cycle loop (fake clock, fake catalog)', () => {
  it('runs a cycle at once, then sleeps the configured interval between cycles', async () => {
    const s = started(setup(1500));
    await vi.waitFor(() => expect(s.clock.sleeping).toBe(1));
    expect(s.reports).toHaveLength(1);
    // First the dispatch's patience for slow peers (at least 2 s; cut short once both answered),
    // then the pause between cycles.
    expect(s.clock.requested).toEqual([2000, 1500]);
    // Each cycle sends every peer a (here empty) batch: the answer tells what the peer has.
    expect(s.transport.sent.map((x) => x.peer).sort()).toEqual(['tulane', 'uno']);
    expect(s.transport.sent[0]!.batch).toEqual({ origin: 'lsu', txs: [] });

    s.clock.advance(1499);
    await new Promise((r) => setTimeout(r, 20));
    expect(s.reports).toHaveLength(1);

    s.clock.advance(1);
    await vi.waitFor(() => expect(s.reports).toHaveLength(2));
    await vi.waitFor(() => expect(s.clock.sleeping).toBe(1));
    expect(s.transport.sent).toHaveLength(4);
  });

  it('cycles in order: inject, then extract, then dispatch', async () => {
    const s = setup();
    await s.engine.runCycle();
    const first = (re: RegExp) => s.db.queries.findIndex((q) => re.test(q));
    const inject = first(/FROM repl_incoming/);
    const extract = first(/WITH moved AS \(DELETE FROM repl_changes/);
    const dispatch = first(/UPDATE repl_peers SET last_attempt_at/);
    expect(inject).toBeGreaterThanOrEqual(0);
    expect(inject).toBeLessThan(extract);
    expect(extract).toBeLessThan(dispatch);
  });

  it('the cycle report carries start time and duration from the injected clock', async () => {
    const s = setup();
    const at = s.clock.time;
    const report = await s.engine.runCycle();
    expect(report.startedAt.getTime()).toBe(at);
    expect(report.durationMs).toBe(0);
    expect(report.dispatched).toEqual([
      { peer: 'tulane', ok: true, txs: 0, changes: 0 },
      { peer: 'uno', ok: true, txs: 0, changes: 0 },
    ]);
    expect(report.error).toBeUndefined();
    expect(s.reports).toEqual([report]);
  });

  it('nudge ends the sleep and starts the next cycle at once', async () => {
    const s = started(setup(30_000));
    await vi.waitFor(() => expect(s.clock.sleeping).toBe(1));
    s.engine.nudge();
    await vi.waitFor(() => expect(s.reports).toHaveLength(2));
    expect(s.clock.time).toBe(1_800_000_000_000);
  });

  it('nudge before start is harmless', () => {
    const s = setup();
    expect(() => s.engine.nudge()).not.toThrow();
    expect(s.reports).toHaveLength(0);
  });

  it('stop ends the sleep, and no cycle runs afterwards', async () => {
    const s = setup(30_000);
    s.engine.start();
    await vi.waitFor(() => expect(s.clock.sleeping).toBe(1));
    expect((await s.engine.status()).running).toBe(true);
    await s.engine.stop();
    expect(s.clock.sleeping).toBe(0);
    const cycles = s.reports.length;
    s.clock.advance(60_000);
    s.engine.nudge();
    await new Promise((r) => setTimeout(r, 20));
    expect(s.reports).toHaveLength(cycles);
    expect((await s.engine.status()).running).toBe(false);
  });

  it('stop waits for the cycle in flight', async () => {
    const s = setup();
    let release!: () => void;
    s.transport.gate = new Promise<void>((r) => (release = r));
    s.engine.start();
    await vi.waitFor(() => expect(s.transport.inFlight).toBe(2));
    let stopped = false;
    const stopping = s.engine.stop().then(() => (stopped = true));
    await new Promise((r) => setTimeout(r, 20));
    expect(stopped).toBe(false);
    release();
    await stopping;
    expect(s.reports).toHaveLength(1);
    expect(s.clock.sleeping).toBe(0);
  });

  it('start twice runs one loop', async () => {
    const s = started(setup());
    s.engine.start();
    await vi.waitFor(() => expect(s.clock.sleeping).toBe(1));
    await new Promise((r) => setTimeout(r, 20));
    expect(s.reports).toHaveLength(1);
    expect(s.clock.sleeping).toBe(1);
  });

  it('the engine can be started again after stop', async () => {
    const s = setup();
    s.engine.start();
    await vi.waitFor(() => expect(s.clock.sleeping).toBe(1));
    await s.engine.stop();
    started(s);
    await vi.waitFor(() => expect(s.reports).toHaveLength(2));
  });

  it('runCycle while the loop is in a cycle waits: cycles never overlap', async () => {
    const s = setup();
    let release!: () => void;
    s.transport.gate = new Promise<void>((r) => (release = r));
    started(s);
    await vi.waitFor(() => expect(s.transport.inFlight).toBe(2));
    const manual = s.engine.runCycle();
    await new Promise((r) => setTimeout(r, 20));
    // The manual cycle has not started dispatching (or even injecting) while the first one is held.
    expect(s.transport.inFlight).toBe(2);
    expect(s.db.count(/SELECT DISTINCT origin FROM repl_incoming/)).toBe(1);
    release();
    s.transport.gate = undefined;
    await manual;
    expect(s.transport.maxInFlight).toBe(2);
    expect(s.reports.length).toBeGreaterThanOrEqual(2);
  });

  it('the cycle runs from the start of one round to the next: a short round waits out the rest', async () => {
    const s = setup(1000);
    let release!: () => void;
    s.transport.gate = new Promise<void>((r) => (release = r));
    started(s);
    await vi.waitFor(() => expect(s.transport.inFlight).toBe(2));
    s.clock.advance(300);
    release();
    s.transport.gate = undefined;
    await vi.waitFor(() => expect(s.reports).toHaveLength(1));
    await vi.waitFor(() => expect(s.clock.requested.at(-1)).toBe(700));
  });

  it('a round longer than the cycle is followed by the next after a breath, not a whole cycle', async () => {
    const s = setup(1000);
    let release!: () => void;
    s.transport.gate = new Promise<void>((r) => (release = r));
    started(s);
    await vi.waitFor(() => expect(s.transport.inFlight).toBe(2));
    // Still within the dispatch's patience (2 s): the round waits on its peers.
    s.clock.advance(1500);
    release();
    s.transport.gate = undefined;
    await vi.waitFor(() => expect(s.clock.requested.at(-1)).toBe(100));
    s.clock.advance(100);
    await vi.waitFor(() => expect(s.reports).toHaveLength(2));
    // The second round took no time: the whole cycle follows it.
    await vi.waitFor(() => expect(s.clock.requested.at(-1)).toBe(1000));
  });

  it('a batch received while the round waits on its peers is injected at once', async () => {
    const s = setup(30_000);
    let release!: () => void;
    s.transport.gate = new Promise<void>((r) => (release = r));
    started(s);
    await vi.waitFor(() => expect(s.transport.inFlight).toBe(2));
    const injections = () => s.db.count(/SELECT DISTINCT origin FROM repl_incoming/);
    expect(injections()).toBe(1);
    // An empty batch (a peer's regular exchange) starts nothing.
    await s.engine.receive('tulane', { origin: 'tulane', txs: [] });
    await new Promise((r) => setTimeout(r, 20));
    expect(injections()).toBe(1);
    await s.engine.receive('tulane', batchOf('tulane'));
    await vi.waitFor(() => expect(injections()).toBe(2));
    // The round is still waiting on its peers.
    expect(s.transport.inFlight).toBe(2);
    expect(s.reports).toHaveLength(0);
    release();
    s.transport.gate = undefined;
    await vi.waitFor(() => expect(s.reports.length).toBeGreaterThanOrEqual(1));
  });

  it('without the loop (runCycle only), a received batch waits for the next cycle', async () => {
    const s = setup();
    await s.engine.receive('tulane', batchOf('tulane'));
    await new Promise((r) => setTimeout(r, 20));
    expect(s.db.count(/SELECT DISTINCT origin FROM repl_incoming/)).toBe(0);
    await s.engine.runCycle();
    expect(s.db.count(/SELECT DISTINCT origin FROM repl_incoming/)).toBe(1);
  });

  it('injections asked for while one runs share the next run, one at a time', async () => {
    const s = setup(30_000);
    let release!: () => void;
    s.transport.gate = new Promise<void>((r) => (release = r));
    started(s);
    await vi.waitFor(() => expect(s.transport.inFlight).toBe(2));
    let inside = 0;
    let most = 0;
    const query = s.db.query.bind(s.db);
    s.db.query = async (text: string) => {
      if (!/SELECT DISTINCT origin FROM repl_incoming/.test(text)) return query(text);
      inside += 1;
      most = Math.max(most, inside);
      await new Promise((r) => setTimeout(r, 30));
      inside -= 1;
      return query(text);
    };
    try {
      await s.engine.receive('tulane', batchOf('tulane'));
      await vi.waitFor(() => expect(inside).toBe(1));
      await Promise.all([1, 2, 3].map(() => s.engine.receive('tulane', batchOf('tulane'))));
      await new Promise((r) => setTimeout(r, 150));
      // The round's own run, the first batch's, then one run for the three that arrived during it.
      expect(s.db.count(/SELECT DISTINCT origin FROM repl_incoming/)).toBe(3);
      expect(most).toBe(1);
    } finally {
      release();
      s.transport.gate = undefined;
    }
  });

  it('a failing cycle is reported and logged, and the loop goes on', async () => {
    const s = setup();
    s.db.failOn = /SELECT DISTINCT origin FROM repl_incoming/;
    started(s);
    await vi.waitFor(() => expect(s.clock.sleeping).toBe(1));
    expect(s.reports[0]!.error).toBe('connection terminated');
    expect(s.logger.lines).toContainEqual({
      level: 'error',
      message: 'replication cycle failed: connection terminated',
    });
    expect(s.transport.sent).toHaveLength(0); // nothing dispatched after the failure
    s.clock.advance(1000);
    await vi.waitFor(() => expect(s.reports).toHaveLength(2));
    expect(s.reports[1]!.error).toBeUndefined();
  });

  it('runCycle rejects when the cycle fails, and the next one still runs', async () => {
    const s = setup();
    s.db.failOn = /WITH moved AS/;
    await expect(s.engine.runCycle()).rejects.toThrow('connection terminated');
    const next = await s.engine.runCycle();
    expect(next.error).toBeUndefined();
    expect(s.reports.map((r) => r.error)).toEqual(['connection terminated', undefined]);
  });

  it('an unreachable peer fails its dispatch, is warned about, and does not stop the others', async () => {
    const s = setup();
    s.transport.down.add('uno');
    const report = await s.engine.runCycle();
    expect(report.dispatched.find((d) => d.peer === 'tulane')).toMatchObject({ ok: true });
    expect(report.dispatched.find((d) => d.peer === 'uno')).toMatchObject({
      ok: false,
      error: 'uno unreachable',
    });
    const warnings = s.logger.lines.filter((l) => l.level === 'warn').map((l) => l.message);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/^peer uno: uno unreachable; its queue waits/);
    expect(s.db.count(/SET last_error = \$2/)).toBe(1);
  });

  it('at start-up, notes a peer that is not up yet at log level, saying when it is retried', async () => {
    const s = setup(3_600_000);
    s.transport.down.add('uno');
    started(s);
    await vi.waitFor(() => expect(s.reports).toHaveLength(1));
    expect(s.logger.lines).toEqual([
      {
        level: 'log',
        message:
          'peer uno is not reachable yet (uno unreachable); retried at the next cycle, in 60 min at the latest',
      },
    ]);
    // It comes up: no warning was ever given.
    s.transport.down.delete('uno');
    s.clock.advance(3_600_000);
    await vi.waitFor(() => expect(s.reports).toHaveLength(2));
    expect(s.reports[1]!.dispatched.every((d) => d.ok)).toBe(true);
    expect(s.logger.lines.filter((l) => l.level !== 'log')).toEqual([]);
  });

  it('warns once about a peer still unreachable after the start-up grace', async () => {
    const s = setup(30_000);
    s.transport.down.add('uno');
    started(s);
    for (let cycle = 1; cycle <= 6; cycle++) {
      await vi.waitFor(() => expect(s.reports).toHaveLength(cycle));
      await vi.waitFor(() => expect(s.clock.sleeping).toBe(1));
      s.clock.advance(30_000);
    }
    const warnings = s.logger.lines.filter((l) => l.level === 'warn').map((l) => l.message);
    expect(warnings).toEqual([
      'peer uno: uno unreachable; its queue waits and is retried at the next cycle, in 30 s at the latest',
    ]);
  });

  it('keeps the 20 most recent cycle reports in status, newest first', async () => {
    const s = setup();
    for (let i = 0; i < 25; i++) {
      s.clock.advance(1000);
      await s.engine.runCycle();
    }
    const status = await s.engine.status();
    expect(status.cycles).toHaveLength(20);
    expect(status.cycles[0]!.startedAt.getTime()).toBe(s.clock.time);
    expect(status.cycles[19]!.startedAt.getTime()).toBe(s.clock.time - 19_000);
    expect(status.site).toBe('lsu');
    expect(status.cycleSeconds).toBe(1);
    expect(status.peers.map((p) => p.peer)).toEqual(['tulane', 'uno']);
  });

  it('prunes the archive and log every 100th cycle', async () => {
    const s = setup();
    for (let i = 0; i < 99; i++) await s.engine.runCycle();
    expect(s.db.count(/DELETE FROM repl_archive/)).toBe(0);
    await s.engine.runCycle();
    expect(s.db.count(/DELETE FROM repl_archive/)).toBe(1);
    expect(s.db.count(/DELETE FROM repl_log/)).toBe(1);
  });
});

describe('MemoryTransport', () => {
  const batch: Batch = {
    origin: 'lsu',
    txs: [{ seq: 1, changes: [{ t: 'users', o: 'I', k: '1', d: { id: 1 }, s: 5, b: null, bs: null }] }],
  };

  it('delivers a JSON copy of the batch to the registered handler and returns its answer', async () => {
    const t = new MemoryTransport();
    const received: Batch[] = [];
    t.register('tulane', (b) => {
      received.push(b);
      return Promise.resolve({ have: 1 });
    });
    expect(await t.send('tulane', batch)).toEqual({ have: 1 });
    expect(received).toEqual([batch]);
    expect(received[0]).not.toBe(batch);
    expect(received[0]!.txs[0]!.changes).not.toBe(batch.txs[0]!.changes);
    expect(t.sent).toBe(1);
  });

  it('the JSON round trip drops what the wire cannot carry', async () => {
    const t = new MemoryTransport();
    let got: Batch | undefined;
    t.register('tulane', (b) => {
      got = b;
      return Promise.resolve({ have: 0 });
    });
    const when = new Date('2026-01-02T03:04:05.678Z');
    await t.send('tulane', {
      origin: 'lsu',
      txs: [
        {
          seq: 1,
          changes: [{ t: 'users', o: 'U', k: '1', d: { at: when, gone: undefined }, s: 5, b: 4, bs: 'lsu' }],
        },
      ],
    });
    expect(got!.txs[0]!.changes[0]!.d).toEqual({ at: '2026-01-02T03:04:05.678Z' });
  });

  it('an unknown peer is unreachable', async () => {
    const t = new MemoryTransport();
    await expect(t.send('nowhere', batch)).rejects.toThrow(PeerRequestError);
    await expect(t.send('nowhere', batch)).rejects.toThrow('nowhere unreachable');
  });

  it('a peer marked down is unreachable and receives nothing, until it is back', async () => {
    const t = new MemoryTransport();
    let calls = 0;
    t.register('uno', () => {
      calls += 1;
      return Promise.resolve({ have: 1 });
    });
    t.down.add('uno');
    await expect(t.send('uno', batch)).rejects.toThrow('uno unreachable');
    expect(calls).toBe(0);
    expect(t.sent).toBe(0);
    t.down.delete('uno');
    await expect(t.send('uno', batch)).resolves.toEqual({ have: 1 });
    expect(calls).toBe(1);
  });

  it('dropAcks delivers the batch but loses the answer', async () => {
    const t = new MemoryTransport();
    const received: Batch[] = [];
    t.register('uno', (b) => {
      received.push(b);
      return Promise.resolve({ have: 1 });
    });
    t.dropAcks.add('uno');
    await expect(t.send('uno', batch)).rejects.toThrow('uno: answer lost');
    expect(received).toHaveLength(1);
    expect(t.sent).toBe(1);
  });

  it("a handler's refusal reaches the sender", async () => {
    const t = new MemoryTransport();
    t.register('uno', () => Promise.reject(new Error('refused')));
    await expect(t.send('uno', batch)).rejects.toThrow('refused');
    expect(t.sent).toBe(0);
  });
});

describe('systemClock', () => {
  it('sleeps about the given time', async () => {
    const t0 = Date.now();
    await systemClock.sleep(30);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(25);
  });

  it('resolves at once when the signal is already aborted', async () => {
    const abort = new AbortController();
    abort.abort();
    const t0 = Date.now();
    await systemClock.sleep(60_000, abort.signal);
    expect(Date.now() - t0).toBeLessThan(1000);
  });

  it('resolves early when the signal aborts during the sleep, and removes its listener', async () => {
    const abort = new AbortController();
    const remove = vi.spyOn(abort.signal, 'removeEventListener');
    const t0 = Date.now();
    const sleeping = systemClock.sleep(60_000, abort.signal);
    setTimeout(() => abort.abort(), 10);
    await sleeping;
    expect(Date.now() - t0).toBeLessThan(1000);
    expect(remove).toHaveBeenCalledWith('abort', expect.any(Function));
  });

  it('removes its abort listener when the sleep ends normally', async () => {
    const abort = new AbortController();
    const remove = vi.spyOn(abort.signal, 'removeEventListener');
    await systemClock.sleep(5, abort.signal);
    expect(remove).toHaveBeenCalledWith('abort', expect.any(Function));
  });

  it('now is the wall clock', () => {
    const before = Date.now();
    const now = systemClock.now();
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
