import type { BatchInsert, BatchUpdate, Db, LoggedChange, OriginTx } from './types';

/** A change as the log stores it: a batch's data is in `repl_log_data`, named by `x` (its change id). */
type StoredChange = LoggedChange | (Omit<BatchInsert | BatchUpdate, 'd'> & { d: null; x: number | string });

/** The data of a batch change: its columns (inserts) or its rows with their versions (updates). */
type BatchData = BatchInsert['d'] | BatchUpdate['d'];

/**
 * A log entry's changes as peers receive them: each batch's data (kept beside the entry, in
 * `repl_log_data`, by change id) back in its change. Throws when the data of a batch is missing.
 */
export function withBatchData(changes: StoredChange[], batches: Map<string, BatchData>): LoggedChange[] {
  return changes.map((stored) => {
    if (!('x' in stored)) return stored;
    const { x, ...change } = stored;
    const data = batches.get(String(x));
    if (data === undefined) throw new Error(`the data of logged change ${String(x)} is missing`);
    return { ...change, d: data } as LoggedChange;
  });
}

export interface QueueBacklog {
  txs: number;
  changes: number;
  /** When the oldest waiting change was made here (null when the queue is empty). */
  oldestCapturedAt: Date | null;
}

export class LogPrunedError extends Error {}

/**
 * The outgoing queue of one peer: log entries that peer has not acknowledged, oldest first. The
 * dispatcher reads from it and removes only what the peer acknowledged.
 */
export class OutgoingQueue {
  constructor(
    private readonly db: Db,
    readonly peerId: string,
  ) {}

  /** The oldest waiting transactions, up to about `maxChanges` changes (at least one transaction). */
  async peek(maxChanges: number): Promise<OriginTx[]> {
    const heads = await this.db.query<{ seq: string; change_count: number }>(
      `SELECT o.seq, l.change_count FROM repl_outgoing o JOIN repl_log l ON l.seq = o.seq
        WHERE o.peer_id = $1 ORDER BY o.seq LIMIT 5000`,
      [this.peerId],
    );
    const seqs: string[] = [];
    let total = 0;
    for (const row of heads.rows) {
      if (seqs.length > 0 && total + row.change_count > maxChanges) break;
      seqs.push(row.seq);
      total += row.change_count;
    }
    if (seqs.length === 0) return [];
    const [rows, data] = await Promise.all([
      this.db.query<{ seq: string; changes: StoredChange[] }>(
        'SELECT seq, changes FROM repl_log WHERE seq = ANY($1::bigint[]) ORDER BY seq',
        [seqs],
      ),
      this.db.query<{ change_id: string; data: BatchData }>(
        'SELECT change_id, data FROM repl_log_data WHERE seq = ANY($1::bigint[])',
        [seqs],
      ),
    ]);
    const batches = new Map(data.rows.map((r) => [r.change_id, r.data]));
    return rows.rows.map((r) => ({ seq: Number(r.seq), changes: withBatchData(r.changes, batches) }));
  }

  /** Drops every entry up to `seq` (the peer has them). */
  async acknowledge(seq: number): Promise<number> {
    const res = await this.db.query('DELETE FROM repl_outgoing WHERE peer_id = $1 AND seq <= $2', [
      this.peerId,
      seq,
    ]);
    return res.rowCount ?? 0;
  }

  /**
   * Queues again the logged entries after `seq` that are not queued (a peer that joined from a
   * snapshot or lost data lacks them). Throws LogPrunedError when the log no longer reaches back
   * that far.
   */
  async requeueAfter(seq: number): Promise<number> {
    const bounds = await this.db.query<{ queued: string | null; last: string; logged: string | null }>(
      `SELECT (SELECT min(seq) FROM repl_outgoing WHERE peer_id = $1) AS queued,
              (SELECT last_seq FROM repl_local) AS last,
              (SELECT min(seq) FROM repl_log) AS logged`,
      [this.peerId],
    );
    const row = bounds.rows[0];
    const upTo = row?.queued != null ? Number(row.queued) : Number(row?.last ?? 0) + 1;
    if (seq >= upTo - 1) return 0;
    if (row?.logged == null || Number(row.logged) > seq + 1) {
      throw new LogPrunedError(
        `peer ${this.peerId} needs changes after seq ${seq}, but the log ${row?.logged != null ? `starts at seq ${row.logged}` : 'is empty'}; join it again from a fresh snapshot`,
      );
    }
    const res = await this.db.query(
      `INSERT INTO repl_outgoing (peer_id, seq) SELECT $1, seq FROM repl_log WHERE seq > $2 AND seq < $3
       ON CONFLICT DO NOTHING`,
      [this.peerId, seq, upTo],
    );
    return res.rowCount ?? 0;
  }

  async backlog(): Promise<QueueBacklog> {
    const res = await this.db.query<{ txs: string; changes: string | null; oldest: Date | null }>(
      `SELECT count(*) AS txs, sum(l.change_count) AS changes, min(l.captured_at) AS oldest
         FROM repl_outgoing o JOIN repl_log l ON l.seq = o.seq WHERE o.peer_id = $1`,
      [this.peerId],
    );
    const row = res.rows[0];
    return {
      txs: Number(row?.txs ?? 0),
      changes: Number(row?.changes ?? 0),
      oldestCapturedAt: row?.oldest ?? null,
    };
  }
}
