import type { BatchInsert, BatchUpdate, Db, LoggedChange } from './types';

/** A change as the log stores it: a batch's data is in `repl_log_data`, named by `x` (its change id). */
type StoredChange = LoggedChange | (Omit<BatchInsert | BatchUpdate, 'd'> & { d: null; x: number | string });

/**
 * A log entry's changes as peers receive them, as JSON text: each batch's data (kept beside the
 * entry, in `repl_log_data`; `batches` has its JSON text by change id) back in its change, spliced
 * in as stored rather than parsed and encoded again (a batch holds up to 10,000 rows). Throws when
 * the data of a batch is missing.
 */
export function withBatchDataText(changes: StoredChange[], batches: Map<string, string>): string {
  const parts = changes.map((stored) => {
    if (!('x' in stored)) return JSON.stringify(stored);
    const { x, d: _none, ...change } = stored;
    const data = batches.get(String(x));
    if (data === undefined) throw new Error(`the data of logged change ${String(x)} is missing`);
    return `${JSON.stringify(change).slice(0, -1)},"d":${data}}`;
  });
  return `[${parts.join(',')}]`;
}

/** A queued log entry as sent: its seq, how many row changes it holds, and its JSON text. */
export interface QueuedText {
  seq: number;
  changes: number;
  /** `{"seq":...,"changes":[...]}`, the entry as it appears in a batch's `txs`. */
  json: string;
}

/** How much entry text a `LogTexts` keeps for the next peer; more is read again. */
const LOG_TEXT_BYTES = 64 * 1024 * 1024;

/**
 * Log entries as JSON text, read once for all the peers of one round: each peer's dispatch sends
 * mostly the same entries, and reading and encoding them is the dispatcher's main work. The text
 * comes from PostgreSQL as is (no parse and re-encode in Node). Holds up to about 64 MB, the oldest
 * entries leaving first.
 */
export class LogTexts {
  private readonly texts = new Map<number, Promise<string>>();
  private readonly sizes = new Map<number, number>();
  private bytes = 0;

  constructor(
    private readonly db: Db,
    private readonly maxBytes = LOG_TEXT_BYTES,
  ) {}

  /** The entries' texts, in the order of `seqs`; throws when an entry is no longer logged. */
  read(seqs: number[]): Promise<string[]> {
    const missing = seqs.filter((seq) => !this.texts.has(seq));
    if (missing.length > 0) {
      const loaded = this.load(missing);
      // One load serves every seq it covers, and a concurrent read of the same seqs.
      for (const seq of missing) {
        const text = loaded.then((m) => {
          const t = m.get(seq);
          if (t === undefined) throw new Error(`log entry ${seq} is missing`);
          return t;
        });
        text.catch(() => this.texts.delete(seq));
        this.texts.set(seq, text);
      }
      void loaded.then(
        (m) => this.account(m),
        () => undefined,
      );
    }
    return Promise.all(seqs.map((seq) => this.texts.get(seq)!));
  }

  private account(loaded: Map<number, string>): void {
    for (const [seq, text] of loaded) {
      if (!this.texts.has(seq) || this.sizes.has(seq)) continue;
      this.sizes.set(seq, text.length);
      this.bytes += text.length;
    }
    for (const [seq, size] of this.sizes) {
      if (this.bytes <= this.maxBytes) break;
      this.sizes.delete(seq);
      this.texts.delete(seq);
      this.bytes -= size;
    }
  }

  private async load(seqs: number[]): Promise<Map<number, string>> {
    const rows = await this.db.query<{ seq: string; changes: string; batched: boolean }>(
      `SELECT l.seq, l.changes::text AS changes,
              EXISTS (SELECT 1 FROM repl_log_data d WHERE d.seq = l.seq) AS batched
         FROM repl_log l WHERE l.seq = ANY($1::bigint[]) ORDER BY l.seq`,
      [seqs],
    );
    const batched = rows.rows.filter((r) => r.batched).map((r) => r.seq);
    const data =
      batched.length === 0
        ? new Map<string, string>()
        : new Map(
            (
              await this.db.query<{ change_id: string; data: string }>(
                'SELECT change_id, data::text AS data FROM repl_log_data WHERE seq = ANY($1::bigint[])',
                [batched],
              )
            ).rows.map((r) => [r.change_id, r.data]),
          );
    const out = new Map<number, string>();
    for (const r of rows.rows) {
      const changes = r.batched
        ? withBatchDataText(JSON.parse(r.changes) as StoredChange[], data)
        : r.changes;
      out.set(Number(r.seq), `{"seq":${r.seq},"changes":${changes}}`);
    }
    return out;
  }
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

  /**
   * The oldest waiting entries, up to about `maxChanges` changes (at least one entry), as JSON text
   * from `texts` (shared by the round's peers).
   */
  async peekText(maxChanges: number, texts: LogTexts): Promise<QueuedText[]> {
    const heads = await this.db.query<{ seq: string; change_count: number }>(
      `SELECT o.seq, l.change_count FROM repl_outgoing o JOIN repl_log l ON l.seq = o.seq
        WHERE o.peer_id = $1 ORDER BY o.seq LIMIT 5000`,
      [this.peerId],
    );
    const picked: Array<{ seq: number; changes: number }> = [];
    let total = 0;
    for (const row of heads.rows) {
      if (picked.length > 0 && total + row.change_count > maxChanges) break;
      picked.push({ seq: Number(row.seq), changes: row.change_count });
      total += row.change_count;
    }
    const json = await texts.read(picked.map((p) => p.seq));
    return picked.map((p, i) => ({ ...p, json: json[i]! }));
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
