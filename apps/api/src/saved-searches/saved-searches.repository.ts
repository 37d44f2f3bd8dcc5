import { Injectable } from '@nestjs/common';
import type { SavedSearchKind } from '@tributary/shared';
import { PrismaService } from '../database/prisma.service';

export interface SavedSearchRecord {
  id: bigint;
  userId: bigint;
  name: string;
  query: string;
  scope: string;
  kind: SavedSearchKind;
  createdAt: Date;
  updatedAt: Date;
}

/** Where a page of one user's saved searches starts: after this (name, id). */
export interface SavedSearchKey {
  name: string;
  id: bigint;
}

const select = {
  id: true,
  userId: true,
  name: true,
  query: true,
  scope: true,
  kind: true,
  createdAt: true,
  updatedAt: true,
} as const;

type Row = { [K in keyof typeof select]: K extends 'kind' ? string : SavedSearchRecord[K] };

const toRecord = (row: Row): SavedSearchRecord => ({
  ...row,
  kind: row.kind === 'collection' ? 'collection' : 'object',
});

@Injectable()
export class SavedSearchesRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** One user's saved searches by name, then id (index saved_searches_user_id_name_id_idx). */
  async listForUser(
    userId: bigint,
    limit: number,
    after: SavedSearchKey | null,
  ): Promise<{ items: SavedSearchRecord[]; total: number }> {
    const [rows, total] = await Promise.all([
      this.prisma.savedSearch.findMany({
        where: {
          userId,
          ...(after
            ? { OR: [{ name: { gt: after.name } }, { name: after.name, id: { gt: after.id } }] }
            : {}),
        },
        orderBy: [{ name: 'asc' }, { id: 'asc' }],
        take: limit,
        select,
      }),
      this.countForUser(userId),
    ]);
    return { items: rows.map(toRecord), total };
  }

  countForUser(userId: bigint): Promise<number> {
    return this.prisma.savedSearch.count({ where: { userId } });
  }

  /** One of this user's saved searches; null for a missing id or another user's. */
  async findOwn(userId: bigint, id: bigint): Promise<SavedSearchRecord | null> {
    const row = await this.prisma.savedSearch.findFirst({ where: { id, userId }, select });
    return row && toRecord(row);
  }

  /** Whether the user has another saved search with this name. */
  async nameTaken(userId: bigint, name: string, except?: bigint): Promise<boolean> {
    const row = await this.prisma.savedSearch.findFirst({
      where: { userId, name, ...(except === undefined ? {} : { id: { not: except } }) },
      select: { id: true },
    });
    return row !== null;
  }

  async create(data: {
    userId: bigint;
    name: string;
    query: string;
    scope: string;
    kind: SavedSearchKind;
  }): Promise<SavedSearchRecord> {
    const row = await this.prisma.savedSearch.create({
      data: { ...data, createdBy: data.userId, updatedBy: data.userId },
      select,
    });
    return toRecord(row);
  }

  /** Changes one of the user's saved searches; null when it is gone (deleted meanwhile). */
  async update(
    userId: bigint,
    id: bigint,
    changes: Partial<Pick<SavedSearchRecord, 'name' | 'query' | 'scope' | 'kind'>>,
  ): Promise<SavedSearchRecord | null> {
    const { count } = await this.prisma.savedSearch.updateMany({
      where: { id, userId },
      data: { ...changes, updatedBy: userId },
    });
    return count === 0 ? null : this.findOwn(userId, id);
  }

  /** Deletes one of the user's saved searches; false when there was none. */
  async delete(userId: bigint, id: bigint): Promise<boolean> {
    const { count } = await this.prisma.savedSearch.deleteMany({ where: { id, userId } });
    return count > 0;
  }
}
