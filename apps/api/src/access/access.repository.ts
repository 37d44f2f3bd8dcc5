import { Injectable } from '@nestjs/common';
import type { PermissionLevel } from '@tributary/shared';
import { SqlPool } from '../database/sql-pool';

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
  constructor(private readonly sql: SqlPool) {}

  /**
   * The highest level the user holds on a target: ownership of it or of any collection above it
   * means `own`; grants to the user or any of their groups on the target, or recursive grants on
   * collections above it, count too. One round trip; `max()` follows the enum order read < write < own.
   */
  async effectiveLevel(q: AccessQuery): Promise<PermissionLevel | null> {
    const paths = q.collectionPath ? [...q.ancestorPaths, q.collectionPath] : q.ancestorPaths;
    const groups = (q.groupIds.length ? q.groupIds : [0n]).map(String);
    const { rows } = await this.sql.query<{ level: PermissionLevel | null }>(
      `WITH chain AS (
         SELECT id, path, owner_id FROM collections WHERE trash_id = 0 AND path = ANY($1::text[])
       )
       SELECT max(level)::text AS level FROM (
         SELECT 'own'::"PermissionLevel" AS level FROM chain WHERE owner_id = $2
         UNION ALL
         SELECT p.level FROM permissions p JOIN chain ON p.collection_id = chain.id
          WHERE (p.user_id = $2 OR p.group_id = ANY($3::bigint[])) AND (p.recursive OR chain.path = $4)
         UNION ALL
         SELECT 'own'::"PermissionLevel" FROM data_objects WHERE id = $5 AND owner_id = $2
         UNION ALL
         SELECT p.level FROM permissions p
          WHERE p.object_id = $5 AND (p.user_id = $2 OR p.group_id = ANY($3::bigint[]))
       ) AS grants`,
      [paths, q.userId.toString(), groups, q.collectionPath ?? '', (q.objectId ?? 0n).toString()],
    );
    return rows[0]?.level ?? null;
  }

  /** The longest of `paths` that is a live collection (the deepest existing ancestor), or null. */
  async deepestCollection(paths: string[]): Promise<string | null> {
    const { rows } = await this.sql.query<{ path: string }>(
      `SELECT path FROM collections WHERE trash_id = 0 AND path = ANY($1::text[])
        ORDER BY length(path) DESC LIMIT 1`,
      [paths],
    );
    return rows[0]?.path ?? null;
  }

  /**
   * The collections where the user holds at least `level` through ownership or a grant to them or
   * one of their groups: `recursive` when it covers everything below too. One round trip; the
   * metadata query turns these into a filter on paths.
   */
  async collectionGrants(
    userId: bigint,
    groupIds: bigint[],
    level: PermissionLevel,
  ): Promise<{ path: string; recursive: boolean }[]> {
    const groups = (groupIds.length ? groupIds : [0n]).map(String);
    const { rows } = await this.sql.query<{ path: string; recursive: boolean }>(
      `SELECT path, true AS recursive FROM collections WHERE trash_id = 0 AND owner_id = $1
       UNION
       SELECT c.path, p.recursive FROM permissions p JOIN collections c ON c.id = p.collection_id AND c.trash_id = 0
        WHERE (p.user_id = $1 OR p.group_id = ANY($2::bigint[])) AND p.level >= $3::"PermissionLevel"`,
      [userId.toString(), groups, level],
    );
    return rows;
  }
}
