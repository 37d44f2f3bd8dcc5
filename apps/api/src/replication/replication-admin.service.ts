import { Injectable, Logger } from '@nestjs/common';
import type {
  CatalogDigestDto,
  ReplicationConflictDto,
  ReplicationCycleDto,
  ReplicationLagDto,
  ReplicationStatusDto,
} from '@tributary/shared';
import type { CycleReport } from '@tributary/replication';
import { AccessService } from '../access/access.service';
import type { Principal } from '../common/principal';
import { ReplicationRepository } from './replication.repository';
import { ReplicationService } from './replication.service';

/** Status, digest, conflicts and cycles for administrators (operators of the site). */
@Injectable()
export class ReplicationAdminService {
  private readonly logger = new Logger('Replication');

  constructor(
    private readonly replication: ReplicationService,
    private readonly repo: ReplicationRepository,
    private readonly access: AccessService,
  ) {
    // One lag sample per peer after every cycle, for the chart of lag over time.
    replication.afterCycle((report) => {
      void this.sampleLag(report.startedAt).catch((err: unknown) =>
        this.logger.warn(
          `recording replication lag failed: ${err instanceof Error ? err.message : String(err)}`,
        ),
      );
    });
  }

  private async sampleLag(at: Date): Promise<void> {
    const s = await this.replication.engine.status();
    await this.repo.recordLag(
      at,
      s.peers.map((p) => ({ peer: p.peer, lagSeconds: p.lagSeconds, backlogChanges: p.backlog.changes })),
    );
  }

  /** Lag per peer over the last `hours` (one sample per cycle, the latest `perPeer` of them). */
  async lag(p: Principal, hours: number, perPeer: number): Promise<ReplicationLagDto> {
    this.access.assertAdmin(p);
    const rows = await this.repo.lagSince(new Date(Date.now() - hours * 3600_000), perPeer);
    const peers = new Map<string, ReplicationLagDto['peers'][number]>();
    for (const peer of this.replication.peerIds) peers.set(peer, { peer, samples: [] });
    for (const r of rows) {
      const entry = peers.get(r.peer) ?? { peer: r.peer, samples: [] };
      entry.samples.push({
        at: r.at.toISOString(),
        lagSeconds: Math.round(r.lagSeconds * 10) / 10,
        backlogChanges: r.backlogChanges,
      });
      peers.set(r.peer, entry);
    }
    return { site: this.replication.engine.siteId, hours, peers: [...peers.values()] };
  }

  async status(p: Principal): Promise<ReplicationStatusDto> {
    this.access.assertAdmin(p);
    const s = await this.replication.engine.status();
    return {
      site: s.site,
      running: s.running,
      cycleSeconds: s.cycleSeconds,
      lastSeq: s.lastSeq,
      pendingCapture: s.pendingCapture,
      conflicts: s.conflicts,
      peers: s.peers.map((peer) => ({
        ...peer,
        lastSuccessAt: iso(peer.lastSuccessAt),
        lastAttemptAt: iso(peer.lastAttemptAt),
        // The engine clears the error text after a successful exchange but keeps its time: show
        // the time only with the error it belongs to (both null once the peer answers again).
        lastErrorAt: peer.lastError === null ? null : iso(peer.lastErrorAt),
        lagSeconds: Math.round(peer.lagSeconds * 10) / 10,
      })),
      cycles: s.cycles.map(cycleDto),
    };
  }

  async digest(p: Principal): Promise<CatalogDigestDto> {
    this.access.assertAdmin(p);
    const d = await this.replication.engine.digest();
    return { site: this.replication.engine.siteId, ...d };
  }

  async cycle(p: Principal): Promise<ReplicationCycleDto> {
    this.access.assertAdmin(p);
    return cycleDto(await this.replication.engine.runCycle());
  }

  conflicts(p: Principal, limit: number, before?: string): Promise<ReplicationConflictDto[]> {
    this.access.assertAdmin(p);
    return this.repo.conflicts(limit, before ? new Date(before) : undefined);
  }
}

function iso(d: Date | null): string | null {
  return d ? d.toISOString() : null;
}

function cycleDto(c: CycleReport): ReplicationCycleDto {
  return { ...c, startedAt: c.startedAt.toISOString() };
}
