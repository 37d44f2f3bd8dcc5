import { Injectable } from '@nestjs/common';
import type { TokenScope } from '@tributary/shared';
import { PrismaService } from '../database/prisma.service';

export interface AccountRecord {
  id: bigint;
  username: string;
  passwordHash: string;
  isAdmin: boolean;
  activeGroupId: bigint | null;
  disabledAt: Date | null;
}

export interface SessionRecord {
  id: string;
  csrfToken: string;
  expiresAt: Date;
  user: AccountRecord;
}

export interface TokenRecord {
  id: bigint;
  scope: TokenScope;
  expiresAt: Date | null;
  revokedAt: Date | null;
  collectionPath: string | null;
  user: AccountRecord;
}

const accountSelect = {
  id: true,
  username: true,
  passwordHash: true,
  isAdmin: true,
  activeGroupId: true,
  disabledAt: true,
} as const;

@Injectable()
export class AuthRepository {
  constructor(private readonly prisma: PrismaService) {}

  findAccount(username: string): Promise<AccountRecord | null> {
    return this.prisma.user.findUnique({ where: { username }, select: accountSelect });
  }

  async groupIds(userId: bigint): Promise<bigint[]> {
    const rows = await this.prisma.membership.findMany({ where: { userId }, select: { groupId: true } });
    return rows.map((r) => r.groupId);
  }

  async createSession(id: string, userId: bigint, csrfToken: string, expiresAt: Date): Promise<void> {
    await this.prisma.session.create({ data: { id, userId, csrfToken, expiresAt } });
  }

  findSession(id: string): Promise<SessionRecord | null> {
    return this.prisma.session.findUnique({
      where: { id },
      select: { id: true, csrfToken: true, expiresAt: true, user: { select: accountSelect } },
    });
  }

  async deleteSession(id: string): Promise<void> {
    await this.prisma.session.deleteMany({ where: { id } });
  }

  async deleteExpiredSessions(now: Date): Promise<void> {
    await this.prisma.session.deleteMany({ where: { expiresAt: { lt: now } } });
  }

  async findToken(secretHash: string): Promise<TokenRecord | null> {
    const row = await this.prisma.apiToken.findUnique({
      where: { secretHash },
      select: {
        id: true,
        scope: true,
        expiresAt: true,
        revokedAt: true,
        collection: { select: { path: true } },
        user: { select: accountSelect },
      },
    });
    if (!row) return null;
    return { ...row, collectionPath: row.collection?.path ?? null };
  }

  async touchToken(id: bigint, now: Date): Promise<void> {
    // `last_used_at` is a hint for the token list; a lost update is harmless.
    await this.prisma.apiToken.updateMany({ where: { id }, data: { lastUsedAt: now } });
  }
}
