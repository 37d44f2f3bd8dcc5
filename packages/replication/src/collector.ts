import { IncomingQueue } from './incoming-queue';
import type { Ack, Batch, BatchColumns, BatchConstant, Change, Db, LoggedChange, OriginTx } from './types';

export class BatchRejectedError extends Error {}

/**
 * The collector: accepts peers' batches at any time (the cycle does not have to be running) and
 * stores them in the incoming queue. The caller has authenticated the peer; a batch may carry only
 * that peer's own transactions.
 */
export class Collector {
  private readonly incoming: IncomingQueue;

  constructor(db: Db) {
    this.incoming = new IncomingQueue(db);
  }

  async receive(authenticatedPeer: string, batch: Batch): Promise<Ack> {
    if (typeof batch !== 'object' || batch === null)
      throw new BatchRejectedError('the batch must be an object');
    if (batch.origin !== authenticatedPeer) {
      throw new BatchRejectedError(
        `peer ${authenticatedPeer} sent changes of origin ${batch.origin}; a site sends only its own`,
      );
    }
    validateBatch(batch);
    const txs = batch.txs.map((tx) => ({ seq: tx.seq, changes: unfold(tx.changes) }));
    const have = await this.incoming.store(batch.origin, JSON.stringify(txs));
    const { applied, through } = await this.incoming.reported(batch.origin);
    return { have, applied, through };
  }
}

function validateBatch(batch: Batch): void {
  if (typeof batch !== 'object' || batch === null)
    throw new BatchRejectedError('the batch must be an object');
  if (!Array.isArray(batch.txs)) throw new BatchRejectedError('txs must be an array');
  let previous = 0;
  for (const tx of batch.txs as unknown[] as Array<OriginTx | null>) {
    if (typeof tx !== 'object' || tx === null)
      throw new BatchRejectedError('each transaction must be an object');
    if (!Number.isSafeInteger(tx.seq) || tx.seq <= previous)
      throw new BatchRejectedError('transactions must have increasing positive integer seq');
    if (!Array.isArray(tx.changes) || tx.changes.length === 0)
      throw new BatchRejectedError(`transaction ${tx.seq} has no changes`);
    for (const c of tx.changes as unknown[] as Array<LoggedChange | null>) {
      if (
        typeof c !== 'object' ||
        c === null ||
        typeof c.t !== 'string' ||
        typeof c.k !== 'string' ||
        (c.o !== 'I' && c.o !== 'U' && c.o !== 'D' && c.o !== 'B' && c.o !== 'V') ||
        !Number.isSafeInteger(c.s) ||
        typeof c.d !== 'object' ||
        c.d === null ||
        (c.o === 'B' && columnRows(c.d, c.k) === null) ||
        (c.o === 'V' && !isUpdateBatch(c.d, c.k))
      ) {
        throw new BatchRejectedError(`transaction ${tx.seq} has a malformed change`);
      }
    }
    previous = tx.seq;
  }
}

/**
 * How many rows a batch's columns hold: the key column is an array of ids (at least one); every other
 * column an array of the same length, or one value for every row (`{"=": value}`).
 */
function columnRows(columns: unknown, key: string): number | null {
  if (typeof columns !== 'object' || columns === null) return null;
  const keys = (columns as Record<string, unknown>)[key];
  if (!Array.isArray(keys) || keys.length === 0) return null;
  if (!keys.every((k) => typeof k === 'string' || Number.isSafeInteger(k))) return null;
  const ok = Object.values(columns).every((col) =>
    Array.isArray(col) ? col.length === keys.length : isConstantColumn(col),
  );
  return ok ? keys.length : null;
}

function isConstantColumn(col: unknown): col is BatchConstant {
  return typeof col === 'object' && col !== null && Object.keys(col).length === 1 && '=' in col;
}

/** A batch of updates: its rows, and a stamp, base stamp and base site for each. */
function isUpdateBatch(d: unknown, key: string): boolean {
  const { rows, s, b, bs } = d as Record<string, unknown>;
  const n = columnRows(rows, key);
  return (
    n !== null &&
    Array.isArray(s) &&
    s.length === n &&
    s.every((x) => Number.isSafeInteger(x)) &&
    Array.isArray(b) &&
    b.length === n &&
    b.every((x) => x === null || Number.isSafeInteger(x)) &&
    Array.isArray(bs) &&
    bs.length === n &&
    bs.every((x) => x === null || typeof x === 'string')
  );
}

/**
 * The per-row changes a transaction's logged changes stand for: a batch becomes one insert (its stamp,
 * no base) or one update (its own stamp and base) per row, in the batch's order; other changes are kept
 * as they are.
 */
export function unfold(changes: LoggedChange[]): Change[] {
  if (!changes.some((c) => c.o === 'B' || c.o === 'V')) return changes as Change[];
  const out: Change[] = [];
  for (const c of changes) {
    if (c.o === 'B') {
      unfoldRows(c.d, c.k, (k, d) => out.push({ t: c.t, o: 'I', k, d, s: c.s, b: null, bs: null }));
    } else if (c.o === 'V') {
      const { s, b, bs } = c.d;
      unfoldRows(c.d.rows, c.k, (k, d, i) =>
        out.push({ t: c.t, o: 'U', k, d, s: s[i]!, b: b[i] ?? null, bs: bs[i] ?? null }),
      );
    } else {
      out.push(c);
    }
  }
  return out;
}

function unfoldRows(
  columns: BatchColumns,
  key: string,
  each: (k: string, row: Record<string, unknown>, i: number) => void,
): void {
  const entries = Object.entries(columns);
  const keys = columns[key] as unknown[];
  for (let i = 0; i < keys.length; i++) {
    const row: Record<string, unknown> = {};
    for (const [name, values] of entries) row[name] = Array.isArray(values) ? values[i] : values['='];
    each(String(keys[i]), row, i);
  }
}
