import { Controller, Get, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController, ApiTags } from '@nestjs/swagger';
import { ErrorCode } from '@tributary/shared';
import type { Request, Response } from 'express';
import { once } from 'node:events';
import { z } from 'zod';
import { Public } from '../auth/auth.decorators';
import { DomainError } from '../common/domain-error';
import { PeerAuthService } from '../replication/peer-auth.service';
import { MAX_BATCH_IDS } from './copy-transfers';
import { MoverService } from './mover.service';
import { PeerBatchSource } from './peer-batch';

const BatchQuerySchema = z.object({
  ids: z
    .string()
    .regex(/^[0-9]{1,19}(,[0-9]{1,19})*$/, 'must be object ids separated by commas')
    .transform((v) => [...new Set(v.split(','))])
    .refine((ids) => ids.length <= MAX_BATCH_IDS, `at most ${MAX_BATCH_IDS} ids`),
});

const KeepRequestSchema = z
  .object({
    objectId: z.string().regex(/^[0-9]{1,19}$/),
    checksum: z.string().min(1).max(200),
    /** `evict`: the caller evicts a cached copy (no need for this site to be wanted). */
    purpose: z.enum(['trim', 'evict']).optional(),
  })
  .strict();

/**
 * The mover's peer routes (signed peer requests only): many small objects' bytes in one answer
 * for a site copying them, and the promise to keep a copy while a peer removes its own.
 */
@ApiTags('replication-peer')
@ApiExcludeController()
@Public()
@Controller('api/v1/replication/peer/placement')
export class PeerPlacementController {
  constructor(
    private readonly auth: PeerAuthService,
    private readonly batchSource: PeerBatchSource,
    private readonly mover: MoverService,
  ) {}

  /**
   * `?ids=1,2,3`: for each object, a frame (see packages/placement frames.ts) with this site's good
   * copy of its current bytes, or an error frame when it has none. Small objects only.
   */
  @Get('batch')
  async batch(@Req() req: Request, @Res() res: Response): Promise<void> {
    const peer = await this.auth.verify(req, Buffer.alloc(0));
    const parsed = BatchQuerySchema.safeParse(req.query);
    if (!parsed.success) {
      this.auth.sendError(
        res,
        peer,
        new DomainError(
          ErrorCode.ValidationFailed,
          'ids: ' + parsed.error.issues.map((i) => i.message).join('; '),
        ),
      );
      return;
    }
    res.status(200).setHeader('Content-Type', 'application/octet-stream');
    for await (const frame of this.batchSource.frames(parsed.data.ids)) {
      if (res.destroyed) return;
      for (const part of frame) if (!res.write(part)) await once(res, 'drain');
    }
    res.end();
  }

  /** `{ objectId, checksum }` → `{ keep }`: see MoverService.keep. */
  @Post('keep')
  async keep(@Req() req: Request, @Res() res: Response): Promise<void> {
    const { peer, body } = await this.auth.readVerified(req, res, 4096);
    try {
      let json: unknown;
      try {
        json = JSON.parse(body.toString('utf8'));
      } catch {
        json = undefined;
      }
      const request = KeepRequestSchema.safeParse(json);
      if (!request.success)
        throw new DomainError(ErrorCode.ValidationFailed, 'expected { objectId, checksum, purpose? }');
      const keep = await this.mover.keep(
        request.data.objectId,
        request.data.checksum,
        request.data.purpose ?? 'trim',
      );
      this.auth.sendSigned(res, peer, 200, { keep });
    } catch (err) {
      this.auth.sendError(res, peer, err);
    }
  }
}
