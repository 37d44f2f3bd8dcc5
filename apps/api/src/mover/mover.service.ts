import {
  BeforeApplicationShutdown,
  Inject,
  Injectable,
  Logger,
  OnApplicationBootstrap,
} from '@nestjs/common';
import {
  COPY_STATES,
  ErrorCode,
  type CopyState,
  type MoverStatusDto,
  type ObjectCopiesDto,
} from '@tributary/shared';
import { Mover, wantedSites, type CopyJob, type MoverCatalog, type SurplusCopy } from '@tributary/placement';
import { Counter, Gauge } from 'prom-client';
import { AccessService } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { MetricsRegistry } from '../health/metrics';
import { entryTarget, NamespaceService } from '../namespace/namespace.service';
import { ReplicationService } from '../replication/replication.service';
import { PeerAvailability } from '../sites/peer-availability';
import { SiteContext } from '../sites/site-context';
import { StorageService } from '../storage/storage.service';
import { CopyTransfers } from './copy-transfers';
import { MoverRepository } from './mover.repository';

const MiB = 1024 * 1024;
/** Objects up to this size are copied in batches. */
export const SMALL_OBJECT_BYTES = 1 * MiB;
/** Rows planned in one pass above which the statistics of replicas are refreshed at once. */
const ANALYZE_AFTER_ROWS = 1000;

/**
 * This site's mover (docs/placement.md, "The mover"): the engine of packages/placement on this
 * site's catalog (MoverRepository), storage and peers (CopyTransfers), its passes started once the
 * site is bootstrapped; the receiving side of keep requests; the copies of an object and the
 * mover's status for the API; its figures in /metrics.
 */
