import type pg from 'pg';
import { LatestTimestampWins, type ConflictResolver, type DetectedConflict } from './conflict-resolver';
import type { PgError } from './sql';
import type { Change, Db } from './types';

/**
 * What an application replicating its catalog with this engine states about its tables and rules.
 * The engine reads none of the application's tables but `sites` (its site registry): it applies
 * changes, detects conflicts and asks the resolver, and calls these hooks where the application's
 * own rules come in. Tributary's catalog states its own in apps/api/src/replication/catalog;
 * `plainApplication` is the engine alone.
 */
export interface ReplicatedApplication {
  /** Decides a conflict provisionally, identically at every site. */
  resolver: ConflictResolver;
  /** How a snapshot for a joining site is read and loaded. */
  snapshot: SnapshotTables;
  /** Tables where two rows may not share a name: a change refused for a taken name goes to `hooks.nameClash`. */
  named: ReadonlySet<string>;
  /**
   * Tables whose rows are merged rather than contested (a record every site writes, such as a
   * conflict record): a change of one that meets another version here goes to `hooks.merge`.
   */
  merged: ReadonlySet<string>;
  /** Tables whose rows move to a trash instead of being deleted. */
  trash: TrashTables;
  hooks: ApplicationHooks;
}

export interface SnapshotTables {
  /** Tables loaded first, in this order, so every reference points at a row already there; the rest follow. */
  loadOrder: readonly string[];
  /** For a table whose rows reference rows of the same table: an ORDER BY over its rows `x`, parents first. */
  rowOrder: Readonly<Record<string, string>>;
}

/**
 * A live version of a row of a trashable table that wins over a move to the trash brings back
 * everything that move's trash entry took (`hooks.rescue`), once the transaction is applied.
 */
export interface TrashTables {
  tables: ReadonlySet<string>;
  /** The trash entry a row (as JSON) of one of those tables is in, or null when it is live. */
  entryOf(row: Record<string, unknown> | null | undefined): string | null;
}

/**
 * The application's rules. All but `afterCycle` run inside the injector's database transaction
 * (`client`), working for `origin`, the peer whose changes are applied: what such a hook writes is
 * the origin's (not captured) unless it clears `tributary.origin` (see capture.ts).
 */
export interface ApplicationHooks {
  /**
   * After transactions of `origin` (after seq `after`, through `through`) were applied, in the same
   * database transaction. Returns how many conflicts it resolved.
   */
  afterBatch(client: pg.PoolClient, origin: string, after: number, through: number): Promise<number>;
  /**
   * Whether the version `change` was based on was held here and lost a conflict: a change based on
   * a version newer than the one held is then concurrent, not early (it does not wait).
   */
  lostHere(client: pg.PoolClient, change: Change): Promise<boolean>;
  /** Whether the incoming version was superseded by a change that had it in view: nothing to apply or record. */
  isAbsorbed(
    client: pg.PoolClient,
    table: string,
    key: string,
    stamp: number,
    site: string,
  ): Promise<boolean>;
  /** The resolver decided an update or delete conflict (before the winner is applied). */
  concurrent(
    client: pg.PoolClient,
    origin: string,
    conflict: DetectedConflict,
    winner: 'incoming' | 'held',
  ): Promise<void>;
  /** A change of a `merged` table met another copy of the row: the two merge. */
  merge(client: pg.PoolClient, origin: string, change: Change): Promise<void>;
  /** Restores what the move to the trash entry `entry` took (see `TrashTables.entryOf`). */
  rescue(client: pg.PoolClient, origin: string, entry: string): Promise<void>;
  /** A change of a `named` table refused because its name is taken here: true when the hook settled it. */
  nameClash(client: pg.PoolClient, origin: string, change: Change, err: PgError): Promise<boolean>;
  /** At the end of every cycle, after dispatch (deletes every peer has applied may settle). */
  afterCycle(db: Db, siteId: string, peers: readonly string[]): Promise<void>;
}

const none: ReadonlySet<string> = new Set();

/** The engine's rules alone: the latest timestamp wins, no table of the application is special. */
export const plainApplication: ReplicatedApplication = {
  resolver: new LatestTimestampWins(),
  snapshot: { loadOrder: [], rowOrder: {} },
  named: none,
  merged: none,
  trash: { tables: none, entryOf: () => null },
  hooks: {
    afterBatch: () => Promise.resolve(0),
    lostHere: () => Promise.resolve(false),
    isAbsorbed: () => Promise.resolve(false),
    concurrent: () => Promise.resolve(),
    merge: () => Promise.reject(new Error('no table is merged')),
    rescue: () => Promise.resolve(),
    nameClash: () => Promise.resolve(false),
    afterCycle: () => Promise.resolve(),
  },
};
