import { All, Controller, Logger, Options, Req, Res } from '@nestjs/common';
import { ApiExcludeController } from '@nestjs/swagger';
import { ErrorCode } from '@tributary/shared';
import type { Request, Response } from 'express';
import { Public } from '../auth/auth.decorators';
import { DavAuth } from './dav-auth';
import { pathFromUrlPath } from './dav-paths';
import { DavCode, DavError } from './dav.errors';
import {
  answerError,
  asDavError,
  DAV_METHODS,
  DavService,
  READ_METHODS,
  type DavRequest,
} from './dav.service';

const SERVED: ReadonlySet<string> = new Set(DAV_METHODS);

/**
 * `/dav/`: the whole namespace over WebDAV (docs/webdav.md). Public to the global guard, which
 * knows only bearer tokens and sessions: DavAuth takes Basic authentication (username and API
 * token) as well, and answers 401 with the challenge WebDAV clients expect. Session requests need
 * no CSRF header here: every method that changes something (PUT, DELETE, MKCOL, COPY, MOVE,
 * PROPPATCH, LOCK, UNLOCK) is one a browser sends across origins only after a CORS preflight,
 * which this site never grants.
 */
@ApiExcludeController()
@Public()
@Controller()
export class DavController {
  private readonly logger = new Logger('WebDAV');

  constructor(
    private readonly dav: DavService,
    private readonly auth: DavAuth,
  ) {}

  /**
   * Windows' WebDAV redirector asks the server's root with OPTIONS before it maps a drive, whatever
   * the URL's path: tell it WebDAV is here.
   */
  @Options()
  root(@Res() res: Response): void {
    this.dav.options(res);
  }

  @All(['dav', 'dav/*path'])
  async handle(@Req() req: Request, @Res() res: Response): Promise<void> {
    const method = req.method.toUpperCase();
    try {
      if (method === 'OPTIONS') return this.dav.options(res);
      const principal = await this.auth.resolve(req);
      if (!SERVED.has(method)) {
        throw new DavError(
          405,
          DavCode.MethodNotAllowed,
          `${method} is not a WebDAV method served here`,
          undefined,
          {
            Allow: DAV_METHODS.join(', '),
          },
        );
      }
      if (principal.token && principal.token.scope === 'read' && !READ_METHODS.has(method)) {
        throw new DavError(
          403,
          ErrorCode.TokenScopeInsufficient,
          `this token has scope "read"; ${method} needs "write"`,
        );
      }
      // A fragment is never part of a request; Express would drop it and act on the collection.
      if (req.originalUrl.includes('#')) {
        throw new DavError(
          400,
          'INVALID_PATH',
          'the request URI must not contain a fragment ("#"); percent-encode it as %23',
        );
      }
      const r: DavRequest = { principal, path: pathFromUrlPath(req.path), req, res };
      switch (method) {
        case 'GET':
        case 'HEAD':
          return await this.dav.get(r, method === 'HEAD');
        case 'PROPFIND':
          return await this.dav.propfind(r);
        case 'PROPPATCH':
          return await this.dav.proppatch(r);
        case 'PUT':
          return await this.dav.put(r);
        case 'MKCOL':
          return await this.dav.mkcol(r);
        case 'DELETE':
          return await this.dav.delete(r);
        case 'COPY':
          return await this.dav.copyOrMove(r, false);
        case 'MOVE':
          return await this.dav.copyOrMove(r, true);
        case 'LOCK':
          return await this.dav.lock(r);
        case 'UNLOCK':
          return await this.dav.unlock(r);
      }
    } catch (err) {
      let answer = asDavError(err);
      if (!answer) {
        this.logger.error(
          `${method} ${req.path}: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`,
        );
        answer = new DavError(500, ErrorCode.Internal, 'the site failed to answer; it has been logged');
      }
      answerError(res, answer, method === 'HEAD');
    }
  }
}