@Injectable()
export class MoverService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Mover');
  readonly mover: Mover;
  private waiting: NodeJS.Timeout | undefined;
  private readonly failures: Counter;

  constructor(
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
    private readonly repo: MoverRepository,
    private readonly site: SiteContext,
    private readonly storage: StorageService,
    private readonly replication: ReplicationService,
    private readonly availability: PeerAvailability,
    private readonly namespace: NamespaceService,
    private readonly access: AccessService,
    metrics: MetricsRegistry,
  ) {
    const p = config.placement;
    const bytes = new Counter({
      name: 'tributary_placement_bytes_total',
      help: 'Bytes the mover copied in from other sites',
      registers: [metrics.registry],
    });
    this.failures = new Counter({
      name: 'tributary_placement_failures_total',
      help: 'Copy attempts that failed',
      registers: [metrics.registry],
    });
    new Gauge({
      name: 'tributary_placement_copies',
      help: "Copies at this site per state (the mover's queue)",
      labelNames: ['state'] as const,
      registers: [metrics.registry],
      collect: async function (this: Gauge<'state'>) {
        const counts: Partial<Record<CopyState, number>> = await repo
          .stateCounts(config.siteId)
          .catch(() => ({}));
        for (const state of COPY_STATES) this.set({ state }, counts[state] ?? 0);
      },
    });
    const catalog: MoverCatalog = {
      plan: () => this.plan(),
      due: (limit, skip) => this.due(limit, skip),
      recordFailure: (job, error, attempts, next) =>
        this.repo.recordFailure(job.replicaId, this.site.siteId, error, attempts, next),
      surplus: (limit) => this.surplus(limit),
    };
    this.mover = new Mover({
      siteId: config.siteId,
      catalog,
      transfers: new CopyTransfers({
        siteId: () => this.site.siteId,
        repo,
        storage,
        peers: replication.peers,
        availability,
        connectTimeoutMs: config.peerReads.connectTimeoutMs,
        smallBytes: SMALL_OBJECT_BYTES,
      }),
      logger: { log: (m) => this.logger.log(m), warn: (m) => this.logger.warn(m) },
      concurrency: p.concurrency,
      bytesPerSecond: p.bandwidthMiBs * MiB,
      intervalMs: p.intervalMs,
      smallBytes: SMALL_OBJECT_BYTES,
      sourceDownMs: config.peerReads.downMs,
      onBytes: (n) => bytes.inc(n),
      onFailure: () => this.failures.inc(),
    });
  }

  /** Starts the passes once the bootstrap has found this site's row and storage resource. */
  onApplicationBootstrap(): void {
    if (!this.config.placement.enabled) return;
    const check = (): void => {
      if (this.site.siteId && this.site.resourceId) {
        this.waiting = undefined;
        void this.dropOrphanDrafts()
          .catch((err: unknown) => this.logger.warn(`could not sweep the copy drafts: ${String(err)}`))
          .finally(() => this.mover.start());
        return;
      }
      this.waiting = setTimeout(check, 200);
    };
    check();
  }

  /** Partial copies whose row is gone or good (a purge, a trim, a copy made meanwhile) are of no use. */
  private async dropOrphanDrafts(): Promise<void> {
    const drafts = await this.storage.copies.list();
    const rowOf = (id: string): string => /^r([0-9]+)-/.exec(id)?.[1] ?? '';
    const waiting = await this.repo.waitingRows(
      this.site.siteId,
      drafts.map(rowOf).filter((id) => id !== ''),
    );
    for (const id of drafts) if (!waiting.has(rowOf(id))) await this.storage.copies.remove(id);
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearTimeout(this.waiting);
    await this.mover.stop();
  }

  private async plan(): Promise<{ added: number; staled: number }> {
    let added = 0;
    for (const rule of await this.repo.liveRules())
      added += await this.repo.planRule(rule, this.site.siteId, this.site.resourceId);
    // Thousands of new rows at once: the statistics are refreshed now rather than when autovacuum
    // next looks (up to a minute), so the queries that follow are planned for the table as it is.
    if (added >= ANALYZE_AFTER_ROWS)
      await this.repo
        .analyzeCopies()
        .catch((err: unknown) =>
          this.logger.warn(`could not refresh the statistics of replicas: ${String(err)}`),
        );
    const staled = await this.repo.markStale(this.site.siteId);
    return { added, staled };
  }

  private async due(limit: number, skip: readonly string[]): Promise<CopyJob[]> {
    const rows = await this.repo.due(this.site.siteId, limit, skip);
    // Sources that did not answer lately go last (the memory reads share).
    return rows.map((r) => ({ ...r, sources: this.availability.order(r.sources) }));
  }

  /** Copies here that no rule wants, of objects rules cover, with the wanted sites of each. */
  private async surplus(limit: number): Promise<SurplusCopy[]> {
    const me = this.site.siteId;
    const rules = await this.repo.liveRules();
    if (!rules.length) return [];
    const covering = new Map<string, typeof rules>();
    for (const rule of rules)
      for (const id of await this.repo.coveredHere(rule, me))
        covering.set(id, [...(covering.get(id) ?? []), rule]);
    if (!covering.size) return [];
    const sites = await this.repo.sites();
    const wanted = new Map<string, string[]>();
    for (const [id, rs] of covering) {
      // Subscriptions add a wanted site; on their own they leave an object's copies as they are.
      if (rs.every((r) => r.subscription)) continue;
      const w = wantedSites(BigInt(id), rs, sites);
      if (!w.includes(me)) wanted.set(id, w);
      if (wanted.size >= limit) break;
    }
    const copies = await this.repo.copiesHere(me, [...wanted.keys()]);
    return copies.map((c) => ({
      replicaId: c.replicaId,
      objectId: c.objectId,
      path: c.path,
      checksum: c.objectChecksum,
      good: c.status === 'good' && c.current,
      wanted: wanted.get(c.objectId) ?? [],
      goodAt: c.goodAt,
    }));
  }

  /**
   * A peer asks this site to keep its copy of an object (at `checksum`) while the peer removes
   * its own. Yes only when this site is not trimming (or evicting) that object, and in its own view
   * its copy is good and has the object's checksum, which is that one, and (for a trim) its site is
   * wanted; a yes holds for the lease. A peer evicting a cached copy (docs/caching.md) needs only a
   * good copy kept elsewhere: every removal of a good copy (trim or eviction) asks for such a promise
   * and none is given by a site removing its own, so the last good copy never goes.
   */
  async keep(objectId: string, checksum: string, purpose: 'trim' | 'evict' = 'trim'): Promise<boolean> {
    // The lease starts before the checks, so no trim of this site starts in between.
    const lease = this.mover.reserve(objectId);
    if (!lease) return false;
    const me = this.site.siteId;
    let yes = false;
    try {
      const copy = await this.repo.goodCurrentCopy(objectId, me);
      const object = copy?.checksum === checksum ? await this.repo.objectWithRules(objectId) : null;
      yes =
        object?.checksum === checksum &&
        (purpose === 'evict' ||
          wantedSites(BigInt(objectId), object.rules, await this.repo.sites()).includes(me));
      return yes;
    } finally {
      if (!yes) lease.release();
    }
  }

  /** An object's copies at every site, with the rules that cover it (read access needed). */
  async copies(principal: Principal, path: string): Promise<ObjectCopiesDto> {
    this.access.assertWithinToken(principal, path);
    const entry = await this.namespace.resolve(path);
    await this.access.requireAt(principal, path, entry && entryTarget(entry), 'read', () => notFound(path));
    if (!entry || entry.kind !== 'object')
      throw new DomainError(ErrorCode.NotAnObject, `${path} is a collection; its objects have copies`);
    const id = entry.id.toString();
    const rules = entry.linkTarget === null ? await this.repo.rulesCovering(id) : [];
    const wanted = wantedSites(entry.id, rules, await this.repo.sites());
    const rows = await this.repo.copiesOf(id);
    return {
      path,
      size: Number(entry.size),
      checksum: entry.checksum,
      wantedSites: wanted,
      rules: rules.map((r) => r.id),
      copies: rows.map((r) => ({
        site: r.siteId,
        state: r.status,
        current: r.status === 'good' && r.checksum === entry.checksum,
        size: r.size,
        checksum: r.checksum,
        verifiedAt: r.verifiedAt?.toISOString() ?? null,
        error: r.error,
        wanted: wanted.includes(r.siteId),
        cached: r.cached,
        pinned: r.pinned,
        updatedAt: r.updatedAt.toISOString(),
      })),
    };
  }

  /** This site's mover: copies per state, transfers in flight, failures, rate (administrators). */
  async status(principal: Principal): Promise<MoverStatusDto> {
    this.access.assertAdmin(principal);
    const me = this.site.siteId;
    const counts = await this.repo.stateCounts(me);
    const states = Object.fromEntries(COPY_STATES.map((s) => [s, counts[s] ?? 0])) as Record<
      CopyState,
      number
    >;
    const now = this.mover.status();
    return {
      site: me,
      states,
      inFlight: now.inFlight.map((t) => ({
        path: t.path,
        from: t.from,
        bytesDone: t.bytesDone,
        size: t.size,
        startedAt: t.startedAt.toISOString(),
      })),
      failed: (await this.repo.failures(me, 100)).map((f) => ({
        path: f.path,
        error: f.error,
        attempts: f.attempts,
        nextAttemptAt: f.nextAttemptAt?.toISOString() ?? null,
      })),
      bytesPerSecond: now.bytesPerSecond,
      bytesTotal: now.bytesTotal,
      settings: {
        concurrency: this.config.placement.concurrency,
        bandwidthMiBs: this.config.placement.bandwidthMiBs,
        scrubRateMiBs: this.config.placement.scrubRateMiBs,
      },
    };
  }
}
