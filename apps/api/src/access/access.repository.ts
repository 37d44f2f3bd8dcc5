import { Injectable } from '@nestjs/common';
import type { PermissionLevel } from '@tributary/shared';
import { Prisma } from '@prisma/client';
import { PrismaService } from '../database/prisma.service';

export interface AccessQuery {
  userId: bigint;
  groupIds: bigint[];
  /** Collections above the target, root first. */
  ancestorPaths: string[];
  /** The target when it is a collection (grants that do not recurse apply to it alone). */
  collectionPath: string | null;
  /** The target when it is a data object. */
  objectId: bigint | null;
}

@Injectable()
export class AccessRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * The highest level the user holds on a target: ownership of it or of any collection above it
   * means `own`; grants to the user or any of their groups on the target, or recursive grants on
   * collections above it, count too. One round trip; `max()` follows the enum order read < write < own.
   */
  async effectiveLevel(q: AccessQuery): Promise<PermissionLevel | null> {
    const paths = q.collectionPath ? [...q.ancestorPaths, q.collectionPath] : q.ancestorPaths;
    const groups = q.groupIds.length ? q.groupIds : [0n];
    const rows = await this.prisma.$queryRaw<{ level: PermissionLevel | null }[]>(Prisma.sql`
      WITH chain AS (
        SELECT id, path, owner_id FROM collections WHERE trash_id = 0 AND path = ANY(${paths}::text[])
      )
      SELECT max(level)::text AS level FROM (
        SELECT 'own'::"PermissionLevel" AS level FROM chain WHERE owner_id = ${q.userId}
        UNION ALL
        SELECT p.level FROM permissions p JOIN chain ON p.collection_id = chain.id
         WHERE (p.user_id = ${q.userId} OR p.group_id = ANY(${groups}::bigint[]))
           AND (p.recursive OR chain.path = ${q.collectionPath ?? ''})
        UNION ALL
        SELECT 'own'::"PermissionLevel" FROM data_objects WHERE id = ${q.objectId ?? 0n} AND owner_id = ${q.userId}
        UNION ALL
        SELECT p.level FROM permissions p
         WHERE p.object_id = ${q.objectId ?? 0n}
           AND (p.user_id = ${q.userId} OR p.group_id = ANY(${groups}::bigint[]))
      ) AS grants`);
    return rows[0]?.level ?? null;
  }
}
