import type { SnapshotTables } from './application';
import { setOrigin } from './capture';
import { EXTRACT_LOCK, Extractor } from './extractor';
import { ignoreClientError, inTransaction } from './sql';
import type { Db } from './types';

/**
 * A consistent copy of a site's replicated catalog for a site joining the federation: every
 * replicated row (without local-only columns), every row's version, and how far each origin's
 * transactions are included (`applied`). The joining site then receives from each peer only what
 * comes after.
 */
export interface CatalogSnapshot {
  source: string;
  takenAt: string;
  applied: Record<string, number>;
  tables: Record<string, Array<Record<string, unknown>>>;
  versions: Array<{ tbl: string; row_key: string; stamp: number; site: string; deleted: boolean }>;
}

/**
 * Takes a snapshot at this site for `joiningPeer`. In one repeatable-read transaction it first
 * extracts pending local changes (so everything this site made is either in the snapshot or
 * logged after it) and drops from the joining peer's queue what the snapshot already contains.
 */
export async function createSnapshot(
  db: Db,
  localSite: string,
  peers: readonly string[],
  joiningPeer: string,
  tables: SnapshotTables,
): Promise<CatalogSnapshot> {
  const client = await db.connect();
  client.on('error', ignoreClientError);
  try {
    // Session lock first, so the transaction's snapshot is taken after any extraction in flight.
    await client.query('SELECT pg_advisory_lock($1)', [EXTRACT_LOCK]);
    try {
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
      const extracted = await Extractor.extractWith(client, peers);
      await client.query('DELETE FROM repl_outgoing WHERE peer_id = $1 AND seq <= $2', [
        joiningPeer,
        extracted.lastSeq,
      ]);
      const rows: CatalogSnapshot['tables'] = {};
      const defs = await client.query<{ name: string; key_column: string; local_columns: string[] }>(
        'SELECT name, key_column, local_columns FROM repl_tables',
      );
      for (const def of defs.rows) {
        const order = tables.rowOrder[def.name] ?? `x.${def.key_column}`;
        const res = await client.query<{ row: Record<string, unknown> }>(
          `SELECT to_jsonb(x) - $1::text[] AS row FROM "${def.name}" x ORDER BY ${order}`,
          [def.local_columns],
        );
        rows[def.name] = res.rows.map((r) => r.row);
      }
      const versions = await client.query<CatalogSnapshot['versions'][number] & { stamp: string }>(
        'SELECT tbl, row_key, stamp, site, deleted FROM repl_versions',
      );
      const applied = await client.query<{ peer_id: string; applied_seq: string }>(
        'SELECT peer_id, applied_seq FROM repl_peers WHERE peer_id <> $1',
        [joiningPeer],
      );
      await client.query('COMMIT');
      const watermark: Record<string, number> = { [localSite]: extracted.lastSeq };
      for (const r of applied.rows) watermark[r.peer_id] = Number(r.applied_seq);
      return {
        source: localSite,
        takenAt: new Date().toISOString(),
        applied: watermark,
        tables: rows,
        versions: versions.rows.map((v) => ({ ...v, stamp: Number(v.stamp) })),
      };
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [EXTRACT_LOCK]).catch(() => undefined);
    }
  } finally {
    client.off('error', ignoreClientError);
    client.release();
  }
}

export class SnapshotRefusedError extends Error {}

/**
 * Loads a snapshot into an empty catalog (no local site registered yet). The rows are written as
 * the source's (not captured), and each origin's applied seq is set, so the cycle continues from
 * there. All or nothing.
 */
export async function loadSnapshot(
  db: Db,
  snapshot: CatalogSnapshot,
  tables: SnapshotTables,
): Promise<{ rows: number }> {
  return inTransaction(db, async (client) => {
    const existing = await client.query('SELECT 1 FROM sites LIMIT 1');
    if (existing.rowCount) {
      throw new SnapshotRefusedError(
        'this catalog is not empty: a site joins a federation only with a new catalog',
      );
    }
    await setOrigin(client, snapshot.source);
    const defs = await client.query<{ name: string; bulk_insert_sql: string }>(
      'SELECT name, bulk_insert_sql FROM repl_tables',
    );
    const known = new Map(defs.rows.map((d) => [d.name, d.bulk_insert_sql]));
    let rows = 0;
    const first = tables.loadOrder;
    const order = [...first, ...Object.keys(snapshot.tables).filter((t) => !first.includes(t))];
    for (const table of order) {
      const data = snapshot.tables[table];
      if (!data || data.length === 0) continue;
      const insert = known.get(table);
      if (!insert)
        throw new SnapshotRefusedError(`the snapshot has a table this catalog does not replicate: ${table}`);
      for (let i = 0; i < data.length; i += 5000) {
        await client.query(insert, [JSON.stringify(data.slice(i, i + 5000))]);
      }
      rows += data.length;
    }
    for (let i = 0; i < snapshot.versions.length; i += 20000) {
      await client.query(
        `INSERT INTO repl_versions (tbl, row_key, stamp, site, deleted)
         SELECT tbl, row_key, stamp, site, deleted FROM jsonb_populate_recordset(NULL::repl_versions, $1)`,
        [JSON.stringify(snapshot.versions.slice(i, i + 20000))],
      );
    }
    for (const [origin, seq] of Object.entries(snapshot.applied)) {
      await client.query(
        `INSERT INTO repl_peers (peer_id, applied_seq) VALUES ($1, $2)
         ON CONFLICT (peer_id) DO UPDATE SET applied_seq = EXCLUDED.applied_seq`,
        [origin, seq],
      );
    }
    return { rows };
  });
}
