import type { ReplicatedApplication } from './application';
import { Archive } from './archive';
import { Collector } from './collector';
import { catalogDigest, type CatalogDigest } from './digest';
import { Dispatcher, promoteAcks, type DispatchResult } from './dispatcher';
import { Extractor } from './extractor';
import { IncomingQueue } from './incoming-queue';
import { Injector, type InjectResult } from './injector';
import { LogTexts, OutgoingQueue } from './outgoing-queue';
import {
  silentLogger,
  systemClock,
  type Ack,
  type Batch,
  type Clock,
  type Db,
  type ReplicationLogger,
  type Transport,
} from './types';

export interface EngineOptions {
  db: Db;
  /** This site's id. */
  siteId: string;
  /** The peers this site exchanges with. */
  peers: readonly string[];
  transport: Transport;
  /** Pause between cycles; 30 s by default. */
  cycleMs?: number;
  clock?: Clock;
  /** The application's tables and rules (its resolver among them); `plainApplication` for the engine alone. */
  application: ReplicatedApplication;
  logger?: ReplicationLogger;
  /** How long applied (archived) and acknowledged (logged) transactions are kept; 7 days by default. */
  retentionMs?: number;
}

export interface CycleReport {
  startedAt: Date;
  durationMs: number;
  injected: { txs: number; changes: number; conflicts: number };
  extracted: { txs: number; changes: number };
  dispatched: DispatchResult[];
  waiting: Record<string, string>;
  error?: string;
}

export interface PeerStatus {
  peer: string;
  /** Transactions and changes queued for the peer, not yet acknowledged. */
  backlog: { txs: number; changes: number };
  /** Transactions and changes received from the peer, not yet applied here. */
  incoming: { txs: number; changes: number };
  /** Highest seq of the peer's transactions applied here. */
  appliedSeq: number;
  lastSuccessAt: Date | null;
  lastAttemptAt: Date | null;
  /** Age of the oldest change waiting for the peer, in seconds (0 when it has everything). */
  lagSeconds: number;
  lastError: string | null;
  lastErrorAt: Date | null;
  /** Why the peer's next transaction is not applied yet, if it waits. */
  waitingOn: string | null;
}

export interface EngineStatus {
  site: string;
  running: boolean;
  cycleSeconds: number;
  lastSeq: number;
  pendingCapture: number;
  conflicts: number;
  peers: PeerStatus[];
  cycles: CycleReport[];
}

const RECENT_CYCLES = 20;
/** How long after start() an unreachable peer is taken for one still starting (not warned about). */
const STARTUP_GRACE_MS = 120_000;

/** "30 s", "5 min", "2 h": a cycle's length as an operator reads it. */
function duration(ms: number): string {
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  if (s < 2 * 3600) return `${Math.round(s / 60)} min`;
  return `${Math.round(s / 3600)} h`;
}

/**
 * One site's replication engine and its cycle: inject (apply what peers sent), extract (take local
 * changes into the per-peer queues), dispatch (send the queues), then sleep. The collector side
 * (`receive`) works at any time. No NestJS here: the API wires the database, transport and clock.
 */
export class ReplicationEngine {
  readonly siteId: string;
  readonly extractor: Extractor;
  readonly injector: Injector;
  readonly dispatcher: Dispatcher;
  readonly collector: Collector;
  readonly incoming: IncomingQueue;
  readonly archive: Archive;
  private readonly db: Db;
  private readonly application: ReplicatedApplication;
  private readonly peers: string[];
  private readonly clock: Clock;
  private readonly logger: ReplicationLogger;
  private readonly cycleMs: number;
  private readonly retentionMs: number;
  private readonly recent: CycleReport[] = [];
  private running: Promise<void> | undefined;
  private abort: AbortController | undefined;
  private cycleInFlight: Promise<CycleReport> | undefined;
  private wake: AbortController | undefined;
  private nudged = false;
  private cyclesRun = 0;
  /** Each failing peer's error, and whether it was warned about (not during the start-up grace). */
  private readonly peerErrors = new Map<string, { error: string; warned: boolean }>();
  /** When start() was called: peers starting beside this site are not warned about before the grace. */
  private startedAt: number | undefined;
  private readonly dispatching = new Map<string, Promise<DispatchResult>>();
  /** The injector's runs in order (see inject), and the one asked for that has not started yet. */
  private injectTail: Promise<unknown> = Promise.resolve();
  private injectQueued: Promise<InjectResult> | undefined;
  /** Applied since the last cycle report, and what the last injection left waiting. */
  private unreported = { txs: 0, changes: 0, conflicts: 0 };
  private waiting: Record<string, string> = {};
  /** Called after every cycle (metrics). */
  onCycle: ((report: CycleReport) => void) | undefined;

