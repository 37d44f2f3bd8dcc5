import { Injectable } from '@nestjs/common';
import type {
  CatalogDigestDto,
  ReplicationConflictDto,
  ReplicationCycleDto,
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
  constructor(
    private readonly replication: ReplicationService,
    private readonly repo: ReplicationRepository,
    private readonly access: AccessService,
  ) {}

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
        lastErrorAt: iso(peer.lastErrorAt),
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
