import { Controller, Get, HttpCode, Post, Query, Req, Res } from '@nestjs/common';
import { ApiExcludeController, ApiTags } from '@nestjs/swagger';
import {
  CatalogDigestDtoSchema,
  ErrorCode,
  ReplicationConflictDtoSchema,
  ReplicationCycleDtoSchema,
  ReplicationLagDtoSchema,
  ReplicationStatusDtoSchema,
  type CatalogDigestDto,
  type ReplicationConflictDto,
  type ReplicationLagDto,
  type ReplicationStatusDto,
} from '@tributary/shared';
import { BatchRejectedError, type Batch } from '@tributary/replication';
import type { Request, Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { CurrentPrincipal, Public, RequireScope } from '../auth/auth.decorators';
import { Answer } from '../common/api-responses';
import { DomainError } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { PeerAuthService } from './peer-auth.service';
import { ReplicationAdminService } from './replication-admin.service';
import { ReplicationService } from './replication.service';

/** Largest batch a peer may send (the dispatcher sends about 10,000 changes per request). */
const MAX_BATCH_BYTES = 256 * 1024 * 1024;

class ConflictsQueryDto extends createZodDto(
  z.object({
    limit: z.coerce.number().int().min(1).max(500).default(100),
    /** Only conflicts detected before this time (ISO 8601), for paging back. */
    before: z.iso.datetime({ offset: true }).optional(),
  }),
) {}

class LagQueryDto extends createZodDto(
  z.object({
    /** How far back, in hours (samples are kept for a day). */
    hours: z.coerce.number().positive().max(24).default(6),
    /** At most this many samples per peer (the latest). */
    limit: z.coerce.number().int().min(1).max(3000).default(720),
  }),
) {}

/** Operators' view of replication: status, the catalog digest, conflicts, and a cycle on demand. */
@ApiTags('replication')
@Controller('api/v1/replication')
export class ReplicationController {
  constructor(private readonly admin: ReplicationAdminService) {}

  @Answer(200, ReplicationStatusDtoSchema, 'Replication at this site')
  @Get('status')
  status(@CurrentPrincipal() p: Principal): Promise<ReplicationStatusDto> {
    return this.admin.status(p);
  }

  /** Lag per peer over time: one sample per peer after each cycle, kept for a day. */
  @Answer(200, ReplicationLagDtoSchema, 'Lag samples per peer')
  @Get('lag')
  lag(@CurrentPrincipal() p: Principal, @Query() q: LagQueryDto): Promise<ReplicationLagDto> {
    return this.admin.lag(p, q.hours, q.limit);
  }

  /** A digest of the replicated catalog: equal at two sites means their catalogs agree. */
  @Answer(200, CatalogDigestDtoSchema, 'The digest')
  @Get('digest')
  digest(@CurrentPrincipal() p: Principal): Promise<CatalogDigestDto> {
    return this.admin.digest(p);
  }

  @Answer(200, [ReplicationConflictDtoSchema], 'Conflicts detected, newest first')
  @Get('conflicts')
  conflicts(
    @CurrentPrincipal() p: Principal,
    @Query() q: ConflictsQueryDto,
  ): Promise<ReplicationConflictDto[]> {
    return this.admin.conflicts(p, q.limit, q.before);
  }

  /** Runs a replication cycle now instead of waiting for the next one. */
  @Answer(200, ReplicationCycleDtoSchema, 'The cycle run')
  @Post('cycle')
  @HttpCode(200)
  @RequireScope('admin')
  cycle(@CurrentPrincipal() p: Principal): Promise<ReplicationStatusDto['cycles'][number]> {
    return this.admin.cycle(p);
  }
}

/**
 * What peer sites call: signed requests only (see PeerAuthService), answers signed. Not part of the
 * public API documentation's client surface.
 */
@ApiTags('replication-peer')
@ApiExcludeController()
@Public()
@Controller('api/v1/replication/peer')
export class PeerController {
  constructor(
    private readonly auth: PeerAuthService,
    private readonly replication: ReplicationService,
  ) {}

  /** The collector: a peer's batch of its own transactions; answers what is stored here. */
  @Post('batch')
  async batch(@Req() req: Request, @Res() res: Response): Promise<void> {
    const { peer, body } = await this.auth.readVerified(req, res, MAX_BATCH_BYTES);
    try {
      let batch: Batch;
      try {
        batch = JSON.parse(body.toString('utf8')) as Batch;
      } catch {
        throw new DomainError(ErrorCode.BatchRejected, 'the batch is not valid JSON');
      }
      const ack = await this.replication.engine.receive(peer.peer, batch).catch((err: unknown) => {
        if (err instanceof BatchRejectedError) throw new DomainError(ErrorCode.BatchRejected, err.message);
        throw err;
      });
      this.auth.sendSigned(res, peer, 200, ack);
    } catch (err) {
      this.auth.sendError(res, peer, err);
    }
  }

  /** A consistent copy of this site's catalog for a site joining the federation. */
  @Post('snapshot')
  async snapshot(@Req() req: Request, @Res() res: Response): Promise<void> {
    const { peer } = await this.auth.readVerified(req, res, 1024 * 1024);
    try {
      this.auth.sendSigned(res, peer, 200, await this.replication.snapshotFor(peer.peer));
    } catch (err) {
      this.auth.sendError(res, peer, err);
    }
  }
}
