import { Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { AuthService } from '../auth/auth.service';
import { TOKEN_PREFIX } from '../auth/secrets';
import { SignInFailures } from '../auth/sign-in-failures';
import { DomainError } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { DavError } from './dav.errors';

/**
 * Who a WebDAV request comes from: Basic authentication with the username and an API token as the
 * password (what Finder, Explorer, rclone and davfs2 send), `Authorization: Bearer <token>`, or
 * the portal's session cookie. Failed Basic attempts count against the portal's sign-in limits:
 * per address together with failed portal sign-ins (SignInFailures, LOGIN_ADDRESS_RATE_LIMIT), and
 * per address and username (LOGIN_RATE_LIMIT), within LOGIN_RATE_WINDOW_SECONDS; past either,
 * every attempt from there is 429 until the window has passed. Successful requests do not count: a
 * mount sends its credentials on every request.
 */
@Injectable()
export class DavAuth {
  constructor(
    private readonly auth: AuthService,
    private readonly failures: SignInFailures,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {}

  /** The caller, or a 401 (with the challenge) or 429 DavError. */
  async resolve(req: Request): Promise<Principal> {
    const header = req.headers.authorization;
    if (header !== undefined && /^basic\s/i.test(header)) return this.basic(req, header);
    let resolved: Awaited<ReturnType<AuthService['authenticate']>>;
    try {
      resolved = await this.auth.authenticate(req);
    } catch (err) {
      if (err instanceof DomainError) throw this.challenge(err.code, err.message);
      throw err;
    }
    if (!resolved) {
      throw this.challenge(
        'UNAUTHENTICATED',
        'sign in with your username and an API token as the password (create tokens in the portal)',
      );
    }
    return resolved.principal;
  }

  private async basic(req: Request, header: string): Promise<Principal> {
    const decoded = Buffer.from(header.slice(header.indexOf(' ') + 1).trim(), 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    const username = (colon < 0 ? decoded : decoded.slice(0, colon)).toLowerCase();
    const secret = colon < 0 ? '' : decoded.slice(colon + 1);
    const address = String(req.ip);
    this.assertNotLimited(address, username);
    if (!secret.startsWith(TOKEN_PREFIX)) {
      this.recordFailure(address, username);
      throw this.challenge(
        'INVALID_CREDENTIALS',
        `the password must be an API token (they start with "${TOKEN_PREFIX}"; create one in the portal), not the account's password`,
      );
    }
    let principal: Principal;
    try {
      principal = await this.auth.principalFromToken(secret);
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.recordFailure(address, username);
      throw this.challenge(err.code, err.message);
    }
    if (principal.username.toLowerCase() !== username) {
      this.recordFailure(address, username);
      throw this.challenge('INVALID_CREDENTIALS', 'this token belongs to another user; give its username');
    }
    return principal;
  }

  private challenge(code: string, message: string): DavError {
    return new DavError(401, code, message, undefined, {
      'WWW-Authenticate': `Basic realm="Tributary ${this.config.siteId}", charset="UTF-8"`,
    });
  }

  private assertNotLimited(address: string, username: string): void {
    const now = Date.now();
    const byAddress = this.failures.recent(address, now);
    const byName = this.failures.recent(nameKey(address, username), now);
    const full =
      byAddress.length >= this.config.loginAddressRateLimit
        ? byAddress
        : byName.length >= this.config.loginRateLimit
          ? byName
          : null;
    if (!full) return;
    const retry = this.failures.retryAfterSeconds(full, now);
    throw new DavError(
      429,
      'RATE_LIMITED',
      `too many failed sign-ins from this address; try again in ${retry} s`,
      undefined,
      { 'Retry-After': String(retry) },
    );
  }

  private recordFailure(address: string, username: string): void {
    this.failures.record(address, nameKey(address, username));
  }
}

/** The key of WebDAV's failures per address and username (the portal's throttler keeps its own). */
function nameKey(address: string, username: string): string {
  return `dav|${address}|${username}`;
}
