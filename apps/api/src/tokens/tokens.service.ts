import { Injectable } from '@nestjs/common';
import {
  ErrorCode,
  isWithin,
  type CreatedTokenDto,
  type CreateTokenSchema,
  type TokenDto,
} from '@tributary/shared';
import type { z } from 'zod';
import { AccessService } from '../access/access.service';
import { scopeAllows } from '../auth/auth.guard';
import { hashSecret, newSecret, TOKEN_PREFIX } from '../auth/secrets';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { idString, iso, isoOrNull } from '../common/serialize';
import { TokenRow, TokensRepository } from './tokens.repository';

const DEFAULT_LIFETIME_MS = 90 * 24 * 3600_000;
const MAX_LIFETIME_MS = 366 * 24 * 3600_000;

const toDto = (t: TokenRow): TokenDto => ({
  id: idString(t.id),
  name: t.name,
  scope: t.scope,
  collection: t.collectionPath,
  expiresAt: isoOrNull(t.expiresAt),
  revokedAt: isoOrNull(t.revokedAt),
  lastUsedAt: isoOrNull(t.lastUsedAt),
  createdAt: iso(t.createdAt),
});

@Injectable()
export class TokensService {
  constructor(
    private readonly repo: TokensRepository,
    private readonly access: AccessService,
  ) {}

  async create(principal: Principal, input: z.output<typeof CreateTokenSchema>): Promise<CreatedTokenDto> {
    if (input.scope === 'admin' && !principal.isAdmin) {
      throw new DomainError(
        ErrorCode.AdminRequired,
        'only administrators can create tokens with scope "admin"',
      );
    }
    // A token can only make tokens no stronger and no wider than itself.
    const parent = principal.token;
    if (parent && !scopeAllows(parent.scope, input.scope)) {
      throw new DomainError(
        ErrorCode.TokenScopeInsufficient,
        `a "${parent.scope}" token cannot create a "${input.scope}" token`,
      );
    }
    const collection = input.collection ?? parent?.collectionPath ?? undefined;
    if (parent?.collectionPath && collection && !isWithin(collection, parent.collectionPath)) {
      throw new DomainError(
        ErrorCode.TokenOutsideCollection,
        `this token is confined to ${parent.collectionPath}`,
      );
    }
    let collectionId: bigint | null = null;
    if (collection) {
      collectionId = await this.repo.collectionId(collection);
      await this.access.requireAt(
        principal,
        collection,
        collectionId === null ? null : { path: collection, kind: 'collection' },
        'read',
        () => notFound(`collection ${collection}`),
      );
    }
    const now = Date.now();
    let expiresAt = input.expiresAt ? new Date(input.expiresAt) : new Date(now + DEFAULT_LIFETIME_MS);
    // A token cannot outlive the token that made it.
    if (parent?.expiresAt && expiresAt > parent.expiresAt) {
      if (input.expiresAt) {
        throw new DomainError(
          ErrorCode.ValidationFailed,
          `expiresAt must not be later than this token's own expiry (${parent.expiresAt.toISOString()})`,
          { expiresAt: ['must not be later than the creating token expires'] },
        );
      }
      expiresAt = parent.expiresAt;
    }
    if (expiresAt.getTime() <= now) {
      throw new DomainError(ErrorCode.ValidationFailed, 'expiresAt must be in the future', {
        expiresAt: ['must be in the future'],
      });
    }
    if (expiresAt.getTime() > now + MAX_LIFETIME_MS) {
      throw new DomainError(ErrorCode.ValidationFailed, 'expiresAt must be at most one year ahead', {
        expiresAt: ['must be at most one year ahead'],
      });
    }
    const secret = newSecret(TOKEN_PREFIX);
    const row = await this.repo.create({
      userId: principal.userId,
      name: input.name,
      secretHash: hashSecret(secret),
      scope: input.scope,
      collectionId,
      expiresAt,
    });
    return { ...toDto(row), secret };
  }

  async list(principal: Principal): Promise<TokenDto[]> {
    return (await this.repo.listForUser(principal.userId)).map(toDto);
  }

  /**
   * Owners revoke their own tokens, administrators (signed in, or with an unconfined admin-scope
   * token) anyone's. A token confined to a collection can revoke only tokens confined within it.
   */
  async revoke(principal: Principal, id: bigint): Promise<void> {
    const token = await this.repo.find(id);
    const own = token?.userId === principal.userId;
    const asAdmin =
      principal.isAdmin &&
      !principal.token?.collectionPath &&
      (!principal.token || principal.token.scope === 'admin');
    if (!token || (!own && !asAdmin)) throw notFound(`token ${id}`);
    const confinedTo = principal.token?.collectionPath;
    if (confinedTo && !(token.collectionPath && isWithin(token.collectionPath, confinedTo))) {
      throw new DomainError(
        ErrorCode.TokenOutsideCollection,
        `this token is confined to ${confinedTo}; it can revoke only tokens confined within it`,
      );
    }
    await this.repo.revoke(id, principal.userId);
  }
}