  constructor(options: EngineOptions) {
    this.db = options.db;
    this.application = options.application;
    this.siteId = options.siteId;
    this.peers = [...options.peers];
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    this.cycleMs = options.cycleMs ?? 30_000;
    this.retentionMs = options.retentionMs ?? 7 * 24 * 3600_000;
    this.extractor = new Extractor(this.db);
    this.injector = new Injector(this.db, this.application, this.logger);
    this.dispatcher = new Dispatcher(this.db, this.siteId, options.transport);
    this.collector = new Collector(this.db);
    this.incoming = new IncomingQueue(this.db);
    this.archive = new Archive(this.db);
  }

  get peerIds(): readonly string[] {
    return this.peers;
  }

  /**
   * The collector's entry point: a batch from an authenticated peer. A batch with transactions ends
   * the pause before the next cycle, so what arrived is applied within moments rather than a cycle.
   */
  async receive(peer: string, batch: Batch): Promise<Ack> {
    const ack = await this.collector.receive(peer, batch);
    if (batch.txs.length > 0) {
      // While the loop runs, what arrived is applied now rather than at this site's next round,
      // which may be waiting on a slow peer's answer (runCycle alone keeps injection in the cycle).
      if (this.running && !this.abort?.signal.aborted) this.injectSoon();
      this.nudge();
    }
    return ack;
  }

  /**
   * Runs the injector over every origin with transactions waiting, one run at a time: a run asked
   * for while one is going follows it, and requests made before that one starts share it. Whatever
   * a run applies is counted in the next cycle's report.
   */
  private inject(): Promise<InjectResult> {
    if (this.injectQueued) return this.injectQueued;
    const run = this.injectTail.then(async () => {
      this.injectQueued = undefined;
      const result = await this.injector.injectAll(await this.incoming.origins());
      const u = this.unreported;
      u.txs += result.txs;
      u.changes += result.changes;
      u.conflicts += result.conflicts;
      this.waiting = result.waiting;
      return result;
    });
    this.injectQueued = run;
    this.injectTail = run.catch(() => undefined);
    return run;
  }

  /** An injection between cycles (a batch arrived); its failure is logged, the cycle retries. */
  private injectSoon(): void {
    this.inject().catch((err: unknown) =>
      this.logger.error(
        `injecting received changes failed: ${err instanceof Error ? err.message : String(err)}`,
      ),
    );
  }

  /** Runs one cycle now (serialised with the running loop's cycles). */
  runCycle(): Promise<CycleReport> {
    const previous = this.cycleInFlight ?? Promise.resolve(undefined);
    const next = previous.catch(() => undefined).then(() => this.cycle());
    this.cycleInFlight = next;
    return next;
  }

