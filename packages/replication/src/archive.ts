import type { Db, OriginTx } from './types';

/**
 * The archive: every transaction applied here on behalf of a peer, with when. The injector moves
 * transactions into it in the same database transaction that applies them (see repl_finish_txs).
 */
export class Archive {
  constructor(private readonly db: Db) {}

  async count(origin?: string): Promise<number> {
    const res = await this.db.query<{ n: string }>(
      'SELECT count(*) AS n FROM repl_archive WHERE $1::text IS NULL OR origin = $1',
      [origin ?? null],
    );
    return Number(res.rows[0]?.n ?? 0);
  }

  async recent(limit: number): Promise<Array<OriginTx & { origin: string; appliedAt: Date }>> {
    const res = await this.db.query<{
      origin: string;
      seq: string;
      changes: OriginTx['changes'];
      applied_at: Date;
    }>(
      'SELECT origin, seq, changes, applied_at FROM repl_archive ORDER BY applied_at DESC, seq DESC LIMIT $1',
      [limit],
    );
    return res.rows.map((r) => ({
      origin: r.origin,
      seq: Number(r.seq),
      changes: r.changes,
      appliedAt: r.applied_at,
    }));
  }

  /** Drops archived transactions applied before `before`; returns how many. */
  async prune(before: Date): Promise<number> {
    const res = await this.db.query('DELETE FROM repl_archive WHERE applied_at < $1', [before]);
    return res.rowCount ?? 0;
  }
}
