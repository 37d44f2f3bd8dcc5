import { systemClock, type Clock } from './clock';
import { Pacer } from './pace';
import { RateWindow } from './rate';

/** A copy at this site that the mover should make (or make again): a due `replicas` row here. */
export interface CopyJob {
  replicaId: string;
  objectId: string;
  /** The object's path now (for the status and errors). */
  path: string;
  /** The object's size and checksum (hex SHA-256) now: the copy must end equal to them. */
  size: number;
  checksum: string;
  /** Failed attempts so far. */
  attempts: number;
  /** Sites other than this one holding a good copy with the object's checksum, in the catalog's view. */
  sources: string[];
}

/** A copy at this site that no rule wants, of an object that rules cover. */
export interface SurplusCopy {
  replicaId: string;
  objectId: string;
  path: string;
  /** The object's checksum now. */
  checksum: string;
  /** Whether this copy is good and current (only then do the wanted sites have to promise first). */
  good: boolean;
  /** The object's wanted sites (never this one). */
  wanted: string[];
  /** Sites holding a good current copy, in this site's view. */
  goodAt: string[];
}

/** What the mover reads from and writes to the catalog (SQL lives with the caller). */
export interface MoverCatalog {
  /** Plans: pending rows for copies wanted here and missing, stale for rows whose checksum is old. */
  plan(): Promise<{ added: number; staled: number }>;
  /** Due rows here (pending, stale, suspect, failed and interrupted copies), oldest first, not in `skip`. */
  due(limit: number, skip: readonly string[]): Promise<CopyJob[]>;
  /** Records a failed attempt (local columns only: not a replicated change). */
  recordFailure(job: CopyJob, error: string, attempts: number, nextAttemptAt: Date): Promise<void>;
  /** Copies here that no rule wants, of covered live objects. */
  surplus(limit: number): Promise<SurplusCopy[]>;
}

/** Handed to a transfer: where its bytes go through (progress, the bandwidth budget) and when to stop. */
export interface TransferContext {
  signal: AbortSignal;
  /** Call for every piece received before writing it: counts it and waits for the bandwidth budget. */
  received(replicaId: string, bytes: number): Promise<void>;
  /** A resumed copy starts from the bytes it already had. */
  resumedAt(replicaId: string, bytes: number): void;
}

/** An error that says the source site, not the object, is the trouble (it is tried last for a while). */
export class SourceUnavailableError extends Error {
  constructor(
    readonly site: string,
    message: string,
  ) {
    super(message);
    this.name = 'SourceUnavailableError';
  }
}

/** How bytes move and copies go (peer requests, storage, the catalog's last checks). */
export interface MoverTransfers {
  /** Copies one object from `source`; resolves once the copy here is good, throws otherwise. */
  copy(job: CopyJob, source: string, context: TransferContext): Promise<void>;
  /** Copies many small objects from `source` in one request; per job, the error (undefined: good). */
  copyBatch(
    jobs: CopyJob[],
    source: string,
    context: TransferContext,
  ): Promise<Map<string, Error | undefined>>;
  /** Asks `site` to promise to keep its good copy of the object (at `checksum`) for a lease. */
  keep(site: string, objectId: string, checksum: string): Promise<boolean>;
  /** Removes this site's copy (row and file) if the catalog still agrees; resolves with whether it did. */
  remove(copy: SurplusCopy): Promise<boolean>;
}

export interface MoverLogger {
  log(message: string): void;
  warn(message: string): void;
}

