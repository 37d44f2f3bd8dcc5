import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ErrorCode, type TokenScope } from '@tributary/shared';
import type { Request } from 'express';
import { DomainError } from '../common/domain-error';
import { AuthService } from './auth.service';
import { PUBLIC_ROUTE, REQUIRED_SCOPE } from './auth.decorators';
import { CSRF_HEADER, safeEqual } from './secrets';

const SCOPE_RANK: Record<TokenScope, number> = { read: 0, write: 1, admin: 2 };
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function scopeAllows(held: TokenScope, needed: TokenScope): boolean {
  return SCOPE_RANK[held] >= SCOPE_RANK[needed];
}

/**
 * The global guard: resolves the caller, refuses anonymous calls to non-public routes, checks the
 * CSRF header on state-changing cookie requests and the token scope on token requests.
 * Per-object rights are checked in the services.
 */
@Injectable()
export class AuthGuard implements CanActivate {
  constructor(
    private readonly auth: AuthService,
    private readonly reflector: Reflector,
  ) {}

  async canActivate(ctx: ExecutionContext): Promise<boolean> {
    const req = ctx.switchToHttp().getRequest<Request>();
    const targets = [ctx.getHandler(), ctx.getClass()];
    const isPublic = this.reflector.getAllAndOverride<boolean>(PUBLIC_ROUTE, targets) ?? false;
    const resolved = await this.auth.authenticate(req).catch((err: unknown) => {
      if (isPublic) return null;
      throw err;
    });
    if (!resolved) {
      if (isPublic) return true;
      throw new DomainError(
        ErrorCode.Unauthenticated,
        'sign in, or send "Authorization: Bearer <token>" (create tokens in the portal or with POST /api/v1/tokens)',
      );
    }
    const { principal, csrfToken } = resolved;
    if (principal.via === 'session' && !SAFE_METHODS.has(req.method) && !isPublic) {
      const sent = req.headers[CSRF_HEADER];
      if (typeof sent !== 'string' || !csrfToken || !safeEqual(sent, csrfToken)) {
        throw new DomainError(
          ErrorCode.CsrfFailed,
          'missing or wrong X-CSRF-Token header; use the csrfToken from GET /api/v1/auth/session',
        );
      }
    }
    if (principal.token) {
      const needed =
        this.reflector.getAllAndOverride<TokenScope>(REQUIRED_SCOPE, targets) ??
        (SAFE_METHODS.has(req.method) ? 'read' : 'write');
      if (!scopeAllows(principal.token.scope, needed)) {
        throw new DomainError(
          ErrorCode.TokenScopeInsufficient,
          `this token has scope "${principal.token.scope}"; this request needs "${needed}"`,
        );
      }
    }
    req.principal = principal;
    return true;
  }
}
