import type { Db } from './types';

export interface IncomingBacklog {
  origin: string;
  txs: number;
  changes: number;
  appliedSeq: number;
  oldestReceivedAt: Date | null;
}

/**
 * The incoming queue: transactions received from peers, kept until the injector has applied them.
 * Storing is idempotent (a transaction received twice, or one already applied, is stored once or
 * not at all).
 */
export class IncomingQueue {
  constructor(private readonly db: Db) {}

  /**
   * Stores a peer's transactions and returns the highest seq of that origin up to which everything
   * is stored or applied here. Lock-free against the injector: a transaction it applies meanwhile
   * may be stored again, and the injector drops such leftovers.
   */
  async store(origin: string, txsJson: string): Promise<number> {
    await this.db.query('INSERT INTO repl_peers (peer_id) VALUES ($1) ON CONFLICT (peer_id) DO NOTHING', [
      origin,
    ]);
    const res = await this.db.query<{ have: string }>(
      `WITH state AS (SELECT applied_seq FROM repl_peers WHERE peer_id = $1),
       stored AS (
         INSERT INTO repl_incoming (origin, seq, changes, change_count)
         SELECT $1, (x ->> 'seq')::bigint, x -> 'changes', jsonb_array_length(x -> 'changes')
           FROM jsonb_array_elements($2::jsonb) x, state
          WHERE (x ->> 'seq')::bigint > state.applied_seq
         ON CONFLICT (origin, seq) DO NOTHING
         RETURNING seq)
       SELECT COALESCE(max(seq), (SELECT applied_seq FROM state)) AS have FROM (
         SELECT seq, seq - row_number() OVER (ORDER BY seq) AS run
           FROM (SELECT seq FROM repl_incoming WHERE origin = $1 AND seq > (SELECT applied_seq FROM state)
                 UNION SELECT seq FROM stored) s) runs
        WHERE run = (SELECT applied_seq FROM state)`,
      [origin, txsJson],
    );
    return Number(res.rows[0]?.have ?? 0);
  }

  /** The highest seq of `origin` applied here. */
  async applied(origin: string): Promise<number> {
    const res = await this.db.query<{ applied_seq: string }>(
      'SELECT applied_seq FROM repl_peers WHERE peer_id = $1',
      [origin],
    );
    return Number(res.rows[0]?.applied_seq ?? 0);
  }

  /**
   * What this site tells `origin` it applied (as of its last extraction): the origin's transactions
   * up to `applied`, and `through`, this site's own log position that covers every change made here
   * before them (see Extractor).
   */
  async reported(origin: string): Promise<{ applied: number; through: number }> {
    const res = await this.db.query<{ applied: string; through: string }>(
      'SELECT reported_applied_seq AS applied, reported_through_seq AS through FROM repl_peers WHERE peer_id = $1',
      [origin],
    );
    return { applied: Number(res.rows[0]?.applied ?? 0), through: Number(res.rows[0]?.through ?? 0) };
  }

  /** The highest seq of `origin` up to which everything is stored or applied here. */
  async have(origin: string): Promise<number> {
    return this.store(origin, '[]');
  }

  /** Origins with transactions waiting. */
  async origins(): Promise<string[]> {
    const res = await this.db.query<{ origin: string }>(
      'SELECT DISTINCT origin FROM repl_incoming ORDER BY origin',
    );
    return res.rows.map((r) => r.origin);
  }

  async backlog(): Promise<IncomingBacklog[]> {
    const res = await this.db.query<{
      origin: string;
      txs: string;
      changes: string | null;
      applied_seq: string;
      oldest: Date | null;
    }>(
      `SELECT p.peer_id AS origin, count(i.seq) AS txs, sum(i.change_count) AS changes,
              p.applied_seq, min(i.received_at) AS oldest
         FROM repl_peers p LEFT JOIN repl_incoming i ON i.origin = p.peer_id AND i.seq > p.applied_seq
        GROUP BY p.peer_id, p.applied_seq ORDER BY p.peer_id`,
    );
    return res.rows.map((r) => ({
      origin: r.origin,
      txs: Number(r.txs),
      changes: Number(r.changes ?? 0),
      appliedSeq: Number(r.applied_seq),
      oldestReceivedAt: r.oldest,
    }));
  }
}
