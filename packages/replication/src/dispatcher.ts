import { LogPrunedError, OutgoingQueue } from './outgoing-queue';
import { rowCount, type Db, type Transport } from './types';

export interface DispatchResult {
  peer: string;
  ok: boolean;
  txs: number;
  changes: number;
  error?: string;
}

/** Most changes per request to a peer (a larger transaction still goes whole, alone). */
const BATCH_CHANGES = 10_000;

/**
 * The dispatcher: sends each peer's outgoing queue to it, oldest first, and removes only what the
 * peer acknowledged. A peer that cannot be reached keeps its queue for the next cycle. An empty
 * queue still sends an empty batch: the answer tells whether the peer lacks older transactions
 * (it joined from a snapshot, or restored a backup), which are then queued again from the log.
 */
export class Dispatcher {
  constructor(
    private readonly db: Db,
    private readonly localSite: string,
    private readonly transport: Transport,
  ) {}

  async dispatch(peerId: string): Promise<DispatchResult> {
    const queue = new OutgoingQueue(this.db, peerId);
    const result: DispatchResult = { peer: peerId, ok: true, txs: 0, changes: 0 };
    await this.db.query('UPDATE repl_peers SET last_attempt_at = now() WHERE peer_id = $1', [peerId]);
    try {
      for (let round = 0; round < 1000; round++) {
        const txs = await queue.peek(BATCH_CHANGES);
        const ack = await this.transport.send(peerId, { origin: this.localSite, txs });
        await queue.acknowledge(ack.have);
        if (ack.applied !== undefined) {
          await this.db.query(
            'UPDATE repl_peers SET peer_applied_seq = GREATEST(peer_applied_seq, $2) WHERE peer_id = $1',
            [peerId, ack.applied],
          );
        }
        const sentThrough = txs.at(-1)?.seq ?? 0;
        for (const tx of txs) {
          if (tx.seq > ack.have) break;
          result.txs += 1;
          result.changes += tx.changes.reduce((n, c) => n + rowCount(c), 0);
        }
        const requeued = await queue.requeueAfter(ack.have);
        if (txs.length === 0 && requeued === 0) break;
        // The peer stored less than we sent (a gap on its side): the rest goes next cycle.
        if (txs.length > 0 && ack.have < sentThrough && requeued === 0) break;
      }
      await this.db.query(
        `INSERT INTO repl_peers (peer_id, last_success_at, last_attempt_at) VALUES ($1, now(), now())
         ON CONFLICT (peer_id) DO UPDATE SET last_success_at = now(), last_error = NULL`,
        [peerId],
      );
    } catch (err) {
      result.ok = false;
      result.error = err instanceof Error ? err.message : String(err);
      if (err instanceof LogPrunedError) result.error = err.message;
      await this.db.query(
        `INSERT INTO repl_peers (peer_id, last_error, last_error_at, last_attempt_at) VALUES ($1, $2, now(), now())
         ON CONFLICT (peer_id) DO UPDATE SET last_error = $2, last_error_at = now(), last_attempt_at = now()`,
        [peerId, result.error.slice(0, 1000)],
      );
    }
    return result;
  }
}
