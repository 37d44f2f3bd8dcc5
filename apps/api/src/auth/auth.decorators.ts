import { createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { TokenScope } from '@tributary/shared';
import type { Request } from 'express';
import type { Principal } from '../common/principal';

export const PUBLIC_ROUTE = 'tributary:public';
export const REQUIRED_SCOPE = 'tributary:scope';

/** The route answers without a signed-in caller (login, health, docs). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(PUBLIC_ROUTE, true);

/**
 * The token scope a route needs. Without it, reads (GET/HEAD) need `read` and everything else
 * `write`. Session callers have every scope; their rights come from their account.
 */
export const RequireScope = (scope: TokenScope): MethodDecorator & ClassDecorator =>
  SetMetadata(REQUIRED_SCOPE, scope);

/** The authenticated caller; the guard guarantees it is set on non-public routes. */
export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  const req = ctx.switchToHttp().getRequest<Request>();
  if (!req.principal) throw new Error('CurrentPrincipal used on a public route');
  return req.principal;
});