export interface MoverOptions {
  siteId: string;
  catalog: MoverCatalog;
  transfers: MoverTransfers;
  clock?: Clock;
  logger?: MoverLogger;
  /** Transfers at once (a batch of small objects is one). Default 4. */
  concurrency?: number;
  /** Incoming bytes per second, 0 for no limit. */
  bytesPerSecond?: number;
  /** Time between passes. Default 2,000 ms. */
  intervalMs?: number;
  /** Objects up to this size go in batches. Default 1 MiB. */
  smallBytes?: number;
  /** Most objects and bytes in one batch. Defaults 200 and 32 MiB. */
  batchObjects?: number;
  batchBytes?: number;
  /** First retry delay, doubled per failed attempt up to `maxBackoffMs`. Defaults 1 s and 5 min. */
  backoffMs?: number;
  maxBackoffMs?: number;
  /** How long a source that failed is tried last. Default 30 s. */
  sourceDownMs?: number;
  /** How long a promise to keep a copy holds. Default 30 s (a trim uses promises at most half as old). */
  leaseMs?: number;
  /** Surplus copies looked at per pass. Default 100. */
  trimBatch?: number;
  /** Hears every byte count received (metrics). */
  onBytes?: (bytes: number) => void;
  /** Hears every failed attempt (metrics). */
  onFailure?: (job: CopyJob, error: string) => void;
}

export interface InFlightTransfer {
  replicaId: string;
  path: string;
  from: string;
  bytesDone: number;
  size: number;
  startedAt: Date;
}

export interface PassReport {
  added: number;
  staled: number;
  /** Transfers started (a batch counts once) and the objects in them. */
  started: number;
  objects: number;
  trimmed: number;
}

const MiB = 1024 * 1024;
/** A scan (planning, trimming) waits this many times its last duration before it runs again. */
const SCAN_SPACING = 10;

/**
 * The mover of one site (docs/placement.md, "The mover"): every interval a pass plans (rows for
 * copies wanted here), starts due copies up to the concurrency (small objects in batches per source
 * site, large ones one by one), and trims surplus copies once every wanted site has promised to
 * keep its good copy. Transfers run on across passes; the catalog holds the work, so a restart
 * resumes it. The bytes move through `transfers`; this class decides what, when, from where.
 */
export class Mover {
  private readonly clock: Clock;
  private readonly catalog: MoverCatalog;
  private readonly transfers: MoverTransfers;
  readonly pacer: Pacer;
  private readonly rate: RateWindow;
  private readonly inFlight = new Map<string, InFlightTransfer>();
  private readonly running = new Set<Promise<void>>();
  /** Objects this site is trimming now: it promises nothing about them meanwhile. */
  private readonly trimming = new Set<string>();
  /** Promises given: object id → until when (one entry per promise) this site does not trim that object. */
  private readonly leases = new Map<string, number[]>();
  /** Sources that failed → until when they are tried last. */
  private readonly down = new Map<string, number>();
  private readonly stopper = new AbortController();
  private loop: Promise<void> | undefined;
  private passing: Promise<PassReport> | undefined;
  private bytes = 0;
  readonly settings: Required<
    Pick<
      MoverOptions,
      | 'concurrency'
      | 'intervalMs'
      | 'smallBytes'
      | 'batchObjects'
      | 'batchBytes'
      | 'backoffMs'
      | 'maxBackoffMs'
      | 'sourceDownMs'
      | 'leaseMs'
      | 'trimBatch'
    >
  >;

  constructor(private readonly options: MoverOptions) {
    this.clock = options.clock ?? systemClock;
    this.catalog = options.catalog;
    this.transfers = options.transfers;
    this.pacer = new Pacer({ bytesPerSecond: options.bytesPerSecond ?? 0, clock: this.clock });
    this.rate = new RateWindow(() => this.clock.now());
    this.settings = {
      concurrency: Math.max(1, options.concurrency ?? 4),
      intervalMs: options.intervalMs ?? 2000,
      smallBytes: options.smallBytes ?? 1 * MiB,
      batchObjects: options.batchObjects ?? 200,
      batchBytes: options.batchBytes ?? 32 * MiB,
      backoffMs: options.backoffMs ?? 1000,
      maxBackoffMs: options.maxBackoffMs ?? 300_000,
      sourceDownMs: options.sourceDownMs ?? 30_000,
      leaseMs: options.leaseMs ?? 30_000,
      trimBatch: options.trimBatch ?? 100,
    };
  }

  private copyChain: Promise<unknown> = Promise.resolve();

  /** Runs passes every interval until `stop`. */
  start(): void {
    if (this.loop) return;
    const signal = this.stopper.signal;
    this.loop = (async () => {
      while (!signal.aborted) {
        try {
          await this.pass({ paced: true });
        } catch (err) {
          if (!signal.aborted) this.options.logger?.warn(`placement pass failed: ${message(err)}`);
        }
        await this.clock.sleep(this.settings.intervalMs, signal).catch(() => undefined);
      }
    })();
  }

