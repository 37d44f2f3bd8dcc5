import { randomBytes } from 'node:crypto';
import type pg from 'pg';

/** Anything that runs SQL on one site's catalog: an in-process test site or a site process. */
export interface CatalogQueries {
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

/**
 * Writes an open update conflict about one data object, the way the replication engine records
 * one (apps/api conflicts.itest.ts covers detection between real sites): the local version and a
 * version from `tulane` that differs in content_type. Returns the conflict id.
 */
export async function recordUpdateConflict(
  site: CatalogQueries,
  objectId: string,
  id = randomBytes(16).toString('hex'),
): Promise<string> {
  const row = (
    await site.query<{ row: Record<string, unknown> }>(
      'SELECT to_jsonb(o) AS row FROM data_objects o WHERE id = $1',
      [objectId],
    )
  ).rows[0]!.row;
  const opened = Date.now() * 1000;
  await site.query(
    `INSERT INTO conflicts (id, kind, tbl, row_key, versions, winner_site, winner_stamp, collection_id, opened_at, deadline)
     VALUES ($1, 'update', 'data_objects', $2, $3, 'lsu', $4, $5, to_timestamp($6 / 1e6), to_timestamp($6 / 1e6) + interval '24 hours')`,
    [
      id,
      objectId,
      JSON.stringify([
        { site: 'lsu', stamp: opened, deleted: false, by: null, data: row },
        {
          site: 'tulane',
          stamp: opened - 5,
          deleted: false,
          by: null,
          data: { ...row, content_type: 'text/plain' },
        },
      ]),
      opened,
      row.collection_id,
      opened,
    ],
  );
  return id;
}
