import { Injectable } from '@nestjs/common';
import { Prisma } from '@prisma/client';
import { ByteRangeSet, type ByteRange } from '@tributary/shared';
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
  /** Partial updates: the version the changes apply to and its SHA-256 (hex); null otherwise. */
  baseVersion: number | null;
  baseChecksum: string | null;
  /** Partial updates: the ranges received so far; null otherwise. */
  ranges: ByteRange[] | null;
  expiresAt: Date;
  createdAt: Date;
}

type Row = Omit<UploadSessionRecord, 'ranges'> & { ranges: Prisma.JsonValue };

const select = {
  id: true,
  userId: true,
  path: true,
  size: true,
  received: true,
  sha256: true,
  overwrite: true,
  contentType: true,
  baseVersion: true,
  baseChecksum: true,
  ranges: true,
  expiresAt: true,
  createdAt: true,
} as const;

@Injectable()
export class UploadsRepository {
  constructor(private readonly prisma: PrismaService) {}

  async create(data: Omit<UploadSessionRecord, 'received' | 'createdAt'>): Promise<UploadSessionRecord> {
    const row = await this.prisma.uploadSession.create({
      data: { ...data, ranges: data.ranges === null ? Prisma.DbNull : toJson(data.ranges) },
      select,
    });
    return fromRow(row);
  }

  async find(id: string): Promise<UploadSessionRecord | null> {
    const row = await this.prisma.uploadSession.findUnique({ where: { id }, select });
    return row ? fromRow(row) : null;
  }

  /**
   * Records that a partial update received `[start, end)`, unless that overlaps a range it already
   * has ('overlap'). Under the row's lock, so two writers of one session cannot both record the same
   * bytes. Null when the session is gone.
   */
  async recordRange(id: string, start: number, end: number): Promise<UploadSessionRecord | 'overlap' | null> {
    return this.prisma.$transaction(async (tx) => {
      await tx.$queryRaw`SELECT 1 FROM upload_sessions WHERE id = ${id} FOR UPDATE`;
      const row = await tx.uploadSession.findUnique({ where: { id }, select });
      if (!row) return null;
      const ranges = new ByteRangeSet(parseRanges(row.ranges) ?? []);
      if (ranges.overlaps(start, end)) return 'overlap';
      ranges.add(start, end);
      const updated = await tx.uploadSession.update({
        where: { id },
        data: { ranges: toJson(ranges.ranges), received: BigInt(ranges.bytes) },
        select,
      });
      return fromRow(updated);
    });
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

function toJson(ranges: readonly ByteRange[]): Prisma.InputJsonValue {
  return ranges.map(([s, e]) => [s, e]);
}

function parseRanges(value: Prisma.JsonValue): ByteRange[] | null {
  if (!Array.isArray(value)) return null;
  return value.map((r) => {
    const [s, e] = r as [number, number];
    return [s, e] as const;
  });
}

function fromRow(row: Row): UploadSessionRecord {
  return { ...row, ranges: parseRanges(row.ranges) };
}