  /** Stops passing, aborts the transfers in flight (their rows stay as they are, resumable) and waits for them. */
  async stop(): Promise<void> {
    this.stopper.abort(new Error('the mover is stopping'));
    await this.loop;
    await this.passing?.catch(() => undefined);
    await this.idle();
  }

  /** Resolves when no transfer is in flight. */
  async idle(): Promise<void> {
    // A finished transfer starts the next copy step, which may launch more: wait for those too.
    for (;;) {
      const chain = this.copyChain;
      await Promise.allSettled([...this.running, chain]);
      if (this.running.size === 0 && chain === this.copyChain) return;
    }
  }

  /**
   * One pass (plan, copy, trim); passes never overlap (a second caller gets the running one).
   * `paced` (the passes of `start`): planning and trimming, which read every rule's subtree, are
   * skipped while their last run's cost says they are not due (see `scanDue`).
   */
  pass(options: { paced?: boolean } = {}): Promise<PassReport> {
    this.passing ??= this.runPass(options.paced === true).finally(() => (this.passing = undefined));
    return this.passing;
  }

  private async runPass(paced: boolean): Promise<PassReport> {
    const { added, staled } =
      !paced || this.scanDue('plan')
        ? await this.scan('plan', () => this.catalog.plan())
        : { added: 0, staled: 0 };
    const { started, objects } = await this.copyInTurn();
    const trimmed = !paced || this.scanDue('trim') ? await this.scan('trim', () => this.trim()) : 0;
    return { added, staled, started, objects, trimmed };
  }

  /** When each scan last started and how long it took. */
  private readonly scans = new Map<'plan' | 'trim', { startedAt: number; ms: number }>();

  /**
   * Whether a scan may run again: a scan's cost grows with the catalog, so it waits at least
   * SCAN_SPACING times its last duration from its last start, and the scans take at most a
   * tenth of the mover's time however large the catalog. Copies are not held back: a finished
   * transfer starts the next due copies at once.
   */
  private scanDue(kind: 'plan' | 'trim'): boolean {
    const last = this.scans.get(kind);
    return !last || this.clock.now() - last.startedAt >= last.ms * SCAN_SPACING;
  }

  private async scan<T>(kind: 'plan' | 'trim', work: () => Promise<T>): Promise<T> {
    const startedAt = this.clock.now();
    try {
      return await work();
    } finally {
      this.scans.set(kind, { startedAt, ms: this.clock.now() - startedAt });
    }
  }

  /** Starts due copies in the free slots; does not wait for them. */
  private async copy(): Promise<{ started: number; objects: number }> {
    const free = this.settings.concurrency - this.inFlightTasks();
    if (free <= 0 || this.stopper.signal.aborted) return { started: 0, objects: 0 };
    const jobs = await this.catalog.due(free * this.settings.batchObjects, [...this.inFlight.keys()]);
    const now = this.clock.now();
    const tasks: Array<{ source: string | undefined; jobs: CopyJob[] }> = [];
    const batches = new Map<string, { source: string; jobs: CopyJob[]; bytes: number }>();
    for (const job of jobs) {
      const source = this.chooseSource(job, now);
      if (source === undefined || job.size > this.settings.smallBytes) {
        tasks.push({ source, jobs: [job] });
        continue;
      }
      let batch = batches.get(source);
      if (
        !batch ||
        batch.jobs.length >= this.settings.batchObjects ||
        batch.bytes + job.size > this.settings.batchBytes
      ) {
        batch = { source, jobs: [], bytes: 0 };
        batches.set(source, batch);
        tasks.push(batch);
      }
      batch.jobs.push(job);
      batch.bytes += job.size;
    }
    let started = 0;
    let objects = 0;
    for (const task of tasks.slice(0, free)) {
      started += 1;
      objects += task.jobs.length;
      this.launch(task.jobs, task.source);
    }
    return { started, objects };
  }

