import { Injectable } from '@nestjs/common';
import { SqlPool } from '../database/sql-pool';
import type { CompoundState, CompoundStateStore } from './compound.driver';

interface StateRow {
  key: string;
  size: string;
  sha256: string;
  in_cache: boolean;
  archive: 'pending' | 'archived';
  archived_at: Date | null;
  archive_error: string | null;
}

const COLUMNS = 'key, size::text AS size, sha256, in_cache, archive, archived_at, archive_error';

const toState = (r: StateRow): CompoundState => ({
  key: r.key,
  size: Number(r.size),
  sha256: r.sha256,
  inCache: r.in_cache,
  archive: r.archive,
  archivedAt: r.archived_at,
  archiveError: r.archive_error,
});

/**
 * compound_objects (migration 20261130100000_compound_resources): each key of this site's compound
 * resources, in which tiers it is. Local, never replicated; plain SQL (every read of a compound
 * key looks at it). One store per compound resource (`forResource`).
 */
@Injectable()
export class CompoundStateRepository {
  constructor(private readonly sql: SqlPool) {}

  forResource(resource: string): CompoundStateStore {
    const sql = this.sql;
    const one = async (text: string, params: unknown[]): Promise<number> =>
      (await sql.query(text, [resource, ...params])).rowCount ?? 0;
    return {
      async get(key) {
        const res = await sql.query<StateRow>(
          `SELECT ${COLUMNS} FROM compound_objects WHERE resource = $1 AND key = $2`,
          [resource, key],
        );
        return res.rows[0] ? toState(res.rows[0]) : null;
      },
      async many(keys) {
        if (keys.length === 0) return new Map();
        const res = await sql.query<StateRow>(
          `SELECT ${COLUMNS} FROM compound_objects WHERE resource = $1 AND key = ANY($2::text[])`,
          [resource, keys],
        );
        return new Map(res.rows.map((r) => [r.key, toState(r)]));
      },
      async written(key, size, sha256) {
        await one(
          `INSERT INTO compound_objects (resource, key, size, sha256) VALUES ($1, $2, $3, $4)
           ON CONFLICT (resource, key) DO UPDATE
              SET size = EXCLUDED.size, sha256 = EXCLUDED.sha256, in_cache = true, archive = 'pending',
                  archived_at = NULL, archive_error = NULL, last_read_at = NULL`,
          [key, size, sha256],
        );
      },
      async pending(limit) {
        const res = await sql.query<StateRow>(
          `SELECT ${COLUMNS} FROM compound_objects
            WHERE resource = $1 AND archive = 'pending' AND in_cache
            ORDER BY archive_error IS NOT NULL, created_at LIMIT $2`,
          [resource, limit],
        );
        return res.rows.map(toState);
      },
      async archived(key, sha256) {
        return (
          (await one(
            `UPDATE compound_objects SET archive = 'archived', archived_at = now(), archive_error = NULL
              WHERE resource = $1 AND key = $2 AND sha256 = $3`,
            [key, sha256],
          )) === 1
        );
      },
      async archiveFailed(key, error) {
        await one(`UPDATE compound_objects SET archive_error = $3 WHERE resource = $1 AND key = $2`, [
          key,
          error.slice(0, 1000),
        ]);
      },
      async cached(key) {
        await one(
          `UPDATE compound_objects SET in_cache = true, last_read_at = now() WHERE resource = $1 AND key = $2`,
          [key],
        );
      },
      async touched(key) {
        await one(`UPDATE compound_objects SET last_read_at = now() WHERE resource = $1 AND key = $2`, [key]);
      },
      async cachedBytes() {
        const res = await sql.query<{ n: string }>(
          `SELECT COALESCE(sum(size), 0)::text AS n FROM compound_objects WHERE resource = $1 AND in_cache`,
          [resource],
        );
        return Number(res.rows[0]?.n ?? 0);
      },
      async evictable(limit) {
        const res = await sql.query<StateRow>(
          `SELECT ${COLUMNS} FROM compound_objects
            WHERE resource = $1 AND in_cache AND archive = 'archived'
            ORDER BY last_read_at NULLS FIRST, created_at LIMIT $2`,
          [resource, limit],
        );
        return res.rows.map(toState);
      },
      async evicted(key, sha256) {
        return (
          (await one(
            `UPDATE compound_objects SET in_cache = false
              WHERE resource = $1 AND key = $2 AND in_cache AND archive = 'archived' AND sha256 = $3`,
            [key, sha256],
          )) === 1
        );
      },
      async forget(key) {
        await one(`DELETE FROM compound_objects WHERE resource = $1 AND key = $2`, [key]);
      },
    };
  }
}
