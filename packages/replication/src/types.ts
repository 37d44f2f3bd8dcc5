import type pg from 'pg';

/** The catalog connection the engine works on: a `pg.Pool` (queues live in the catalog database). */
export type Db = pg.Pool;

/**
 * One captured row change, as stored in the log and sent to peers. Short keys: a batch of a
 * hundred thousand changes is mostly these names.
 */
export interface Change {
  /** table */
  t: string;
  /** operation: insert, update, delete */
  o: 'I' | 'U' | 'D';
  /** row key (the primary key as text) */
  k: string;
  /** the row after the change (before it, for a delete), without local-only columns */
  d: Record<string, unknown>;
  /** version stamp of the row after this change: microseconds, monotonic per row */
  s: number;
  /** stamp of the version this change replaced (null for an insert) */
  b: number | null;
  /** site that made the replaced version */
  bs: string | null;
  /**
   * Other versions of the row this change supersedes: versions that lost a conflict at the origin
   * and were still heads there ([stamp, site] pairs; absent when none).
   */
  h?: [number, string][];
}

/** A batch column whose value is the same for every row of the batch, written once. */
export interface BatchConstant {
  '=': unknown;
}

/** A batch's rows in columns: an array per column (always for the key), or one value for all rows. */
export type BatchColumns = Record<string, unknown[] | BatchConstant>;

/**
 * A statement's inserts into one table, captured in columns (tables with statement capture, such as
 * metadata triples): `k` names the key column and `d` holds each replicated column, as an array of
 * the rows' values (all of the same length) or as one value every row has; every row has stamp `s`
 * and no base. It exists only in the origin's log and on the wire: the receiving collector unfolds it
 * into the per-row inserts it stands for.
 */
export interface BatchInsert {
  t: string;
  o: 'B';
  k: string;
  d: BatchColumns;
  s: number;
  b: null;
  bs: null;
}

/**
 * A statement's updates of one table, captured in columns like a batch of inserts: `d.rows` holds
 * the rows after the change, and each row has its own stamp, base stamp and base site (`d.s`, `d.b`,
 * `d.bs`, in the rows' order); `s` is the latest of the stamps. Unfolded by the receiving collector
 * into per-row updates.
 */
export interface BatchUpdate {
  t: string;
  o: 'V';
  k: string;
  d: { rows: BatchColumns; s: number[]; b: (number | null)[]; bs: (string | null)[] };
  s: number;
  b: null;
  bs: null;
}

/** A change as logged and sent: one row's, or a batch of inserts or updates. */
export type LoggedChange = Change | BatchInsert | BatchUpdate;

/** One origin transaction: applied atomically and in `seq` order at every peer. */
export interface OriginTx {
  seq: number;
  changes: LoggedChange[];
}

/** How many row changes a logged change stands for. */
export function rowCount(change: LoggedChange): number {
  if (change.o === 'B') return keyCount(change.d[change.k]);
  if (change.o === 'V') return keyCount(change.d.rows[change.k]);
  return 1;
}

const keyCount = (keys: unknown[] | BatchConstant | undefined): number =>
  Array.isArray(keys) ? keys.length : 0;

/** What a site sends a peer: transactions it originated, oldest first. */
export interface Batch {
  origin: string;
  txs: OriginTx[];
}

/**
 * A peer's answer: every transaction of the sender's origin up to `have` is stored or applied
 * there. The sender's queue drops those; a `have` below what the sender last queued asks for a resend.
 */
export interface Ack {
  have: number;
  /**
   * Every transaction of the sender's origin up to this seq is applied there (as of the peer's last
   * extraction); with `through`, a delete up to it may settle (the catalog's trash settlement).
   */
  applied?: number;
  /**
   * The peer's own log position covering every change it made before applying up to `applied`: the
   * sender settles deletes only after applying the peer's log this far. Absent from older peers (0).
   */
  through?: number;
}

/** How batches reach peers: HTTP between real sites, in memory in tests. */
export interface Transport {
  send(peerId: string, batch: Batch): Promise<Ack>;
  /** Sends a batch already written as JSON (the dispatcher writes it from the log's text). */
  sendJson?(peerId: string, json: string): Promise<Ack>;
}

/** Time, injected so tests control it. */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise<void>((resolve) => {
      if (signal?.aborted) return resolve();
      const timer = setTimeout(done, ms);
      function done(): void {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        resolve();
      }
      signal?.addEventListener('abort', done, { once: true });
    }),
};

export interface ReplicationLogger {
  log(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

export const silentLogger: ReplicationLogger = { log: () => {}, warn: () => {}, error: () => {} };
