import { BeforeApplicationShutdown, Inject, Injectable, Logger } from '@nestjs/common';
import {
  createSnapshot,
  HttpTransport,
  loadSnapshot,
  PeerClient,
  ReplicationEngine,
  type CatalogSnapshot,
  type CycleReport,
  type EngineStatus,
  type PeerStatus,
  type ReplicatedApplication,
  type ReplicationLogger,
} from '@tributary/replication';
import { Counter, Gauge } from 'prom-client';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { SqlPool } from '../database/sql-pool';
import { ReplicationRepository } from './replication.repository';
import { MetricsRegistry } from '../health/metrics';
import { catalogApplication } from './catalog/application';

export const SNAPSHOT_PATH = '/api/v1/replication/peer/snapshot';

/**
 * This site's replication: the engine (packages/replication) with the catalog's tables and rules
 * (./catalog) on the site's catalog pool, talking to peers over signed HTTP, its cycle started once
 * the site is bootstrapped, and its figures in /metrics. A new site configured with JOIN_FROM
 * copies that peer's catalog before anything else.
 */
@Injectable()
export class ReplicationService implements BeforeApplicationShutdown {
  private readonly logger = new Logger('Replication');
  readonly peers: PeerClient;
  /** The configured peer sites' ids. */
  readonly peerIds: readonly string[];
  readonly engine: ReplicationEngine;
  private readonly application: ReplicatedApplication;
  private readonly counters: {
    cycles: Counter;
  };

  constructor(
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
    private readonly sql: SqlPool,
    private readonly repo: ReplicationRepository,
    metrics: MetricsRegistry,
  ) {
    const r = config.replication;
    this.peers = new PeerClient(config.siteId, r.peers);
    this.peerIds = r.peers.map((p) => p.id);
    const logger: ReplicationLogger = {
      log: (m) => this.logger.log(m),
      warn: (m) => this.logger.warn(m),
      error: (m) => this.logger.error(m),
    };
    this.application = catalogApplication({ conflictDeadlineMs: r.conflictDeadlineMs });
    this.engine = new ReplicationEngine({
      db: sql.pool,
      siteId: config.siteId,
      peers: r.peers.map((p) => p.id),
      transport: new HttpTransport(this.peers),
      cycleMs: r.cycleMs,
      retentionMs: r.retentionMs,
      application: this.application,
      logger,
    });
    this.counters = { cycles: registerMetrics(metrics, this.engine) };
    this.engine.onCycle = (report: CycleReport) => {
      this.counters.cycles.inc();
      if (!report.error) this.lastCycleStartedAt = report.startedAt;
      for (const listener of this.cycleListeners) listener(report);
      if (report.injected.conflicts > 0)
        this.logger.warn(`${report.injected.conflicts} conflict(s) resolved provisionally this cycle`);
    };
  }

  private readonly cycleListeners: Array<(report: CycleReport) => void> = [];

  /**
   * When the last cycle that completed started (this process's start before the first): what this
   * site wrote before that moment has been extracted and offered to every peer.
   */
  lastCycleStartedAt = new Date();

  /** Calls `listener` after every replication cycle (conflict policies run then). */
  afterCycle(listener: (report: CycleReport) => void): void {
    this.cycleListeners.push(listener);
  }

  /** Copies the catalog of JOIN_FROM into this site's new, empty catalog (retrying while it starts). */
  async joinIfNew(): Promise<{ joined: boolean; rows?: number }> {
    const from = this.config.replication.joinFrom;
    if (!from) return { joined: false };
    if (await this.repo.hasLocalSite()) return { joined: false };
    const deadline = Date.now() + 120_000;
    for (let attempt = 1; ; attempt++) {
      try {
        const snapshot = await this.peers.request<CatalogSnapshot>(from, 'POST', SNAPSHOT_PATH, {});
        const loaded = await loadSnapshot(this.sql.pool, snapshot, this.application.snapshot);
        this.logger.log(`joined the federation: copied ${loaded.rows} catalog rows from ${from}`);
        return { joined: true, rows: loaded.rows };
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        const retryable = /unreachable|50\d/.test(message);
        if (!retryable || Date.now() > deadline) throw new Error(`joining from ${from} failed: ${message}`);
        if (attempt === 1) this.logger.log(`waiting for ${from} to answer the join request (${message})`);
        await new Promise((r) => setTimeout(r, 1000));
      }
    }
  }

  snapshotFor(peer: string): Promise<CatalogSnapshot> {
    return createSnapshot(
      this.sql.pool,
      this.config.siteId,
      this.config.replication.peers.map((p) => p.id),
      peer,
      this.application.snapshot,
    );
  }

  start(): void {
    if (this.config.replication.enabled) this.engine.start();
  }

  /** Before the pool ends (SqlPool): a running cycle finishes first. */
  async beforeApplicationShutdown(): Promise<void> {
    await this.engine.stop();
  }
}

function registerMetrics(metrics: MetricsRegistry, engine: ReplicationEngine): Counter {
  const registers = [metrics.registry];
  // prom-client collects every metric at once: each gauge awaits one status read shared by the scrape.
  let scrape: { at: number; status: Promise<EngineStatus> } | undefined;
  const status = (): Promise<EngineStatus> => {
    if (!scrape || Date.now() - scrape.at > 500) scrape = { at: Date.now(), status: engine.status() };
    return scrape.status;
  };
  const perPeer = (name: string, help: string, value: (p: PeerStatus) => number): Gauge =>
    new Gauge({
      name,
      help,
      labelNames: ['peer'] as const,
      registers,
      async collect() {
        for (const p of (await status()).peers) this.set({ peer: p.peer }, value(p));
      },
    });
  new Gauge({
    name: 'tributary_replication_conflicts',
    help: 'Conflicts recorded at this site',
    registers,
    async collect() {
      this.set((await status()).conflicts);
    },
  });
  perPeer(
    'tributary_replication_backlog_changes',
    'Changes queued for a peer and not yet acknowledged',
    (p) => p.backlog.changes,
  );
  perPeer(
    'tributary_replication_incoming_changes',
    'Changes received from a peer and not yet applied here',
    (p) => p.incoming.changes,
  );
  perPeer(
    'tributary_replication_lag_seconds',
    'Age of the oldest change waiting for a peer',
    (p) => p.lagSeconds,
  );
  perPeer(
    'tributary_replication_last_success_timestamp_seconds',
    'When the last exchange with a peer succeeded (0: never)',
    (p) => (p.lastSuccessAt ? p.lastSuccessAt.getTime() / 1000 : 0),
  );
  perPeer('tributary_replication_peer_failing', '1 when the last exchange with a peer failed', (p) =>
    isFailing(p) ? 1 : 0,
  );
  return new Counter({
    name: 'tributary_replication_cycles_total',
    help: 'Replication cycles run since the site started',
    registers,
  });
}

function isFailing(p: PeerStatus): boolean {
  if (!p.lastError) return false;
  return !p.lastSuccessAt || (p.lastErrorAt !== null && p.lastErrorAt > p.lastSuccessAt);
}
