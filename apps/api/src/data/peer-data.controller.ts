import { Controller, Get, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController, ApiTags } from '@nestjs/swagger';
import { ErrorCode, IdSchema } from '@tributary/shared';
import { ENVELOPE_HEADER } from '@tributary/replication';
import type { Request, Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import parseRange from 'range-parser';
import { z } from 'zod';
import { Public } from '../auth/auth.decorators';
import { AuthService } from '../auth/auth.service';
import { DomainError } from '../common/domain-error';
import { PeerAuthService } from '../replication/peer-auth.service';
import { sendAll } from './byte-answers';
import { ForwardedUpdateSchema, type ForwardedUpdate } from './forwarded-update';
import { ForwardedUpdateService } from './forwarded-update.service';
import { ReadService } from './read.service';

class ObjectIdParamDto extends createZodDto(z.object({ id: IdSchema })) {}

/**
 * Object bytes for peer sites: a site that holds no copy of an object reads it through the site
 * that does (location transparency; the peer checked the user's access), and forwards its users'
 * updates of the bytes here (checked here: see ForwardedUpdateService.accept). Signed peer
 * requests only.
 */
@ApiTags('replication-peer')
@ApiExcludeController()
@Public()
@Controller('api/v1/replication/peer/objects')
export class PeerDataController {
  constructor(
    private readonly auth: PeerAuthService,
    private readonly users: AuthService,
    private readonly forwarded: ForwardedUpdateService,
    private readonly reads: ReadService,
  ) {}

  @Post(':id/bytes')
  async update(@Param() params: ObjectIdParamDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    const envelope = req.headers[ENVELOPE_HEADER];
    // The signature covers the envelope, which carries the body's size and SHA-256.
    const peer = await this.auth.verify(req, Buffer.from(typeof envelope === 'string' ? envelope : ''));
    try {
      const update = parseEnvelope(envelope, params.id);
      const principal = await this.users.forwardedPrincipal(BigInt(update.userId));
      const entry = await this.forwarded.accept(principal, peer.peer, update, req);
      this.auth.sendSigned(res, peer, 200, entry);
    } catch (err) {
      req.resume();
      this.auth.sendError(res, peer, err);
    }
  }

  @Get(':id')
  async read(@Param() params: ObjectIdParamDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.auth.verify(req, Buffer.alloc(0));
    const copy = await this.reads.openLocalCopy(BigInt(params.id));
    let range: { start: number; end: number } | undefined;
    if (req.headers.range) {
      const parsed = parseRange(copy.size, req.headers.range, { combine: true });
      if (Array.isArray(parsed) && parsed.length === 1 && parsed[0]) range = parsed[0];
      else {
        res.status(416).setHeader('Content-Range', `bytes */${copy.size}`).end();
        return;
      }
    }
    res.setHeader('Content-Type', 'application/octet-stream');
    res.setHeader('ETag', `"${copy.checksum}"`);
    if (range) {
      res.status(206);
      res.setHeader('Content-Range', `bytes ${range.start}-${range.end}/${copy.size}`);
      res.setHeader('Content-Length', String(range.end - range.start + 1));
    } else {
      res.status(200);
      res.setHeader('Content-Length', String(copy.size));
    }
    if (copy.size === 0) {
      res.end();
      return;
    }
    await sendAll(res, await this.reads.openBytes({ kind: 'local', key: copy.key }, range));
  }
}

function parseEnvelope(header: string | string[] | undefined, objectId: string): ForwardedUpdate {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(typeof header === 'string' ? header : '', 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const result = ForwardedUpdateSchema.safeParse(parsed);
  if (!result.success || result.data.objectId !== objectId) {
    throw new DomainError(
      ErrorCode.ValidationFailed,
      `the ${ENVELOPE_HEADER} header does not describe object ${objectId}`,
    );
  }
  return result.data;
}
