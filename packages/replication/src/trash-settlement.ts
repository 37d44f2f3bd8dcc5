import type { Db } from './types';

/**
 * Marks this site's deletes (trash entries) that every peer has applied: only those may be purged
 * (docs/conflicts.md), so an update made elsewhere before the delete arrived can still rescue what
 * was deleted. The mark is a change like any other and replicates, so every site knows. A delete is
 * settled at the earliest in the cycle after the one that sent it.
 */
export async function settleDeletes(db: Db, siteId: string, peers: readonly string[]): Promise<number> {
  const open = await db.query<{ n: string }>(
    'SELECT count(*) AS n FROM trash_entries WHERE deleted_at_site = $1 AND settled_at IS NULL',
    [siteId],
  );
  if (Number(open.rows[0]?.n ?? 0) === 0) return 0;
  // Everything this site sent up to `applied` is applied at every peer.
  const watermark = await db.query<{ applied: string | null }>(
    `SELECT min(COALESCE(r.peer_applied_seq, 0)) AS applied
       FROM unnest($1::text[]) AS p(peer_id) LEFT JOIN repl_peers r USING (peer_id)`,
    [peers],
  );
  const applied = peers.length === 0 ? Number.MAX_SAFE_INTEGER : Number(watermark.rows[0]?.applied ?? 0);
  const settled = await db.query(
    `WITH pending AS (
       SELECT x ->> 'k' AS k FROM repl_log l, jsonb_array_elements(l.changes) x
        WHERE l.seq > $2 AND x ->> 't' = 'trash_entries'
       UNION
       SELECT row_key FROM repl_changes WHERE tbl = 'trash_entries')
     UPDATE trash_entries t SET settled_at = now()
      WHERE t.deleted_at_site = $1 AND t.settled_at IS NULL
        AND t.id::text NOT IN (SELECT k FROM pending)`,
    [siteId, Math.min(applied, Number.MAX_SAFE_INTEGER)],
  );
  return settled.rowCount ?? 0;
}
