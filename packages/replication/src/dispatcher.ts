import { LogPrunedError, LogTexts, OutgoingQueue } from './outgoing-queue';
import type { Ack, Batch, Db, Transport } from './types';

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

  /**
   * Sends `peerId` its queue, a batch at a time, each as soon as the previous one is acknowledged.
   * `texts` holds the log entries read for this round's other peers (a fresh one reads them alone).
   */
  async dispatch(peerId: string, texts = new LogTexts(this.db)): Promise<DispatchResult> {
    const queue = new OutgoingQueue(this.db, peerId);
    const result: DispatchResult = { peer: peerId, ok: true, txs: 0, changes: 0 };
    await this.db.query('UPDATE repl_peers SET last_attempt_at = now() WHERE peer_id = $1', [peerId]);
    try {
      for (let round = 0; round < 1000; round++) {
        const txs = await queue.peekText(BATCH_CHANGES, texts);
        const ack = await this.send(
          peerId,
          txs.map((tx) => tx.json),
        );
        await queue.acknowledge(ack.have);
        if (ack.applied !== undefined) await noteApplied(this.db, peerId, ack.applied, ack.through ?? 0);
        const sentThrough = txs.at(-1)?.seq ?? 0;
        for (const tx of txs) {
          if (tx.seq > ack.have) break;
          result.txs += 1;
          result.changes += tx.changes;
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

  /** One batch, written out from the entries' texts (a transport without `sendJson` gets it parsed). */
  private send(peerId: string, txs: string[]): Promise<Ack> {
    const json = `{"origin":${JSON.stringify(this.localSite)},"txs":[${txs.join(',')}]}`;
    if (this.transport.sendJson) return this.transport.sendJson(peerId, json);
    return this.transport.send(peerId, JSON.parse(json) as Batch);
  }
}

/** Pending acknowledgements kept per peer (older ones go first; a later one settles as much). */
const PENDING_ACKS = 32;

/**
 * Takes a peer's report that it applied this site's transactions up to `applied`, having made every
 * change of its own before that by its log's `through`. It counts (advances `peer_applied_seq`, which
 * lets deletes settle) once this site has applied the peer's log that far; until then it waits in
 * `peer_acks` and `promoteAcks` takes it when the injector has caught up.
 */
async function noteApplied(db: Db, peerId: string, applied: number, through: number): Promise<void> {
  await db.query(
    `UPDATE repl_peers SET
       peer_applied_seq = CASE WHEN $3::bigint <= applied_seq THEN GREATEST(peer_applied_seq, $2::bigint) ELSE peer_applied_seq END,
       peer_acks = CASE
         WHEN $3::bigint <= applied_seq OR $2::bigint <= peer_applied_seq
           OR $2::bigint <= COALESCE((peer_acks -> -1 ->> 'a')::bigint, 0) THEN peer_acks
         ELSE (SELECT COALESCE(jsonb_agg(x ORDER BY n), '[]'::jsonb)
                 FROM jsonb_array_elements(peer_acks || jsonb_build_object('a', $2::bigint, 't', $3::bigint))
                      WITH ORDINALITY AS e(x, n)
                WHERE n > jsonb_array_length(peer_acks) + 1 - ${PENDING_ACKS})
       END
     WHERE peer_id = $1`,
    [peerId, applied, through],
  );
}

/**
 * Counts the pending acknowledgements whose `through` this site has now applied: `peer_applied_seq`
 * takes the highest such `applied`, and they leave the list.
 */
export async function promoteAcks(db: Db): Promise<void> {
  await db.query(
    `UPDATE repl_peers p SET
       peer_applied_seq = GREATEST(p.peer_applied_seq, ready.a),
       peer_acks = COALESCE((SELECT jsonb_agg(x) FROM jsonb_array_elements(p.peer_acks) x
                              WHERE (x ->> 't')::bigint > p.applied_seq AND (x ->> 'a')::bigint > ready.a), '[]'::jsonb)
       FROM (SELECT r.peer_id, max((x ->> 'a')::bigint) AS a
               FROM repl_peers r, jsonb_array_elements(r.peer_acks) x
              WHERE (x ->> 't')::bigint <= r.applied_seq GROUP BY r.peer_id) ready
      WHERE p.peer_id = ready.peer_id`,
  );
}
