import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import {
  findingError,
  Pacer,
  Scrubber,
  type ScrubFinding,
  type ScrubPassStats,
  type ScrubRecorder,
} from '@tributary/placement';
import { Counter } from 'prom-client';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { MetricsRegistry } from '../health/metrics';
import { StorageService } from '../storage/storage.service';
import { SCRUB_CONCURRENCY } from './scrub.constants';
import { ScrubRepository, type ScrubCopy } from './scrub.repository';
import { fileExists, storageHasher } from './storage-hasher';

const MiB = 1024 * 1024;
/** Copies a pass asks the catalog for at a time. */
const BATCH = 200;
/** Copies found good are written together, at most this many or this long after the first. */
const VERIFIED_BATCH = 200;
const VERIFIED_DELAY_MS = 10_000;

/**
 * The scrub at this site (docs/placement.md, "Scrubbing"): passes over this site's good copies,
 * oldest verified first, re-hashed at `SCRUB_RATE_MIBS` through the storage, with a pause of
 * `SCRUB_INTERVAL_MS` after each; and the check on demand of one copy (`verify`). A file missing
 * or different marks its copy suspect, so it is no longer served and the mover repairs it.
 */
@Injectable()
export class ScrubService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Scrub');
  /** The background passes (paced; copies found good are written in batches). */
  readonly background: Scrubber<ScrubCopy>;
  /** Checks on demand: unpaced, every finding written at once. */
  private readonly onDemand: Scrubber<ScrubCopy>;
  private readonly bytes: Counter;
  private readonly mismatches: Counter<'kind'>;
  private verified: ScrubCopy[] = [];
  private verifiedSince = 0;

  constructor(
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
    private readonly repo: ScrubRepository,
    private readonly storage: StorageService,
    metrics: MetricsRegistry,
  ) {
    this.bytes = new Counter({
      name: 'tributary_scrub_bytes_total',
      help: 'Bytes of this site’s copies re-hashed by the scrub (background passes and checks on demand)',
      registers: [metrics.registry],
    });
    this.mismatches = new Counter({
      name: 'tributary_scrub_mismatches_total',
      help: 'Copies the scrub marked suspect, by what it found (missing: no file; mismatch: other bytes)',
      labelNames: ['kind'] as const,
      registers: [metrics.registry],
    });
    const hasher = storageHasher<ScrubCopy>(storage);
    const common = {
      hasher,
      onBytes: (n: number) => this.bytes.inc(n),
      onFinding: (copy: ScrubCopy, finding: ScrubFinding) => this.found(copy, finding),
      onError: (err: unknown, copy: ScrubCopy | null) =>
        this.logger.warn(
          `${copy ? `copy ${copy.id} (object ${copy.objectId}) not checked` : 'scrub pass failed'}: ${err instanceof Error ? err.message : String(err)}`,
        ),
    };
    const siteId = config.siteId;
    this.background = new Scrubber<ScrubCopy>({
      ...common,
      source: {
        // A pass takes copies not verified since it started nor within SCRUB_REVERIFY_HOURS: every
        // verification is a replicated write, so a copy is re-hashed at that cadence, not every pass.
        next: (after, limit, passStartedAt) =>
          this.repo.nextGood(
            siteId,
            after,
            limit,
            new Date(Math.min(passStartedAt, Date.now() - config.placement.scrubReverifyMs)),
          ),
      },
      recorder: this.batchedRecorder(),
      pacer: new Pacer({ bytesPerSecond: config.placement.scrubRateMiBs * MiB }),
      intervalMs: config.placement.scrubIntervalMs,
      batchSize: BATCH,
      concurrency: SCRUB_CONCURRENCY,
    });
    this.onDemand = new Scrubber<ScrubCopy>({
      ...common,
      source: { next: () => Promise.resolve([]) },
      recorder: {
        record: async (copy, finding) =>
          finding.kind === 'ok'
            ? (await this.repo.markVerified([copy])).has(copy.id)
            : this.markSuspect(copy, finding),
      },
      pacer: new Pacer({ bytesPerSecond: 0 }),
      intervalMs: config.placement.scrubIntervalMs,
    });
  }

  /** Whether the background passes run here (placement on and a rate above 0). */
  get enabled(): boolean {
    return this.config.placement.enabled && this.config.placement.scrubRateMiBs > 0;
  }

  onApplicationBootstrap(): void {
    if (!this.enabled) return;
    this.logger.log(
      `scrubbing this site's copies at ${this.config.placement.scrubRateMiBs} MiB/s, ` +
        `${this.config.placement.scrubIntervalMs} ms between passes`,
    );
    // The first pass after one interval: a site just started has its start-up work first.
    this.background.start({ delayFirst: true });
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.background.stop();
  }

  /** One background pass now, paced (tests; the loop does the same on its own). */
  pass(): Promise<ScrubPassStats> {
    return this.background.pass();
  }

  /** Checks this site's copy now, unpaced, and records the finding like a pass would. */
  async checkNow(copy: ScrubCopy): Promise<ScrubFinding> {
    return (await this.onDemand.check(copy, { paced: false })).finding;
  }

  /** Copies found good wait to be written together (one statement, one replicated transaction). */
  private batchedRecorder(): ScrubRecorder<ScrubCopy> {
    return {
      record: async (copy, finding) => {
        if (finding.kind !== 'ok') return this.markSuspect(copy, finding);
        if (this.verified.length === 0) this.verifiedSince = Date.now();
        this.verified.push(copy);
        if (this.verified.length >= VERIFIED_BATCH || Date.now() - this.verifiedSince >= VERIFIED_DELAY_MS)
          await this.flushVerified();
        // Written later, under the same check as a suspect (the row unchanged), or dropped then.
        return true;
      },
      flush: () => this.flushVerified(),
    };
  }

  private async flushVerified(): Promise<void> {
    const copies = this.verified;
    this.verified = [];
    await this.repo.markVerified(copies);
  }

  /** Under the row's lock: still the bytes hashed, and (for a missing file) still missing. */
  private markSuspect(copy: ScrubCopy, finding: ScrubFinding): Promise<boolean> {
    const error = findingError(finding, copy.checksum)!;
    return this.repo.markSuspect(copy, error, async () =>
      finding.kind === 'missing' ? !(await fileExists(this.storage, copy.key)) : true,
    );
  }

  private found(copy: ScrubCopy, finding: ScrubFinding): void {
    if (finding.kind === 'ok') return;
    this.mismatches.inc({ kind: finding.kind });
    this.logger.warn(
      `copy ${copy.id} of object ${copy.objectId} (${copy.key}) marked suspect: ${findingError(finding, copy.checksum)}`,
    );
  }
}
