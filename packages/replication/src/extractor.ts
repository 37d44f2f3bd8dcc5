import { inTransaction } from './sql';
import type { Db } from './types';

export interface ExtractResult {
  txs: number;
  changes: number;
  /** The highest seq this site has extracted so far. */
  lastSeq: number;
}

/** Serialises extraction (cycle, snapshot for a joining site) on one catalog. */
export const EXTRACT_LOCK = 7_215_000_001;

/**
 * The extractor: moves locally originated, committed changes from the change table into this site's
 * log, one log entry per local transaction numbered in origin order, and queues each entry for every
 * peer. Changes the injector applied for peers were never captured, so they are never sent on.
 *
 * Transactions are ordered by their last change: a transaction that saw another's writes changed
 * rows after that one committed, so it always sorts after it.
 *
 * The data of a batch change (op B or V: thousands of rows in columns) is not copied into the entry:
 * it moves to `repl_log_data` as stored (compressed, not taken apart), and the entry's change names it
 * (`x`, the change id); `withBatchDataText` puts it back for the dispatcher (migration
 * 20261126120000_log_batch_data).
 *
 * A transaction's changes are gathered with `to_jsonb(array_agg(...))`, not `jsonb_agg`: PostgreSQL's
 * `jsonb_agg` copies every string of its input with a `"%s"` format that reads on to the next zero
 * byte, and a batch change holds columns of thousands of strings with none between them, so its cost
 * grows with the square of the batch (42 s for the 100,000 triples of 10 batches, against 0.35 s).
 */
export class Extractor {
  constructor(private readonly db: Db) {}

  async extract(peerIds: readonly string[]): Promise<ExtractResult> {
    return inTransaction(this.db, async (client) => {
      await client.query('SELECT pg_advisory_xact_lock($1)', [EXTRACT_LOCK]);
      return Extractor.extractWith(client, peerIds);
    });
  }

  /** Extraction inside a caller's transaction (which must hold EXTRACT_LOCK). */
  static async extractWith(
    client: { query: Db['query'] },
    peerIds: readonly string[],
  ): Promise<ExtractResult> {
    const local = await client.query<{ last_seq: string }>('SELECT last_seq FROM repl_local FOR UPDATE');
    const before = Number(local.rows[0]?.last_seq ?? 0);
    // What this site has applied of each peer, read before the changes are moved: every local change
    // committed before those transactions were applied is committed now, so it is moved below and
    // logged at or before the last seq (see `reportApplied`).
    const applied = await client.query<{ peer_id: string; applied_seq: string }>(
      'SELECT peer_id, applied_seq FROM repl_peers',
    );
    const moved = await client.query<{ txs: string; changes: string | null }>(
      `WITH moved AS (DELETE FROM repl_changes RETURNING *),
       txs AS (
         SELECT tx_id, $1::bigint + row_number() OVER (ORDER BY max(id)) AS seq, min(captured_at) AS captured_at,
                sum(row_count)::int AS n
           FROM moved GROUP BY tx_id),
       batch_data AS (
         INSERT INTO repl_log_data (seq, change_id, data)
         SELECT t.seq, m.id, m.data FROM moved m JOIN txs t USING (tx_id) WHERE m.op IN ('B', 'V')),
       grouped AS (
         SELECT tx_id,
                to_jsonb(array_agg(jsonb_build_object('t', tbl, 'o', op, 'k', row_key,
                                                      'd', CASE WHEN op IN ('B', 'V') THEN NULL ELSE data END, 's', stamp,
                                                      'b', base_stamp, 'bs', base_site)
                                   || CASE WHEN op IN ('B', 'V') THEN jsonb_build_object('x', id) ELSE '{}'::jsonb END
                                   || CASE WHEN absorbed IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('h', absorbed) END
                                   ORDER BY id)) AS changes
           FROM moved GROUP BY tx_id),
       logged AS (
         INSERT INTO repl_log (seq, changes, change_count, captured_at)
         SELECT t.seq, g.changes, t.n, t.captured_at FROM txs t JOIN grouped g USING (tx_id)
         RETURNING change_count)
       SELECT count(*) AS txs, sum(change_count) AS changes FROM logged`,
      [before],
    );
    const txs = Number(moved.rows[0]?.txs ?? 0);
    const changes = Number(moved.rows[0]?.changes ?? 0);
    const lastSeq = before + txs;
    if (txs > 0) {
      await client.query('UPDATE repl_local SET last_seq = $1', [lastSeq]);
      if (peerIds.length > 0) {
        await client.query(
          `INSERT INTO repl_outgoing (peer_id, seq)
           SELECT p, s FROM unnest($1::text[]) p CROSS JOIN generate_series($2::bigint, $3::bigint) s
           ON CONFLICT DO NOTHING`,
          [peerIds, before + 1, lastSeq],
        );
      }
    }
    await reportApplied(client, applied.rows, lastSeq);
    return { txs, changes, lastSeq };
  }
}

/**
 * Records what this site may now tell each origin it applied: their transactions up to `applied_seq`,
 * together with `through`, this site's own log position covering every change committed here before
 * those were applied. An origin settles a delete only after applying this site's log up to `through`,
 * so an update made here before the delete arrived (which rescues the record) reaches it first.
 */
async function reportApplied(
  client: { query: Db['query'] },
  applied: { peer_id: string; applied_seq: string }[],
  through: number,
): Promise<void> {
  if (applied.length === 0) return;
  await client.query(
    `UPDATE repl_peers p
        SET reported_applied_seq = GREATEST(p.reported_applied_seq, a.seq),
            reported_through_seq = GREATEST(p.reported_through_seq, $3::bigint)
       FROM unnest($1::text[], $2::bigint[]) AS a(peer_id, seq)
      WHERE p.peer_id = a.peer_id`,
    [applied.map((a) => a.peer_id), applied.map((a) => a.applied_seq), through],
  );
}
