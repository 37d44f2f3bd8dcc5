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

/**
 * Marks a route that only reads although its method is not GET (a search or a batch read whose
 * request is too rich for a URL): a `read` token may call it. Session callers still send the CSRF
 * header, as for any POST.
 */
export const ReadOnlyRoute = (): MethodDecorator & ClassDecorator => RequireScope('read');

/** The authenticated caller; the guard guarantees it is set on non-public routes. */
export const CurrentPrincipal = createParamDecorator((_data: unknown, ctx: ExecutionContext): Principal => {
  const req = ctx.switchToHttp().getRequest<Request>();
  if (!req.principal) throw new Error('CurrentPrincipal used on a public route');
  return req.principal;
});
