import { systemClock, type Clock } from './clock';
import type { Pacer } from './pace';

/** What the catalog says a copy's bytes are. */
export interface ScrubTarget {
  /** Lower-case hex SHA-256 the bytes must have. */
  checksum: string;
}

/** What re-hashing a copy found. */
export type ScrubFinding =
  | { kind: 'ok'; bytes: number }
  | { kind: 'missing'; bytes: 0 }
  | { kind: 'mismatch'; bytes: number; found: string };

/** A copy's bytes, hashed; null when its file is not there. */
export type HashResult = { sha256: string; bytes: number } | null;

/** Reads and hashes a copy's bytes. */
export interface ScrubHasher<T> {
  /**
   * Hashes the copy's bytes, awaiting `onPiece(n)` after every piece it reads (the pacing waits
   * there), and resolves with the hex SHA-256 and the bytes read, or null when the file is missing.
   * Rejects on any other read failure (the copy is then left as it is) or when `signal` aborts.
   */
  hash(copy: T, onPiece: (bytes: number) => Promise<void>, signal: AbortSignal): Promise<HashResult>;
}

/** The copies a pass checks, in scrub order. */
export interface ScrubSource<T> {
  /**
   * Up to `limit` copies after `after` (null: from the start) in scrub order: never verified
   * first, then oldest verified first. A pass covers the copies not verified since it started
   * (`passStartedAt`, ms since the epoch), so copies it verified do not come back in it.
   */
  next(after: T | null, limit: number, passStartedAt: number): Promise<T[]>;
}

/** Where findings go (the catalog). */
export interface ScrubRecorder<T> {
  /**
   * Records a finding. Resolves with false when the copy changed meanwhile (new bytes, another
   * state, gone) and the finding was dropped: bytes that changed legitimately are not damage.
   */
  record(copy: T, finding: ScrubFinding): Promise<boolean>;
  /** Writes what `record` may have buffered (called after each batch, at the end of a pass, on stop). */
  flush?(): Promise<void>;
}

export interface ScrubberOptions<T extends ScrubTarget> {
  source: ScrubSource<T>;
  hasher: ScrubHasher<T>;
  recorder: ScrubRecorder<T>;
  /** The byte budget of the background passes (checks on demand are not paced). */
  pacer: Pacer;
  /** Pause after a pass (and while there is nothing to check). */
  intervalMs: number;
  /** Copies asked of the source at a time. */
  batchSize?: number;
  /**
   * Copies hashed at once (default 1): a few hide the open/read/close latency of small files; the
   * pacer bounds their bytes together.
   */
  concurrency?: number;
  clock?: Clock;
  /** Every piece hashed (metrics). */
  onBytes?(bytes: number): void;
  /** A finding recorded (not dropped): metrics, logs. */
  onFinding?(copy: T, finding: ScrubFinding): void;
  /** A check or a pass that failed (logged; the scrub goes on). */
  onError?(error: unknown, copy: T | null): void;
}

export interface ScrubPassStats {
  startedAt: number;
  finishedAt: number;
  /** Copies hashed (findings recorded or dropped). */
  checked: number;
  bytes: number;
  ok: number;
  missing: number;
  mismatch: number;
  /** Findings dropped because the copy changed meanwhile. */
  changed: number;
  /** Checks that failed (read errors other than a missing file). */
  failed: number;
}

/** The outcome of one check: the finding, and whether it was recorded. */
export interface ScrubCheck {
  finding: ScrubFinding;
  recorded: boolean;
}

/** The hex SHA-256 found against the one expected, as a copy's error says it. */
export function findingError(finding: ScrubFinding, expected: string): string | null {
  if (finding.kind === 'missing') return 'file missing';
  if (finding.kind === 'mismatch') return `SHA-256 differs: found ${finding.found} expected ${expected}`;
  return null;
}

/**
 * The scrub: re-hashes this site's copies in passes, oldest verified first, at the pacer's rate,
 * and records for each whether its bytes are there and equal to the catalog's checksum. No SQL and
 * no NestJS: the source, the hasher and the recorder are injected.
 */
export class Scrubber<T extends ScrubTarget> {
  private readonly clock: Clock;
  private readonly batchSize: number;
  private readonly concurrency: number;
  private abort: AbortController | null = null;
  private loop: Promise<void> | null = null;
  /** Cuts the pause between passes short (`wake`). */
  private wakeUp: AbortController | null = null;
  /** The last finished pass (for status and tests). */
  lastPass: ScrubPassStats | null = null;

  constructor(private readonly options: ScrubberOptions<T>) {
    this.clock = options.clock ?? systemClock;
    this.batchSize = options.batchSize ?? 100;
    this.concurrency = Math.max(1, options.concurrency ?? 1);
  }

