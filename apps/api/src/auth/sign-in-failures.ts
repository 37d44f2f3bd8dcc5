import { Inject, Injectable } from '@nestjs/common';
import { SITE_CONFIG, type SiteConfig } from '../config/config';

/**
 * Recent failed sign-ins, counted by key (a client address, or an address and a username), within
 * LOGIN_RATE_WINDOW_SECONDS. One instance per site: the portal's sign-in (LoginThrottlerGuard) and
 * WebDAV's Basic authentication (dav/dav-auth.ts) count failures from one address together, so a
 * guesser gains nothing by switching between them.
 */
@Injectable()
export class SignInFailures {
  /** Times of recent failures per key, oldest first. */
  private readonly failures = new Map<string, number[]>();

  constructor(@Inject(SITE_CONFIG) private readonly config: SiteConfig) {}

  get windowMs(): number {
    return this.config.loginRateWindowMs;
  }

  /** The recent failures under `key`, oldest first (expired ones dropped). */
  recent(key: string, now = Date.now()): number[] {
    const times = this.failures.get(key);
    if (!times) return [];
    while (times.length && (times[0] ?? 0) <= now - this.windowMs) times.shift();
    if (!times.length) this.failures.delete(key);
    return times;
  }

  /** Seconds until the oldest of `times` leaves the window (at least 1). */
  retryAfterSeconds(times: number[], now = Date.now()): number {
    return Math.max(1, Math.ceil(((times[0] ?? now) + this.windowMs - now) / 1000));
  }

  record(...keys: string[]): void {
    const now = Date.now();
    // Keys seen once and never again would otherwise stay for the life of the process.
    if (this.failures.size > 10_000) for (const k of [...this.failures.keys()]) this.recent(k, now);
    for (const key of keys) {
      const times = this.recent(key, now);
      times.push(now);
      this.failures.set(key, times);
    }
  }
}
