import type { Db, Queryable } from '@tributary/replication';

/**
 * Marks this site's deletes (trash entries) that every peer has applied: only those may be purged
 * (docs/conflicts.md), so an update made elsewhere before the delete arrived can still rescue what
 * was deleted. A peer's report counts only once this site has applied every change the peer made
 * before applying the delete (its `through`, see Dispatcher): by then each such update has been
 * applied here and has rescued the record, and the entry holds nothing to purge. The mark is a
 * change like any other and replicates, so every site knows; it carries how far this site had
 * applied each peer's log (`settled_through`), which a site must have applied too before it purges
 * (`purgeWaitsFor`). A delete is settled at the earliest in the cycle after the one that sent it.
 * Runs at the end of every cycle, after the engine counted the peers' reports (`promoteAcks`).
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
       SELECT row_key FROM repl_changes WHERE tbl = 'trash_entries'),
     through AS (
       SELECT COALESCE(jsonb_object_agg(p.peer_id, COALESCE(r.applied_seq, 0)), '{}'::jsonb) AS seqs
         FROM unnest($3::text[]) AS p(peer_id) LEFT JOIN repl_peers r USING (peer_id))
     UPDATE trash_entries t SET settled_at = now(), settled_through = through.seqs
       FROM through
      WHERE t.deleted_at_site = $1 AND t.settled_at IS NULL
        AND t.id::text NOT IN (SELECT k FROM pending)`,
    [siteId, Math.min(applied, Number.MAX_SAFE_INTEGER), peers],
  );
  return settled.rowCount ?? 0;
}

/**
 * The sites whose changes, as far as the deleting site had applied them when it settled this trash
 * entry, have not all been applied here yet (with the seq still awaited): until they have, a rescue
 * the deleting site saw may still be on its way here, and the entry may not be purged here. Empty
 * when this site may purge, or when the entry is not settled (the caller checks that first).
 */
export async function purgeWaitsFor(
  db: Queryable,
  trashId: bigint | string,
  siteId: string,
): Promise<{ site: string; seq: number }[]> {
  const res = await db.query(
    `SELECT s.key AS site, s.value::text AS seq
       FROM trash_entries t, jsonb_each_text(COALESCE(t.settled_through, '{}'::jsonb)) s
       LEFT JOIN repl_peers r ON r.peer_id = s.key
      WHERE t.id = $1::bigint AND s.key <> $2 AND COALESCE(r.applied_seq, 0) < s.value::bigint
      ORDER BY s.key`,
    [String(trashId), siteId],
  );
  return (res.rows as { site: string; seq: string }[]).map((r) => ({ site: r.site, seq: Number(r.seq) }));
}
