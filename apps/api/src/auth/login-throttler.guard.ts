import { ExecutionContext, Inject, Injectable } from '@nestjs/common';
import { ThrottlerException, ThrottlerGuard } from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { SITE_CONFIG, type SiteConfig } from '../config/config';

/**
 * Limits login attempts per client address and username together (the module's throttler), and
 * failed attempts per client address whatever the usernames, so one address cannot spray many
 * names. Successful sign-ins do not count against the address: a classroom behind one NAT may all
 * sign in at once. The address is `req.ip`, which believes X-Forwarded-For only from
 * TRUSTED_PROXIES (app.factory.ts).
 */
@Injectable()
export class LoginThrottlerGuard extends ThrottlerGuard {
  @Inject(SITE_CONFIG) private readonly config!: SiteConfig;
  /** Times of recent failed attempts per address, oldest first. */
  private readonly failures = new Map<string, number[]>();

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const http = context.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    const address = String(req.ip);
    const now = Date.now();
    const recent = this.recent(address, now);
    if (recent.length >= this.config.loginAddressRateLimit) {
      const oldest = recent[0] ?? now;
      res.setHeader('Retry-After', String(Math.max(1, Math.ceil((oldest + this.windowMs - now) / 1000))));
      throw new ThrottlerException('too many failed sign-ins from this address');
    }
    const allowed = await super.canActivate(context);
    res.once('finish', () => {
      if (res.statusCode === 401) this.recordFailure(address);
    });
    return allowed;
  }

  protected override getTracker(req: Record<string, unknown>): Promise<string> {
    const body = req.body as { username?: unknown } | undefined;
    const username = typeof body?.username === 'string' ? body.username.toLowerCase() : '';
    return Promise.resolve(`${String(req.ip)}|${username}`);
  }

  private get windowMs(): number {
    return this.config.loginRateWindowMs;
  }

  private recent(address: string, now: number): number[] {
    const times = this.failures.get(address);
    if (!times) return [];
    while (times.length && (times[0] ?? 0) <= now - this.windowMs) times.shift();
    if (!times.length) this.failures.delete(address);
    return times;
  }

  private recordFailure(address: string): void {
    const now = Date.now();
    // Addresses seen once and never again would otherwise stay for the life of the process.
    if (this.failures.size > 10_000) for (const a of [...this.failures.keys()]) this.recent(a, now);
    const times = this.recent(address, now);
    times.push(now);
    this.failures.set(address, times);
  }
}