  private inFlightTasks(): number {
    return this.running.size;
  }

  /** The first source not known to be down, else the one down the longest ago. */
  private chooseSource(job: CopyJob, now: number): string | undefined {
    const candidates = job.sources.filter((s) => s !== this.options.siteId);
    const up = candidates.find((s) => (this.down.get(s) ?? 0) <= now);
    if (up !== undefined) return up;
    return [...candidates].sort((a, b) => (this.down.get(a) ?? 0) - (this.down.get(b) ?? 0))[0];
  }

  private launch(jobs: CopyJob[], source: string | undefined): void {
    const startedAt = new Date(this.clock.now());
    for (const job of jobs) {
      this.inFlight.set(job.replicaId, {
        replicaId: job.replicaId,
        path: job.path,
        from: source ?? '',
        bytesDone: 0,
        size: job.size,
        startedAt,
      });
    }
    const task = this.run(jobs, source).finally(() => {
      for (const job of jobs) this.inFlight.delete(job.replicaId);
      this.running.delete(task);
      // A slot is free: fill it now rather than at the next pass (planning and trimming, which scan
      // the rules' subtrees, stay on the pass interval).
      if (!this.stopper.signal.aborted)
        void this.copyInTurn().catch((err: unknown) =>
          this.options.logger?.warn(`placement copy step failed: ${message(err)}`),
        );
    });
    this.running.add(task);
  }

  /** `copy`, one at a time: two at once could take the same due rows. */
  private copyInTurn(): Promise<{ started: number; objects: number }> {
    const next = this.copyChain.catch(() => undefined).then(() => this.copy());
    this.copyChain = next;
    return next;
  }

  private async run(jobs: CopyJob[], source: string | undefined): Promise<void> {
    if (source === undefined) {
      for (const job of jobs)
        await this.failed(job, new Error('no other site holds a good copy of the current bytes'));
      return;
    }
    const context: TransferContext = {
      signal: this.stopper.signal,
      received: async (replicaId, bytes) => {
        const t = this.inFlight.get(replicaId);
        if (t) t.bytesDone += bytes;
        this.bytes += bytes;
        this.rate.add(bytes);
        this.options.onBytes?.(bytes);
        await this.pacer.take(bytes, this.stopper.signal);
      },
      resumedAt: (replicaId, bytes) => {
        const t = this.inFlight.get(replicaId);
        if (t) t.bytesDone = bytes;
      },
    };
    try {
      if (jobs.length === 1 && jobs[0]!.size > this.settings.smallBytes) {
        await this.transfers.copy(jobs[0]!, source, context);
        return;
      }
      const outcomes = await this.transfers.copyBatch(jobs, source, context);
      for (const job of jobs) {
        const error = outcomes.has(job.replicaId)
          ? outcomes.get(job.replicaId)
          : new Error('not in the batch answer');
        if (error) await this.failed(job, error);
      }
    } catch (err) {
      // Stopping leaves rows as they are: a restart picks them up (a partial large copy resumes).
      if (this.stopper.signal.aborted) return;
      if (err instanceof SourceUnavailableError)
        this.down.set(err.site, this.clock.now() + this.settings.sourceDownMs);
      for (const job of jobs) await this.failed(job, err);
    }
  }

  private async failed(job: CopyJob, err: unknown): Promise<void> {
    const attempts = job.attempts + 1;
    const delay = Math.min(
      this.settings.maxBackoffMs,
      this.settings.backoffMs * 2 ** Math.min(30, attempts - 1),
    );
    const text = message(err);
    this.options.onFailure?.(job, text);
    this.options.logger?.warn(`copy of ${job.path} failed (attempt ${attempts}): ${text}`);
    await this.catalog
      .recordFailure(job, text, attempts, new Date(this.clock.now() + delay))
      .catch((e: unknown) =>
        this.options.logger?.warn(`could not record the failure of ${job.path}: ${message(e)}`),
      );
  }