  /** Starts the cycle loop. */
  start(): void {
    if (this.running) return;
    this.startedAt = this.clock.now();
    const abort = (this.abort = new AbortController());
    this.running = (async () => {
      while (!abort.signal.aborted) {
        const began = this.clock.now();
        await this.runCycle().catch((err: unknown) =>
          this.logger.error(`replication cycle failed: ${err instanceof Error ? err.message : String(err)}`),
        );
        if (abort.signal.aborted) break;
        if (this.nudged) {
          // Something arrived during the cycle: go again after a breath instead of a whole pause.
          this.nudged = false;
          await this.clock.sleep(Math.min(this.cycleMs, 100), abort.signal);
          continue;
        }
        // The cycle is the time from one round's start to the next: a long round (a backlog, a slow
        // peer) is followed by the next after a breath, not by a whole cycle more.
        const pause = Math.max(this.cycleMs - (this.clock.now() - began), Math.min(this.cycleMs, 100));
        this.wake = new AbortController();
        await this.clock.sleep(pause, AbortSignal.any([abort.signal, this.wake.signal]));
        this.wake = undefined;
      }
    })();
  }

  /** Ends the sleep and starts the next cycle at once (used after a join or by operators). */
  nudge(): void {
    if (this.wake) this.wake.abort();
    else if (this.running) this.nudged = true;
  }

  /** Stops the loop after the cycle in flight. */
  async stop(): Promise<void> {
    this.abort?.abort();
    await this.running;
    await this.cycleInFlight?.catch(() => undefined);
    await this.injectTail;
    await Promise.all([...this.dispatching.values()]);
    this.running = undefined;
  }

  private async cycle(): Promise<CycleReport> {
    const startedAt = new Date(this.clock.now());
    const report: CycleReport = {
      startedAt,
      durationMs: 0,
      injected: { txs: 0, changes: 0, conflicts: 0 },
      extracted: { txs: 0, changes: 0 },
      dispatched: [],
      waiting: {},
    };
    try {
      await this.inject();
      // What this round applied, and what runs between rounds applied since the last report.
      report.injected = this.unreported;
      this.unreported = { txs: 0, changes: 0, conflicts: 0 };
      report.waiting = this.waiting;
      const extracted = await this.extractor.extract(this.peers);
      report.extracted = { txs: extracted.txs, changes: extracted.changes };
      report.dispatched = await this.dispatchAll();
      // Peers' reports of what they applied count once this site has applied their logs that far.
      await promoteAcks(this.db);
      await this.application.hooks.afterCycle(this.db, this.siteId, this.peers);
      if (++this.cyclesRun % 100 === 0) await this.prune();
    } catch (err) {
      report.error = err instanceof Error ? err.message : String(err);
      throw err;
    } finally {
      report.durationMs = this.clock.now() - startedAt.getTime();
      this.recent.unshift(report);
      this.recent.length = Math.min(this.recent.length, RECENT_CYCLES);
      this.onCycle?.(report);
    }
    return report;
  }

  /**
   * Sends every peer its queue, each independently: a slow or hung peer does not hold up the cycle
   * (nor the others) for more than about one cycle; its send goes on in the background and it is
   * skipped until that finishes.
   */
  private async dispatchAll(): Promise<DispatchResult[]> {
    // The peers' queues hold mostly the same entries: each is read and written out once.
    const texts = new LogTexts(this.db);
    const sends = this.peers.map((peer) => {
      let send = this.dispatching.get(peer);
      if (!send) {
        send = this.dispatcher
          .dispatch(peer, texts)
          .then((d) => {
            this.notePeerHealth(d);
            return d;
          })
          .finally(() => this.dispatching.delete(peer));
        this.dispatching.set(peer, send);
      }
      return send;
    });
    const patience = new AbortController();
    const waited = this.clock.sleep(Math.max(this.cycleMs, 2000), patience.signal).then(() => undefined);
    try {
      return await Promise.all(
        sends.map(async (send, i): Promise<DispatchResult> => {
          const done = await Promise.race([send, waited]);
          return (
            done ?? {
              peer: this.peers[i] as string,
              ok: false,
              txs: 0,
              changes: 0,
              error: 'still sending (the peer is slow to answer); continues in the background',
            }
          );
        }),
      );
    } finally {
      patience.abort();
    }
  }

