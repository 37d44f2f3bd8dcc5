import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import {
  createSnapshot,
  HttpTransport,
  loadSnapshot,
  PeerClient,
  ReplicationEngine,
  type CatalogSnapshot,
  type CycleReport,
  type PeerStatus,
  type ReplicationLogger,
} from '@tributary/replication';
import { Counter, Gauge } from 'prom-client';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { SqlPool } from '../database/sql-pool';
import { MetricsRegistry } from '../health/metrics';

export const SNAPSHOT_PATH = '/api/v1/replication/peer/snapshot';

/**
 * This site's replication: the engine (packages/replication) on the site's catalog pool, talking to
 * peers over signed HTTP, its cycle started once the site is bootstrapped, and its figures in
 * /metrics. A new site configured with JOIN_FROM copies that peer's catalog before anything else.
 */
@Injectable()
export class ReplicationService implements OnApplicationShutdown {
  private readonly logger = new Logger('Replication');
  readonly peers: PeerClient;
  readonly engine: ReplicationEngine;
  private readonly counters: {
    cycles: Counter;
  };

  constructor(
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
    private readonly sql: SqlPool,
    metrics: MetricsRegistry,
  ) {
    const r = config.replication;
    this.peers = new PeerClient(config.siteId, r.peers);
    const logger: ReplicationLogger = {
      log: (m) => this.logger.log(m),
      warn: (m) => this.logger.warn(m),
      error: (m) => this.logger.error(m),
    };
    this.engine = new ReplicationEngine({
      db: sql.pool,
      siteId: config.siteId,
      peers: r.peers.map((p) => p.id),
      transport: new HttpTransport(this.peers),
      cycleMs: r.cycleMs,
      retentionMs: r.retentionMs,
      logger,
    });
    this.counters = { cycles: registerMetrics(metrics, this.engine) };
    this.engine.onCycle = (report: CycleReport) => {
      this.counters.cycles.inc();
      if (report.injected.conflicts > 0)
        this.logger.warn(`${report.injected.conflicts} conflict(s) resolved provisionally this cycle`);
    };
  }

  /** Copies the catalog of JOIN_FROM into this site's new, empty catalog (retrying while it starts). */
  async joinIfNew(): Promise<{ joined: boolean; rows?: number }> {
    const from = this.config.replication.joinFrom;
    if (!from) return { joined: false };
    const registered = await this.sql.query('SELECT 1 FROM sites WHERE is_local');
    if (registered.rowCount) return { joined: false };
    const deadline = Date.now() + 120_000;
    for (let attempt = 1; ; attempt++) {
      try {
        const snapshot = await this.peers.request<CatalogSnapshot>(from, 'POST', SNAPSHOT_PATH, {});
        const loaded = await loadSnapshot(this.sql.pool, snapshot);
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
    );
  }

  start(): void {
    if (this.config.replication.enabled) this.engine.start();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.engine.stop();
  }
}

function registerMetrics(metrics: MetricsRegistry, engine: ReplicationEngine): Counter {
  const registers = [metrics.registry];
  // Registered first: its collect() reads the engine's status once per scrape and fills the rest.
  new Gauge({
    name: 'tributary_replication_conflicts',
    help: 'Conflicts recorded at this site',
    registers,
    async collect() {
      const status = await engine.status();
      this.set(status.conflicts);
      for (const p of status.peers) {
        backlog.set({ peer: p.peer }, p.backlog.changes);
        incoming.set({ peer: p.peer }, p.incoming.changes);
        lag.set({ peer: p.peer }, p.lagSeconds);
        lastSuccess.set({ peer: p.peer }, p.lastSuccessAt ? p.lastSuccessAt.getTime() / 1000 : 0);
        failing.set({ peer: p.peer }, isFailing(p) ? 1 : 0);
      }
    },
  });
  const cycles = new Counter({
    name: 'tributary_replication_cycles_total',
    help: 'Replication cycles run since the site started',
    registers,
  });
  const backlog = new Gauge({
    name: 'tributary_replication_backlog_changes',
    help: 'Changes queued for a peer and not yet acknowledged',
    labelNames: ['peer'] as const,
    registers,
  });
  const incoming = new Gauge({
    name: 'tributary_replication_incoming_changes',
    help: 'Changes received from a peer and not yet applied here',
    labelNames: ['peer'] as const,
    registers,
  });
  const lag = new Gauge({
    name: 'tributary_replication_lag_seconds',
    help: 'Age of the oldest change waiting for a peer',
    labelNames: ['peer'] as const,
    registers,
  });
  const lastSuccess = new Gauge({
    name: 'tributary_replication_last_success_timestamp_seconds',
    help: 'When the last exchange with a peer succeeded (0: never)',
    labelNames: ['peer'] as const,
    registers,
  });
  const failing = new Gauge({
    name: 'tributary_replication_peer_failing',
    help: '1 when the last exchange with a peer failed',
    labelNames: ['peer'] as const,
    registers,
  });
  return cycles;
}

function isFailing(p: PeerStatus): boolean {
  if (!p.lastError) return false;
  return !p.lastSuccessAt || (p.lastErrorAt !== null && p.lastErrorAt > p.lastSuccessAt);
}
