import { Injectable } from '@nestjs/common';
import { Prisma } from '@prisma/client';
import { joinPath } from '@tributary/shared';
import { CredentialCache } from '../auth/credential-cache';
import { PrismaService } from '../database/prisma.service';
import { HOME_ROOT } from '../sites/site-context';

export interface UserRecord {
  id: bigint;
  username: string;
  displayName: string;
  email: string | null;
  isAdmin: boolean;
  disabledAt: Date | null;
  createdAt: Date;
  updatedAt: Date;
  activeGroup: string | null;
  groups: string[];
}

export interface NewUser {
  username: string;
  displayName: string;
  email: string | null;
  passwordHash: string;
  isAdmin: boolean;
  createdBy: bigint | null;
}

const userSelect = {
  id: true,
  username: true,
  displayName: true,
  email: true,
  isAdmin: true,
  disabledAt: true,
  createdAt: true,
  updatedAt: true,
  activeGroup: { select: { name: true } },
  memberships: { select: { group: { select: { name: true } } }, orderBy: { group: { name: 'asc' } } },
} satisfies Prisma.UserSelect;

type UserRow = Prisma.UserGetPayload<{ select: typeof userSelect }>;

function toRecord(row: UserRow): UserRecord {
  return {
    id: row.id,
    username: row.username,
    displayName: row.displayName,
    email: row.email,
    isAdmin: row.isAdmin,
    disabledAt: row.disabledAt,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    activeGroup: row.activeGroup?.name ?? null,
    groups: row.memberships.map((m) => m.group.name),
  };
}

@Injectable()
export class UsersRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly credentials: CredentialCache,
  ) {}

  async findById(id: bigint): Promise<UserRecord | null> {
    const row = await this.prisma.user.findUnique({ where: { id }, select: userSelect });
    return row && toRecord(row);
  }

  async findByUsername(username: string): Promise<UserRecord | null> {
    const row = await this.prisma.user.findUnique({ where: { username }, select: userSelect });
    return row && toRecord(row);
  }

  async passwordHash(id: bigint): Promise<string | null> {
    const row = await this.prisma.user.findUnique({ where: { id }, select: { passwordHash: true } });
    return row?.passwordHash ?? null;
  }

  async list(limit: number, after: string | undefined): Promise<{ items: UserRecord[]; total: number }> {
    const [rows, total] = await Promise.all([
      this.prisma.user.findMany({
        where: after ? { username: { gt: after } } : {},
        orderBy: { username: 'asc' },
        take: limit,
        select: userSelect,
      }),
      this.prisma.user.count(),
    ]);
    return { items: rows.map(toRecord), total };
  }

  /** Creates the account and its home collection (`/home/<username>`, owned by the user) atomically. */
  async create(user: NewUser): Promise<UserRecord | 'taken'> {
    try {
      const id = await this.prisma.$transaction(async (tx) => {
        const created = await tx.user.create({ data: user, select: { id: true } });
        const homeRoot = await tx.collection.findFirstOrThrow({
          where: { path: HOME_ROOT, trashId: 0 },
          select: { id: true },
        });
        await tx.collection.create({
          data: {
            parentId: homeRoot.id,
            name: user.username,
            path: joinPath(HOME_ROOT, user.username),
            ownerId: created.id,
            createdBy: user.createdBy ?? created.id,
          },
        });
        return created.id;
      });
      return (await this.findById(id)) as UserRecord;
    } catch (err) {
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') return 'taken';
      throw err;
    }
  }

  async update(
    id: bigint,
    data: Partial<{
      displayName: string;
      email: string | null;
      passwordHash: string;
      isAdmin: boolean;
      disabledAt: Date | null;
      activeGroupId: bigint | null;
    }>,
    updatedBy: bigint,
  ): Promise<UserRecord> {
    await this.prisma.user.update({ where: { id }, data: { ...data, updatedBy } });
    this.credentials.forget();
    return (await this.findById(id)) as UserRecord;
  }

  /** Ends every portal session of the user (after a password change or when disabled). */
  async endSessions(userId: bigint, exceptSessionId?: string): Promise<void> {
    await this.prisma.session.deleteMany({
      where: { userId, ...(exceptSessionId ? { id: { not: exceptSessionId } } : {}) },
    });
    this.credentials.forget();
  }
}
