import { Controller, Param, Post, Req, Res } from '@nestjs/common';
import { ApiExcludeController, ApiTags } from '@nestjs/swagger';
import { ErrorCode, IdSchema } from '@tributary/shared';
import type { Request, Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { Public } from '../auth/auth.decorators';
import { AuthService } from '../auth/auth.service';
import { DomainError } from '../common/domain-error';
import { PeerAuthService } from '../replication/peer-auth.service';
import { ReplicationService } from '../replication/replication.service';
import { ForwardedTrashActionSchema, type ForwardedTrashAction } from './forwarded-trash';
import { NamespaceService } from './namespace.service';

class TrashActionParamDto extends createZodDto(
  z.object({ id: IdSchema, action: z.enum(['restore', 'purge']) }),
) {}

/** A forwarded action names one user: a few hundred bytes. */
const MAX_BODY_BYTES = 4096;

/**
 * Restores and purges that other sites forward for their users to this site, where the trash entry
 * was deleted and which decides on it (see NamespaceService.decidingSite). Checked here as if the
 * user had asked this site. Signed peer requests only.
 */
@ApiTags('replication-peer')
@ApiExcludeController()
@Public()
@Controller('api/v1/replication/peer/trash')
export class PeerTrashController {
  constructor(
    private readonly auth: PeerAuthService,
    private readonly users: AuthService,
    private readonly namespace: NamespaceService,
    private readonly replication: ReplicationService,
  ) {}

  @Post(':id/:action')
  async act(@Param() params: TrashActionParamDto, @Req() req: Request, @Res() res: Response): Promise<void> {
    const { peer, body } = await this.auth.readVerified(req, res, MAX_BODY_BYTES);
    try {
      const forwarded = parse(body);
      const principal = await this.users.forwardedPrincipal(BigInt(forwarded.userId));
      const trashId = BigInt(params.id);
      if (params.action === 'restore') {
        this.auth.sendSigned(res, peer, 200, await this.namespace.restore(principal, trashId));
      } else {
        await this.namespace.purge(principal, trashId);
        this.auth.sendSigned(res, peer, 200, {});
      }
      // The user asked at another site: send the outcome there now rather than at the next cycle.
      this.replication.engine.nudge();
    } catch (err) {
      this.auth.sendError(res, peer, err);
    }
  }
}

function parse(body: Buffer): ForwardedTrashAction {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    parsed = undefined;
  }
  const result = ForwardedTrashActionSchema.safeParse(parsed);
  if (!result.success) {
    throw new DomainError(ErrorCode.ValidationFailed, 'the body must be {"userId": "<id>"}');
  }
  return result.data;
}
