import { Controller, Get, Param, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { IdSchema } from '@tributary/shared';
import type { Request, Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import parseRange from 'range-parser';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import { Public } from '../auth/auth.decorators';
import { PeerAuthService } from '../replication/peer-auth.service';
import { DataService } from './data.service';

class ObjectIdParamDto extends createZodDto(z.object({ id: IdSchema })) {}

/**
 * Object bytes for peer sites: a site that holds no copy of an object reads it through the site
 * that does (location transparency). Signed peer requests only; the peer checked the user's access.
 */
@ApiTags('replication-peer')
@Public()
@Controller('api/v1/replication/peer/objects')
export class PeerDataController {
  constructor(
    private readonly auth: PeerAuthService,
    private readonly data: DataService,
  ) {}

  @Get(':id')
  async read(@Param() params: ObjectIdParamDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    await this.auth.verify(req, Buffer.alloc(0));
    const copy = await this.data.openLocalCopy(BigInt(params.id));
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
    const stream = await this.data.read({ kind: 'local', key: copy.key }, range);
    try {
      await pipeline(stream, res);
    } catch {
      // The peer went away mid-transfer.
    }
  }
}
