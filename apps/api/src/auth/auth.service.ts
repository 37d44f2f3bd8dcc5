import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode, type SessionDto } from '@tributary/shared';
import type { Request } from 'express';
import { DomainError } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { SiteContext } from '../sites/site-context';
import { UsersService } from '../users/users.service';
import { AccountRecord, AuthRepository } from './auth.repository';
import { CredentialCache } from './credential-cache';
import {
  DUMMY_PASSWORD_HASH,
  hashSecret,
  newSecret,
  SESSION_COOKIE,
  TOKEN_PREFIX,
  verifyPassword,
} from './secrets';

const TOKEN_TOUCH_INTERVAL_MS = 60_000;

export interface LoginResult {
  cookieValue: string;
  session: SessionDto;
}

@Injectable()
export class AuthService {
  constructor(
    private readonly repo: AuthRepository,
    private readonly credentials: CredentialCache,
    private readonly users: UsersService,
    private readonly site: SiteContext,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {}

  async login(username: string, password: string): Promise<LoginResult> {
    const account = await this.repo.findAccount(username.toLowerCase());
    // Check a hash either way so response time does not tell whether the account exists.
    const ok = await verifyPassword(password, account?.passwordHash ?? DUMMY_PASSWORD_HASH);
    // A disabled account answers like a wrong password: a distinct answer after the right
    // password would confirm the password to whoever is guessing.
    if (!account || !ok || account.disabledAt) {
      throw new DomainError(ErrorCode.InvalidCredentials, 'wrong username or password');
    }
    const cookieValue = newSecret();
    const csrfToken = newSecret();
    const expiresAt = new Date(Date.now() + this.config.sessionTtlMs);
    await this.repo.createSession(hashSecret(cookieValue), account.id, csrfToken, expiresAt);
    await this.repo.deleteExpiredSessions(new Date());
    return {
      cookieValue,
      session: { user: await this.users.describe(account.id), csrfToken, expiresAt: expiresAt.toISOString() },
    };
  }

  async logout(principal: Principal): Promise<void> {
    if (principal.sessionId) await this.repo.deleteSession(principal.sessionId);
  }

  async describeSession(principal: Principal): Promise<SessionDto> {
    if (!principal.sessionId) {
      throw new DomainError(ErrorCode.Unauthenticated, 'this request uses a token, not a portal session');
    }
    const session = await this.repo.findSession(principal.sessionId);
    if (!session) throw new DomainError(ErrorCode.Unauthenticated, 'the session has ended; sign in again');
    return {
      user: await this.users.describe(principal.userId),
      csrfToken: session.csrfToken,
      expiresAt: session.expiresAt.toISOString(),
    };
  }

  /**
   * Resolves the caller from `Authorization: Bearer <token>` or the session cookie.
   * Returns null when the request carries neither; throws when it carries a bad one.
   */
  async authenticate(req: Request): Promise<{ principal: Principal; csrfToken?: string } | null> {
    const header = req.headers.authorization;
    if (header !== undefined) {
      const match = /^Bearer\s+(\S+)$/i.exec(header);
      if (!match?.[1]) {
        throw new DomainError(ErrorCode.TokenInvalid, 'the Authorization header must be "Bearer <token>"');
      }
      return { principal: await this.fromToken(match[1]) };
    }
    const cookies = req.cookies as Record<string, string> | undefined;
    const cookie = cookies?.[SESSION_COOKIE];
    if (!cookie) return null;
    const idHash = hashSecret(cookie);
    const session = await this.credentials.resolveSession(idHash, () => this.repo.findSession(idHash));
    if (!session || session.expiresAt.getTime() <= Date.now()) {
      throw new DomainError(ErrorCode.Unauthenticated, 'the session has ended; sign in again');
    }
    this.assertEnabled(session.user);
    return {
      principal: { ...this.principalFor(session.user), via: 'session', sessionId: session.id },
      csrfToken: session.csrfToken,
    };
  }

  /**
   * The caller an API token stands for, checked as for `Authorization: Bearer` (unknown, revoked,
   * expired, disabled account, confined to a deleted collection): for the WebDAV endpoint, where
   * the token arrives as the password of Basic authentication.
   */
  principalFromToken(secret: string): Promise<Principal> {
    return this.fromToken(secret);
  }

  private async fromToken(secret: string): Promise<Principal> {
    if (!secret.startsWith(TOKEN_PREFIX)) {
      throw new DomainError(
        ErrorCode.TokenInvalid,
        `not a Tributary token (they start with "${TOKEN_PREFIX}")`,
      );
    }
    const secretHash = hashSecret(secret);
    const token = await this.credentials.resolveToken(secretHash, () => this.repo.findToken(secretHash));
    if (!token) throw new DomainError(ErrorCode.TokenInvalid, 'unknown token; create a new one');
    const now = new Date();
    if (token.revokedAt)
      throw new DomainError(ErrorCode.TokenRevoked, 'this token was revoked; create a new one');
    if (token.expiresAt && token.expiresAt <= now) {
      throw new DomainError(
        ErrorCode.TokenExpired,
        `this token expired at ${token.expiresAt.toISOString()}; create a new one`,
      );
    }
    this.assertEnabled(token.user);
    if (token.confinedToDeleted) {
      throw new DomainError(
        ErrorCode.TokenOutsideCollection,
        'the collection this token is confined to was deleted; create a new token',
      );
    }
    // `lastUsedAt` is shown in the token list to the minute; writing it on every request would
    // put a durable commit on every scripted call.
    if (!token.lastUsedAt || now.getTime() - token.lastUsedAt.getTime() > TOKEN_TOUCH_INTERVAL_MS) {
      await this.repo.touchToken(token.id, now);
      // The kept answer is this same object: the next requests see the touch and skip it.
      token.lastUsedAt = now;
    }
    return {
      ...this.principalFor(token.user),
      via: 'token',
      token: {
        id: token.id,
        scope: token.scope,
        collectionPath: token.collectionPath,
        expiresAt: token.expiresAt,
      },
    };
  }

  /**
   * The user a peer site acts for when it forwards that user's request (a data update to the site
   * holding the bytes). The peer authenticated the user and checked their token's limits; this
   * site checks the account is enabled here and, in the service, the user's rights in its catalog.
   */
  async forwardedPrincipal(userId: bigint): Promise<Principal> {
    const account = await this.repo.findAccountById(userId);
    if (!account) {
      throw new DomainError(
        ErrorCode.Unauthenticated,
        `user ${userId} is not known at this site yet; try again after the next replication exchange`,
      );
    }
    this.assertEnabled(account);
    return { ...this.principalFor(account), via: 'peer' };
  }

  private assertEnabled(account: AccountRecord): void {
    if (account.disabledAt) throw new DomainError(ErrorCode.AccountDisabled, 'this account is disabled');
  }

  private principalFor(account: AccountRecord): Omit<Principal, 'via'> {
    return {
      userId: account.id,
      username: account.username,
      isAdmin: account.isAdmin,
      activeGroupId: account.activeGroupId,
      activeGroupName: account.activeGroupName,
      groupIds: [...account.groupIds, this.site.publicGroupId],
    };
  }
}
