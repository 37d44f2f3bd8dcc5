import { ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ThrottlerException, ThrottlerGuard } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { SignInFailures } from './sign-in-failures';

/**
 * Limits login attempts per client address and username together (the module's throttler), and
 * failed attempts per client address whatever the usernames, so one address cannot spray many
 * names. Successful sign-ins do not count against the address: a classroom behind one NAT may all
 * sign in at once. The address is `req.ip`, which believes X-Forwarded-For only from
 * TRUSTED_PROXIES (app.factory.ts). The failures per address are counted with WebDAV's failed
 * Basic sign-ins (SignInFailures).
 */
@Injectable()
export class LoginThrottlerGuard extends ThrottlerGuard {
  @Inject(SITE_CONFIG) private readonly config!: SiteConfig;
  @Inject(SignInFailures) private readonly failures!: SignInFailures;

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    const address = String(req.ip);
    const now = Date.now();
    const recent = this.failures.recent(address, now);
    if (recent.length >= this.config.loginAddressRateLimit) {
      res.setHeader('Retry-After', String(this.failures.retryAfterSeconds(recent, now)));
      throw new ThrottlerException('too many failed sign-ins from this address');
    }
    const allowed = await super.canActivate(context);
    res.once('finish', () => {
      if (res.statusCode === 401) this.failures.record(address);
    });
    return allowed;
  }

  protected override getTracker(req: Record<string, unknown>): Promise<string> {
    const body = req.body as { username?: unknown } | undefined;
    const username = typeof body?.username === 'string' ? body.username.toLowerCase() : '';
    return Promise.resolve(`${String(req.ip)}|${username}`);
  }
}
