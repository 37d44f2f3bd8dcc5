import { Injectable } from '@nestjs/common';
import { PrismaService } from '../database/prisma.service';

export interface UploadSessionRecord {
  id: string;
  userId: bigint;
  path: string;
  size: bigint | null;
  received: bigint;
  sha256: string | null;
  overwrite: boolean;
  contentType: string;
  expiresAt: Date;
  createdAt: Date;
}

const select = {
  id: true,
  userId: true,
  path: true,
  size: true,
  received: true,
  sha256: true,
  overwrite: true,
  contentType: true,
  expiresAt: true,
  createdAt: true,
} as const;

@Injectable()
export class UploadsRepository {
  constructor(private readonly prisma: PrismaService) {}

  create(data: Omit<UploadSessionRecord, 'received' | 'createdAt'>): Promise<UploadSessionRecord> {
    return this.prisma.uploadSession.create({ data, select });
  }

  find(id: string): Promise<UploadSessionRecord | null> {
    return this.prisma.uploadSession.findUnique({ where: { id }, select });
  }

  /**
   * Moves `received` forward only if it still is `from`, so two writers of one session cannot both
   * advance it. False when someone else moved it (or the session is gone).
   */
  async advance(id: string, from: bigint, to: bigint): Promise<boolean> {
    const { count } = await this.prisma.uploadSession.updateMany({
      where: { id, received: from },
      data: { received: to },
    });
    return count === 1;
  }

  /** Which of `ids` still have a session row. */
  async existing(ids: string[]): Promise<Set<string>> {
    if (ids.length === 0) return new Set();
    const rows = await this.prisma.uploadSession.findMany({
      where: { id: { in: ids } },
      select: { id: true },
    });
    return new Set(rows.map((r) => r.id));
  }

  async delete(id: string): Promise<void> {
    await this.prisma.uploadSession.deleteMany({ where: { id } });
  }

  /** Removes sessions that expired before `now`; returns their ids (their files go too). */
  async deleteExpired(now: Date): Promise<string[]> {
    const rows = await this.prisma.uploadSession.findMany({
      where: { expiresAt: { lt: now } },
      select: { id: true },
      take: 1000,
    });
    if (rows.length === 0) return [];
    const ids = rows.map((r) => r.id);
    await this.prisma.uploadSession.deleteMany({ where: { id: { in: ids } } });
    return ids;
  }
}
