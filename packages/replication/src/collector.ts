import { IncomingQueue } from './incoming-queue';
import type { Ack, Batch, Change, Db, OriginTx } from './types';

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
    const have = await this.incoming.store(batch.origin, JSON.stringify(batch.txs));
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
    for (const c of tx.changes as unknown[] as Array<Change | null>) {
      if (
        typeof c !== 'object' ||
        c === null ||
        typeof c.t !== 'string' ||
        typeof c.k !== 'string' ||
        (c.o !== 'I' && c.o !== 'U' && c.o !== 'D') ||
        !Number.isSafeInteger(c.s) ||
        typeof c.d !== 'object' ||
        c.d === null
      ) {
        throw new BatchRejectedError(`transaction ${tx.seq} has a malformed change`);
      }
    }
    previous = tx.seq;
  }
}
