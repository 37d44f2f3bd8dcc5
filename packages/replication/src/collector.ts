import { IncomingQueue } from './incoming-queue';
import type { Ack, Batch, BatchInsert, Change, Db, LoggedChange, OriginTx } from './types';

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
    return { have, applied: await this.incoming.applied(batch.origin) };
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
        (c.o !== 'I' && c.o !== 'U' && c.o !== 'D' && c.o !== 'B') ||
        !Number.isSafeInteger(c.s) ||
        typeof c.d !== 'object' ||
        c.d === null ||
        (c.o === 'B' && !isBatchData(c))
      ) {
        throw new BatchRejectedError(`transaction ${tx.seq} has a malformed change`);
      }
    }
    previous = tx.seq;
  }
}

/** A batch's columns: arrays of one length (at least one row), the key column's values ids. */
function isBatchData(c: BatchInsert): boolean {
  const columns = Object.values(c.d as unknown as Record<string, unknown>);
  const keys = (c.d as unknown as Record<string, unknown>)[c.k];
  if (!Array.isArray(keys) || keys.length === 0) return false;
  if (!keys.every((k) => typeof k === 'string' || Number.isSafeInteger(k))) return false;
  return columns.every((col) => Array.isArray(col) && col.length === keys.length);
}

/**
 * The per-row changes a transaction's logged changes stand for: a batch of inserts becomes one
 * insert per row (its stamp, no base), in the batch's order; other changes are kept as they are.
 */
export function unfold(changes: LoggedChange[]): Change[] {
  if (!changes.some((c) => c.o === 'B')) return changes as Change[];
  const out: Change[] = [];
  for (const c of changes) {
    if (c.o !== 'B') {
      out.push(c);
      continue;
    }
    const columns = Object.entries(c.d);
    const keys = c.d[c.k]!;
    for (let i = 0; i < keys.length; i++) {
      const d: Record<string, unknown> = {};
      for (const [name, values] of columns) d[name] = values[i];
      out.push({ t: c.t, o: 'I', k: String(keys[i]), d, s: c.s, b: null, bs: null });
    }
  }
  return out;
}
