import { Injectable } from '@nestjs/common';
import { escapeLike, type UsageDto } from '@tributary/shared';
import { SqlPool } from '../database/sql-pool';

interface UsageRow {
  objects: string;
  bytes: string;
  here_objects: string;
  here_bytes: string;
  children: { name: string; objects: string; bytes: string }[] | null;
  sites: { site: string; copies: string; bytes: string; cached_bytes: string }[] | null;
}

/** Sums over a collection's subtree: one statement, one snapshot. */
@Injectable()
export class UsageRepository {
  constructor(private readonly sql: SqlPool) {}

  /**
   * The live objects in the live collections at and below `path`, summed whole, directly in it, per
   * child collection (the first `childLimit + 1`, largest first) and per site holding good copies.
   * The collections come from the path index (`path = p OR path LIKE 'p/%'`), the objects from
   * their collection's index.
   */
  async usage(
    path: string,
    childLimit: number,
  ): Promise<Omit<UsageDto, 'path' | 'childrenTruncated'> & { more: boolean }> {
    const prefix = path === '/' ? '/' : `${path}/`;
    const { rows } = await this.sql.pool.query<UsageRow>(
      `WITH scope AS MATERIALIZED (
         SELECT c.id, CASE WHEN c.path = $1 THEN NULL
                           ELSE split_part(substr(c.path, length($3) + 1), '/', 1) END AS child
           FROM collections c
          WHERE c.trash_id = 0 AND ($1 = '/' OR c.path = $1 OR c.path LIKE $2)),
       objs AS MATERIALIZED (
         SELECT o.id, o.size, s.child FROM data_objects o JOIN scope s ON s.id = o.collection_id
          WHERE o.trash_id = 0),
       per_child AS (
         SELECT child AS name, count(*) AS objects, sum(size) AS bytes FROM objs
          WHERE child IS NOT NULL GROUP BY child ORDER BY sum(size) DESC, child LIMIT $4),
       per_site AS (
         SELECT r.site_id AS site, count(*) AS copies, sum(r.size) AS bytes,
                coalesce(sum(r.size) FILTER (WHERE r.cached), 0) AS cached_bytes
           FROM replicas r JOIN objs o ON o.id = r.object_id
          WHERE r.status = 'good' GROUP BY r.site_id ORDER BY r.site_id)
       SELECT (SELECT count(*) FROM objs) AS objects,
              (SELECT coalesce(sum(size), 0) FROM objs) AS bytes,
              (SELECT count(*) FROM objs WHERE child IS NULL) AS here_objects,
              (SELECT coalesce(sum(size), 0) FROM objs WHERE child IS NULL) AS here_bytes,
              (SELECT json_agg(per_child) FROM per_child) AS children,
              (SELECT json_agg(per_site) FROM per_site) AS sites`,
      [path, `${escapeLike(prefix)}%`, prefix, childLimit + 1],
    );
    const row = rows[0]!;
    const children = (row.children ?? []).map((c) => ({
      name: c.name,
      path: `${prefix}${c.name}`,
      objects: Number(c.objects),
      bytes: Number(c.bytes),
    }));
    return {
      objects: Number(row.objects),
      bytes: Number(row.bytes),
      here: { objects: Number(row.here_objects), bytes: Number(row.here_bytes) },
      children: children.slice(0, childLimit),
      more: children.length > childLimit,
      sites: (row.sites ?? []).map((s) => ({
        site: s.site,
        copies: Number(s.copies),
        bytes: Number(s.bytes),
        cachedBytes: Number(s.cached_bytes),
      })),
    };
  }
}