  get running(): boolean {
    return this.loop !== null;
  }

  /**
   * Starts the background passes (nothing when already running); `delayFirst`: the first pass
   * after one interval rather than at once.
   */
  start(options: { delayFirst?: boolean } = {}): void {
    if (this.loop) return;
    const abort = new AbortController();
    this.abort = abort;
    this.loop = this.run(abort.signal, options.delayFirst ?? false).finally(() => {
      this.loop = null;
    });
  }

  /** Stops the passes: a hash in progress is abandoned unrecorded; resolves once the loop has ended. */
  async stop(): Promise<void> {
    this.abort?.abort(new Error('scrub stopped'));
    this.wakeUp?.abort();
    await this.loop;
    this.abort = null;
  }

  /** Starts the next pass now if the scrub is pausing between passes. */
  wake(): void {
    this.wakeUp?.abort();
  }

  private async run(signal: AbortSignal, delayFirst: boolean): Promise<void> {
    let pause = delayFirst;
    while (!signal.aborted) {
      if (pause) await this.pause(signal);
      pause = true;
      if (signal.aborted) break;
      try {
        await this.pass(signal);
      } catch (err) {
        if (signal.aborted) break;
        this.options.onError?.(err, null);
      }
    }
  }

  /** The pause between passes: the interval, cut short by `wake` or `stop`. */
  private async pause(signal: AbortSignal): Promise<void> {
    this.wakeUp = new AbortController();
    try {
      await this.clock.sleep(this.options.intervalMs, AbortSignal.any([signal, this.wakeUp.signal]));
    } catch {
      // Woken or stopped: the loop's condition tells which.
    } finally {
      this.wakeUp = null;
    }
  }

  /**
   * One pass over the copies the source yields, paced. Rejects with the signal's reason when it
   * aborts (what was recorded stays recorded).
   */
  async pass(signal: AbortSignal = new AbortController().signal): Promise<ScrubPassStats> {
    const { source, recorder } = this.options;
    const stats: ScrubPassStats = {
      startedAt: this.clock.now(),
      finishedAt: 0,
      checked: 0,
      bytes: 0,
      ok: 0,
      missing: 0,
      mismatch: 0,
      changed: 0,
      failed: 0,
    };
    let after: T | null = null;
    try {
      for (;;) {
        signal.throwIfAborted();
        const batch = await source.next(after, this.batchSize, stats.startedAt);
        if (batch.length === 0) break;
        let next = 0;
        // Copies of a batch are taken in order by up to `concurrency` workers.
        const worker = async (): Promise<void> => {
          while (next < batch.length) {
            signal.throwIfAborted();
            const copy = batch[next++]!;
            let check: ScrubCheck;
            try {
              check = await this.check(copy, { paced: true, signal });
            } catch (err) {
              if (signal.aborted) throw err;
              stats.failed++;
              this.options.onError?.(err, copy);
              continue;
            }
            stats.checked++;
            stats.bytes += check.finding.bytes;
            if (!check.recorded) stats.changed++;
            else stats[check.finding.kind]++;
          }
        };
        const workers = Array.from({ length: Math.min(this.concurrency, batch.length) }, worker);
        const ended = await Promise.allSettled(workers);
        const failed = ended.find((e) => e.status === 'rejected');
        if (failed) throw failed.reason;
        after = batch[batch.length - 1]!;
        await recorder.flush?.();
        if (batch.length < this.batchSize) break;
      }
    } finally {
      // What was found before a stop is still worth keeping.
      await recorder.flush?.().catch((err: unknown) => this.options.onError?.(err, null));
    }
    stats.finishedAt = this.clock.now();
    this.lastPass = stats;
    return stats;
  }

  /**
   * Hashes one copy and records the finding. `paced: false` for a check on demand (a person is
   * waiting): it spends nothing of the background budget.
   */
  async check(copy: T, options: { paced: boolean; signal?: AbortSignal }): Promise<ScrubCheck> {
    const signal = options.signal ?? new AbortController().signal;
    const { pacer, hasher, recorder } = this.options;
    const onPiece = async (bytes: number): Promise<void> => {
      this.options.onBytes?.(bytes);
      if (options.paced) await pacer.take(bytes, signal);
    };
    const hashed = await hasher.hash(copy, onPiece, signal);
    signal.throwIfAborted();
    const finding: ScrubFinding =
      hashed === null
        ? { kind: 'missing', bytes: 0 }
        : hashed.sha256 === copy.checksum
          ? { kind: 'ok', bytes: hashed.bytes }
          : { kind: 'mismatch', bytes: hashed.bytes, found: hashed.sha256 };
    const recorded = await recorder.record(copy, finding);
    if (recorded) this.options.onFinding?.(copy, finding);
    return { finding, recorded };
  }
}
