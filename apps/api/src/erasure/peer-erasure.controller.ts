import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController, ApiTags } from '@nestjs/swagger';
import { ErrorCode, IdSchema } from '@tributary/shared';
import { checkShape, erasureLayout, shardSize } from '@tributary/placement';
import type { Request, Response } from 'express';
import { once } from 'node:events';
import { createZodDto } from 'nestjs-zod';
import parseRange from 'range-parser';
import { z } from 'zod';
import { Public } from '../auth/auth.decorators';
import { DomainError } from '../common/domain-error';
import { MoverRepository } from '../mover/mover.repository';
import { PeerAuthService } from '../replication/peer-auth.service';
import { SiteContext } from '../sites/site-context';
import { ErasureService } from './erasure.service';
import { ShardIO } from './shard-io';

class ShardParamDto extends createZodDto(
  z.object({ id: IdSchema, index: z.coerce.number().int().min(0).max(63) }),
) {}
class ObjectParamDto extends createZodDto(z.object({ id: IdSchema })) {}

const ChecksumQuery = z.object({ checksum: z.string().min(1).max(200) });
const EncodeQuery = z.object({
  checksum: z.string().min(1).max(200),
  index: z.coerce.number().int().min(0).max(63),
  k: z.coerce.number().int().min(1),
  m: z.coerce.number().int().min(1),
  chunk: z.coerce.number().int().min(8),
});
const KeepBody = z
  .object({
    objectId: z.string().regex(/^[0-9]{1,19}$/),
    index: z.number().int().min(0).max(63),
    objectChecksum: z.string().min(1).max(200),
    checksum: z.string().min(1).max(200),
  })
  .strict();

/**
 * The erasure mover's peer routes (signed peer requests only; docs/erasure.md): this site's shard
 * of an object (ranged), one shard encoded from this site's whole copy (only that shard travels),
 * and the confirmation that this site holds a shard before a peer drops a whole copy.
 */
@ApiTags('replication-peer')
@ApiExcludeController()
@Public()
@Controller('api/v1/replication/peer/erasure')
export class PeerErasureController {
  constructor(
    private readonly auth: PeerAuthService,
    private readonly erasure: ErasureService,
    private readonly copies: MoverRepository,
    private readonly io: ShardIO,
    private readonly site: SiteContext,
  ) {}

  /** `?checksum=` (the object's bytes the shard must encode), with `Range`: 206 and the bytes. */
  @Get('shards/:id/:index')
  async shard(@Param() params: ShardParamDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    const peer = await this.auth.verify(req, Buffer.alloc(0));
    const q = ChecksumQuery.safeParse(req.query);
    const row = q.success ? await this.erasure.localShard(params.id, params.index, q.data.checksum) : null;
    if (!row) {
      this.auth.sendError(
        res,
        peer,
        new DomainError(ErrorCode.NotFound, `no good shard ${params.index} of object ${params.id} here`),
      );
      return;
    }
    let range = { start: 0, end: row.size - 1 };
    if (req.headers.range) {
      const parsed = parseRange(row.size, req.headers.range, { combine: true });
      if (!Array.isArray(parsed) || parsed.length !== 1 || !parsed[0]) {
        res.status(416).setHeader('Content-Range', `bytes */${row.size}`).end();
        return;
      }
      range = parsed[0];
    }
    res.status(req.headers.range ? 206 : 200);
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('ETag', `"${row.checksum}"`);
    if (req.headers.range) res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${row.size}`);
    res.setHeader('Content-Length', String(row.size === 0 ? 0 : range.end - range.start + 1));
    if (row.size === 0) {
      res.end();
      return;
    }
    try {
      for await (const piece of this.io.shardFile(row, range)) {
        if (res.destroyed) return;
        if (!res.write(piece)) await once(res, 'drain');
      }
      res.end();
    } catch (err) {
      // A reader that has what it needs (or gave up on this site) closes early: nothing to report.
      if (!res.destroyed) throw err;
    }
  }

  /** `?index&k&m&chunk&checksum`: shard `index` of this site's whole copy of those bytes. */
  @Get('encode/:id')
  async encode(@Param() params: ObjectParamDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    const peer = await this.auth.verify(req, Buffer.alloc(0));
    const q = EncodeQuery.safeParse(req.query);
    try {
      if (!q.success)
        throw new DomainError(ErrorCode.ValidationFailed, 'expected index, k, m, chunk and checksum');
      checkShape(q.data.k, q.data.m);
      if (q.data.index >= q.data.k + q.data.m)
        throw new DomainError(ErrorCode.ValidationFailed, 'index must be below k + m');
      const copy = await this.copies.goodCurrentCopy(params.id, this.site.siteId);
      if (!copy || copy.checksum !== q.data.checksum)
        throw new DomainError(
          ErrorCode.NotFound,
          `no good copy of object ${params.id} with those bytes here`,
        );
      const layout = erasureLayout(q.data.k, q.data.m, copy.size, q.data.chunk);
      if (layout.chunk !== q.data.chunk)
        throw new DomainError(ErrorCode.ValidationFailed, 'chunk does not fit the object');
      res.status(200);
      res.setHeader('Content-Type', 'application/octet-stream');
      res.setHeader('ETag', `"${copy.checksum}"`);
      res.setHeader('Content-Length', String(shardSize(layout)));
      // The headers now: the reader's wait for them is bounded, the first stripe may take longer.
      res.flushHeaders();
      for await (const piece of this.io.shardOfCopy(layout, copy.key, q.data.index)) {
        if (res.destroyed) return;
        if (!res.write(piece)) await once(res, 'drain');
      }
      res.end();
    } catch (err) {
      if (res.headersSent) res.destroy(err instanceof Error ? err : new Error(String(err)));
      else this.auth.sendError(res, peer, err);
    }
  }

  /** `{ objectId, index, objectChecksum, checksum }` → `{ keep }`: see ErasureService.keep. */
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
      const request = KeepBody.safeParse(json);
      if (!request.success)
        throw new DomainError(
          ErrorCode.ValidationFailed,
          'expected { objectId, index, objectChecksum, checksum }',
        );
      this.auth.sendSigned(res, peer, 200, { keep: await this.erasure.keep(request.data) });
    } catch (err) {
      this.auth.sendError(res, peer, err);
    }
  }
}
