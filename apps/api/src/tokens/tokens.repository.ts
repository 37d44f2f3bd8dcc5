import { Injectable } from '@nestjs/common';
import type { TokenScope } from '@tributary/shared';
import { CredentialCache } from '../auth/credential-cache';
import { PrismaService } from '../database/prisma.service';

export interface TokenRow {
  id: bigint;
  userId: bigint;
  name: string;
  scope: TokenScope;
  collectionPath: string | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  createdAt: Date;
}

const select = {
  id: true,
  userId: true,
  name: true,
  scope: true,
  expiresAt: true,
  revokedAt: true,
  lastUsedAt: true,
  createdAt: true,
  collection: { select: { path: true } },
} as const;

@Injectable()
export class TokensRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly credentials: CredentialCache,
  ) {}

  async collectionId(path: string): Promise<bigint | null> {
    const row = await this.prisma.collection.findFirst({ where: { path, trashId: 0 }, select: { id: true } });
    return row?.id ?? null;
  }

  async create(data: {
    userId: bigint;
    name: string;
    secretHash: string;
    scope: TokenScope;
    collectionId: bigint | null;
    expiresAt: Date;
  }): Promise<TokenRow> {
    const row = await this.prisma.apiToken.create({ data: { ...data, createdBy: data.userId }, select });
    return { ...row, collectionPath: row.collection?.path ?? null };
  }

  async listForUser(userId: bigint): Promise<TokenRow[]> {
    const rows = await this.prisma.apiToken.findMany({
      where: { userId },
      orderBy: { createdAt: 'desc' },
      select,
    });
    return rows.map((row) => ({ ...row, collectionPath: row.collection?.path ?? null }));
  }

  async find(id: bigint): Promise<TokenRow | null> {
    const row = await this.prisma.apiToken.findUnique({ where: { id }, select });
    return row && { ...row, collectionPath: row.collection?.path ?? null };
  }

  async revoke(id: bigint, by: bigint): Promise<void> {
    await this.prisma.apiToken.updateMany({
      where: { id, revokedAt: null },
      data: { revokedAt: new Date(), updatedBy: by },
    });
    this.credentials.forget();
  }
}
