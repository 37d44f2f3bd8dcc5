import { Injectable } from '@nestjs/common';
import { Prisma } from '@prisma/client';
import { joinPath } from '@tributary/shared';
import { CredentialCache } from '../auth/credential-cache';
import { PrismaService } from '../database/prisma.service';
import { PROJECTS_ROOT } from '../sites/site-context';

export interface GroupRecord {
  id: bigint;
  name: string;
  description: string;
  createdAt: Date;
  members: { userId: bigint; username: string; role: 'member' | 'manager' }[];
}

const groupSelect = {
  id: true,
  name: true,
  description: true,
  createdAt: true,
  memberships: {
    select: { userId: true, role: true, user: { select: { username: true } } },
    orderBy: { user: { username: 'asc' } },
  },
} satisfies Prisma.ProjectGroupSelect;

type GroupRow = Prisma.ProjectGroupGetPayload<{ select: typeof groupSelect }>;

const toRecord = (row: GroupRow): GroupRecord => ({
  id: row.id,
  name: row.name,
  description: row.description,
  createdAt: row.createdAt,
  members: row.memberships.map((m) => ({ userId: m.userId, username: m.user.username, role: m.role })),
});

@Injectable()
export class GroupsRepository {
  constructor(
    private readonly prisma: PrismaService,
    private readonly credentials: CredentialCache,
  ) {}

  async findByName(name: string): Promise<GroupRecord | null> {
    const row = await this.prisma.projectGroup.findUnique({ where: { name }, select: groupSelect });
    return row && toRecord(row);
  }

  /** The account a manager names to add to a group. */
  async findUserId(username: string): Promise<bigint | null> {
    const row = await this.prisma.user.findUnique({ where: { username }, select: { id: true } });
    return row?.id ?? null;
  }

  async list(memberId: bigint | null): Promise<GroupRecord[]> {
    const rows = await this.prisma.projectGroup.findMany({
      where: memberId === null ? {} : { memberships: { some: { userId: memberId } } },
      orderBy: { name: 'asc' },
      select: groupSelect,
    });
    return rows.map(toRecord);
  }

  /**
   * Creates the group and its project collection `/projects/<name>` (owned by the creator, the
   * group holding write on everything in it) atomically.
   */
  async create(name: string, description: string, createdBy: bigint): Promise<GroupRecord | 'taken'> {
    try {
      await this.prisma.$transaction(async (tx) => {
        const group = await tx.projectGroup.create({
          data: { name, description, createdBy },
          select: { id: true },
        });
        const root = await tx.collection.findFirstOrThrow({ where: { path: PROJECTS_ROOT, trashId: 0 } });
        const path = joinPath(PROJECTS_ROOT, name);
        // A group deleted earlier leaves its collection (and data) behind; a new group of that name takes it over.
        const kept = await tx.collection.findFirst({ where: { path, trashId: 0 }, select: { id: true } });
        const collection = kept
          ? await tx.collection.update({
              where: { id: kept.id },
              data: { groupId: group.id, updatedBy: createdBy },
              select: { id: true },
            })
          : await tx.collection.create({
              data: { parentId: root.id, name, path, ownerId: createdBy, groupId: group.id, createdBy },
              select: { id: true },
            });
        await tx.permission.create({
          data: { collectionId: collection.id, groupId: group.id, level: 'write', createdBy },
        });
      });
      return (await this.findByName(name)) as GroupRecord;
    } catch (err) {
      if (err instanceof Prisma.PrismaClientKnownRequestError && err.code === 'P2002') return 'taken';
      throw err;
    }
  }

  async updateDescription(id: bigint, description: string, updatedBy: bigint): Promise<void> {
    await this.prisma.projectGroup.update({ where: { id }, data: { description, updatedBy } });
  }

  async delete(id: bigint): Promise<void> {
    await this.prisma.projectGroup.delete({ where: { id } });
    this.credentials.forget();
  }

  async upsertMember(groupId: bigint, userId: bigint, role: 'member' | 'manager', by: bigint): Promise<void> {
    await this.prisma.membership.upsert({
      where: { userId_groupId: { userId, groupId } },
      create: { userId, groupId, role, createdBy: by },
      update: { role, updatedBy: by },
    });
    this.credentials.forget();
  }

  /** Removes the membership and, if it was the user's active group, clears that. */
  async removeMember(groupId: bigint, userId: bigint): Promise<boolean> {
    const removed = await this.prisma.$transaction(async (tx) => {
      const deleted = await tx.membership.deleteMany({ where: { groupId, userId } });
      await tx.user.updateMany({
        where: { id: userId, activeGroupId: groupId },
        data: { activeGroupId: null },
      });
      return deleted.count > 0;
    });
    this.credentials.forget();
    return removed;
  }
}
