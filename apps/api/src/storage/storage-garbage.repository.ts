import { Injectable } from '@nestjs/common';
import { SqlPool } from '../database/sql-pool';

/**
 * storage_garbage (migration 20261127130000_storage_garbage): the keys of this site's files whose
 * copy rows were deleted, left there by a trigger in the deleting transaction. Plain SQL: the sweeper
 * holds the rows it works on locked while it removes their files.
 */
@Injectable()
export class StorageGarbageRepository {
  constructor(private readonly sql: SqlPool) {}

  /**
   * Takes up to `limit` keys of `resourceId`'s garbage (oldest first, skipping those another sweep
   * holds), hands the ones no copy row of this site uses again to `remove`, and deletes the rows
   * `remove` answers with, all in one transaction: a crash before the commit leaves the rows, and the
   * next sweep removes those files again (removing a missing file is no error). Resolves with the
   * number of rows taken (0: nothing left).
   */
  async sweep(
    siteId: string,
    resourceId: bigint,
    limit: number,
    remove: (keys: string[]) => Promise<string[]>,
  ): Promise<number> {
    const client = await this.sql.pool.connect();
    try {
      await client.query('BEGIN');
      const taken = await client.query<{ key: string; in_use: boolean }>(
        `SELECT g.key,
                EXISTS (SELECT 1 FROM replicas r
                         WHERE r.object_id = g.object_id AND r.site_id = $1
                           AND r.resource_id = g.resource_id AND r.physical_path = g.key) AS in_use
           FROM storage_garbage g
          WHERE g.resource_id = $2
          ORDER BY g.created_at, g.key
          LIMIT $3
            FOR UPDATE OF g SKIP LOCKED`,
        [siteId, resourceId.toString(), limit],
      );
      const inUse = taken.rows.filter((r) => r.in_use).map((r) => r.key);
      const removed = await remove(taken.rows.filter((r) => !r.in_use).map((r) => r.key));
      const done = [...inUse, ...removed];
      if (done.length > 0) {
        await client.query('DELETE FROM storage_garbage WHERE resource_id = $1 AND key = ANY($2::text[])', [
          resourceId.toString(),
          done,
        ]);
      }
      await client.query('COMMIT');
      return taken.rows.length;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /** How many keys wait to be swept (for tests and status). */
  async pending(resourceId: bigint): Promise<number> {
    const res = await this.sql.query<{ n: string }>(
      'SELECT count(*) AS n FROM storage_garbage WHERE resource_id = $1',
      [resourceId.toString()],
    );
    return Number(res.rows[0]?.n ?? 0);
  }
}