  /**
   * Removes surplus copies here. A good copy goes only when every wanted site holds a good copy in
   * this site's view and has promised to keep it; never while this site has promised to keep it
   * itself. A copy that is not good holds nothing worth keeping.
   */
  private async trim(): Promise<number> {
    if (this.stopper.signal.aborted) return 0;
    let trimmed = 0;
    for (const copy of await this.catalog.surplus(this.settings.trimBatch)) {
      if (this.stopper.signal.aborted) break;
      if (this.inFlight.has(copy.replicaId) || this.leased(copy.objectId)) continue;
      if (copy.good) {
        if (copy.wanted.length === 0 || copy.wanted.includes(this.options.siteId)) continue;
        if (!copy.wanted.every((s) => copy.goodAt.includes(s))) continue;
      }
      this.trimming.add(copy.objectId);
      try {
        if (copy.good) {
          // The promises hold for a lease from when each was given: the copy goes only while the
          // first of them surely still holds (half the lease, whatever the clocks' drift).
          const askedAt = this.clock.now();
          let promised = true;
          for (const site of copy.wanted) {
            const yes = await this.transfers
              .keep(site, copy.objectId, copy.checksum)
              .catch((err: unknown) => {
                this.options.logger?.warn(
                  `${site} did not answer the keep request for ${copy.path}: ${message(err)}`,
                );
                return false;
              });
            if (!yes) {
              promised = false;
              break;
            }
          }
          if (!promised) continue;
          if (this.clock.now() - askedAt > this.settings.leaseMs / 2) {
            this.options.logger?.warn(`the keep promises for ${copy.path} took too long; trying again later`);
            continue;
          }
        }
        if (await this.transfers.remove(copy)) {
          trimmed += 1;
          this.options.logger?.log(`removed the surplus copy of ${copy.path}`);
        }
      } catch (err) {
        this.options.logger?.warn(`could not remove the surplus copy of ${copy.path}: ${message(err)}`);
      } finally {
        this.trimming.delete(copy.objectId);
      }
    }
    return trimmed;
  }

  /**
   * A peer asks this site to keep its copy of an object for a lease. Refused (false) while this site
   * is trimming that object; otherwise the lease starts now (before the caller's own checks of the
   * copy, so no trim starts in between) and the caller answers yes only if its copy is wanted, good
   * and current.
   */
  reserve(objectId: string): { release(): void } | undefined {
    if (this.trimming.has(objectId)) return undefined;
    const until = this.clock.now() + this.settings.leaseMs;
    this.leases.set(objectId, [...(this.leases.get(objectId) ?? []), until]);
    return {
      // The caller answers no after all: this promise is withdrawn (others given meanwhile stay).
      release: () => {
        const left = (this.leases.get(objectId) ?? []).filter((u, i, all) => i !== all.indexOf(until));
        if (left.length) this.leases.set(objectId, left);
        else this.leases.delete(objectId);
      },
    };
  }

  /**
   * Claims an object for a removal of this site's copy made outside the trim (the cache's
   * eviction): refused (undefined) while this site has promised to keep its copy or is removing it
   * already; otherwise this site promises nothing about the object (keep requests are refused)
   * until `release`.
   */
  claimRemoval(objectId: string): { release(): void } | undefined {
    if (this.trimming.has(objectId) || this.leased(objectId)) return undefined;
    this.trimming.add(objectId);
    return { release: () => void this.trimming.delete(objectId) };
  }

  /** How long a keep promise holds; a removal relying on one finishes within half of it. */
  get leaseMs(): number {
    return this.settings.leaseMs;
  }

  /** Whether this site has promised to keep its copy of the object (a lease still running). */
  leased(objectId: string): boolean {
    const now = this.clock.now();
    const live = (this.leases.get(objectId) ?? []).filter((u) => u > now);
    if (live.length) this.leases.set(objectId, live);
    else this.leases.delete(objectId);
    return live.length > 0;
  }

  /** Whether this site is copying the object's row now. */
  copying(replicaId: string): boolean {
    return this.inFlight.has(replicaId);
  }

  status(): { inFlight: InFlightTransfer[]; bytesPerSecond: number; bytesTotal: number } {
    return {
      inFlight: [...this.inFlight.values()].map((t) => ({ ...t })),
      bytesPerSecond: this.rate.perSecond(),
      bytesTotal: this.bytes,
    };
  }
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