  /**
   * Logs a peer's failures when they start or change, and its recovery; not every cycle. Sites of a
   * federation usually start together, so a peer that fails in the first minutes after start() is
   * only noted (log level), and warned about if it still fails after that grace.
   */
  private notePeerHealth(d: DispatchResult): void {
    const previous = this.peerErrors.get(d.peer);
    if (d.ok) {
      if (previous?.warned) this.logger.log(`peer ${d.peer} is reachable again`);
      else if (previous) this.logger.log(`peer ${d.peer} is reachable`);
      this.peerErrors.delete(d.peer);
      return;
    }
    const error = d.error ?? 'failed';
    const retry = `retried at the next cycle, in ${duration(this.cycleMs)} at the latest`;
    const starting =
      this.startedAt !== undefined &&
      this.clock.now() - this.startedAt < STARTUP_GRACE_MS &&
      !previous?.warned;
    if (starting) {
      if (!previous) this.logger.log(`peer ${d.peer} is not reachable yet (${error}); ${retry}`);
      this.peerErrors.set(d.peer, { error, warned: false });
      return;
    }
    if (previous?.error !== error || !previous.warned)
      this.logger.warn(`peer ${d.peer}: ${error}; its queue waits and is ${retry}`);
    this.peerErrors.set(d.peer, { error, warned: true });
  }

  /** Drops archived and fully acknowledged log entries older than the retention period. */
  async prune(): Promise<void> {
    const before = new Date(this.clock.now() - this.retentionMs);
    await this.archive.prune(before);
    await this.db.query(
      `DELETE FROM repl_log l WHERE l.extracted_at < $1 AND NOT EXISTS (SELECT 1 FROM repl_outgoing o WHERE o.seq = l.seq)`,
      [before],
    );
    await this.db.query(`DELETE FROM repl_nonces WHERE seen_at < now() - interval '1 hour'`);
  }

  async status(): Promise<EngineStatus> {
    const [local, pending, conflicts, peerRows, incoming] = await Promise.all([
      this.db.query<{ last_seq: string }>('SELECT last_seq FROM repl_local'),
      this.db.query<{ n: string }>('SELECT COALESCE(sum(row_count), 0) AS n FROM repl_changes'),
      this.db.query<{ n: string }>('SELECT count(*) AS n FROM repl_conflicts'),
      this.db.query<{
        peer_id: string;
        applied_seq: string;
        last_success_at: Date | null;
        last_attempt_at: Date | null;
        last_error: string | null;
        last_error_at: Date | null;
        waiting_on: string | null;
      }>('SELECT * FROM repl_peers'),
      this.incoming.backlog(),
    ]);
    const now = this.clock.now();
    const peers: PeerStatus[] = [];
    for (const peer of this.peers) {
      const row = peerRows.rows.find((r) => r.peer_id === peer);
      const backlog = await new OutgoingQueue(this.db, peer).backlog();
      const inc = incoming.find((i) => i.origin === peer);
      peers.push({
        peer,
        backlog: { txs: backlog.txs, changes: backlog.changes },
        incoming: { txs: inc?.txs ?? 0, changes: inc?.changes ?? 0 },
        appliedSeq: Number(row?.applied_seq ?? 0),
        lastSuccessAt: row?.last_success_at ?? null,
        lastAttemptAt: row?.last_attempt_at ?? null,
        lagSeconds: backlog.oldestCapturedAt
          ? Math.max(0, (now - backlog.oldestCapturedAt.getTime()) / 1000)
          : 0,
        lastError: row?.last_error ?? null,
        lastErrorAt: row?.last_error_at ?? null,
        waitingOn: row?.waiting_on ?? null,
      });
    }
    return {
      site: this.siteId,
      running: this.running !== undefined,
      cycleSeconds: this.cycleMs / 1000,
      lastSeq: Number(local.rows[0]?.last_seq ?? 0),
      pendingCapture: Number(pending.rows[0]?.n ?? 0),
      conflicts: Number(conflicts.rows[0]?.n ?? 0),
      peers,
      cycles: [...this.recent],
    };
  }

  digest(): Promise<CatalogDigest> {
    return catalogDigest(this.db);
  }
}
