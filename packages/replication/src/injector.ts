import type pg from 'pg';
import type { ApplicationHooks, ReplicatedApplication } from './application';
import {
  conflictId,
  type ConflictKind,
  type ConflictResolver,
  type DetectedConflict,
} from './conflict-resolver';
import { asPgError, ignoreClientError, quoteIdent, type PgError } from './sql';
import type { Change, Db, ReplicationLogger } from './types';

export interface InjectResult {
  txs: number;
  changes: number;
  conflicts: number;
  /** Origins whose next transaction waits for a change from elsewhere, with what it waits on. */
  waiting: Record<string, string>;
}

/** The most changes applied in one database transaction by the fast path. */
const FAST_PATH_CHANGES = 20_000;

interface ApplyStop {
  idx: number;
  reason: 'exists' | 'missing' | 'orphan' | 'behind' | 'concurrent' | 'parked';
  cur_stamp: string | null;
  cur_site: string | null;
  cur_deleted: boolean | null;
}

class Defer extends Error {
  constructor(readonly waitingOn: string) {
    super(waitingOn);
  }
}

/**
 * The injector: applies the incoming queue, each origin's transactions in seq order and each one
 * atomically, with the writes marked as the origin's (so they are not captured again). Applied
 * transactions move to the archive in the same database transaction, and the origin's applied seq
 * advances with them: a crash at any point leaves either all of a transaction or none of it.
 *
 * Most transactions apply in one call of `repl_inject` (PostgreSQL applies them in order inside
 * subtransactions). One that needs attention is applied here change by change: conflicts go to the
 * resolver (and are recorded), a change that depends on something not yet received from another
 * origin makes the origin wait, and nothing is ever skipped without a conflict record. The
 * application's rules (application.ts) come in through its hooks.
 */
export class Injector {
  private readonly resolver: ConflictResolver;
  private readonly hooks: ApplicationHooks;

  constructor(
    private readonly db: Db,
    private readonly application: ReplicatedApplication,
    private readonly logger: ReplicationLogger,
  ) {
    this.resolver = application.resolver;
    this.hooks = application.hooks;
  }

  async injectAll(origins: readonly string[]): Promise<InjectResult> {
    const result: InjectResult = { txs: 0, changes: 0, conflicts: 0, waiting: {} };
    // Round-robin until nothing moves: one origin's transaction may be waiting for another's.
    let progress = true;
    while (progress) {
      progress = false;
      for (const origin of origins) {
        const r = await this.injectOrigin(origin);
        result.txs += r.txs;
        result.changes += r.changes;
        result.conflicts += r.conflicts;
        if (r.waitingOn) result.waiting[origin] = r.waitingOn;
        else delete result.waiting[origin];
        if (r.txs > 0) progress = true;
      }
    }
    return result;
  }

  /** Applies what is queued for one origin, as far as it can go now. */
  async injectOrigin(
    origin: string,
  ): Promise<{ txs: number; changes: number; conflicts: number; waitingOn?: string }> {
    let txs = 0;
    let changes = 0;
    let conflicts = 0;
    for (;;) {
      const client = await this.db.connect();
      // A connection PostgreSQL ends while borrowed must not crash the process: the query fails instead.
      client.on('error', ignoreClientError);
      try {
        await client.query('BEGIN');
        await client.query('INSERT INTO repl_peers (peer_id) VALUES ($1) ON CONFLICT (peer_id) DO NOTHING', [
          origin,
        ]);
        const state = await client.query<{ applied_seq: string }>(
          'SELECT applied_seq FROM repl_peers WHERE peer_id = $1 FOR UPDATE',
          [origin],
        );
        const after = Number(state.rows[0]?.applied_seq ?? 0);
        const fast = await client.query<{
          applied_seq: string;
          txs: number;
          changes: number;
          stopped_at: string | null;
        }>('SELECT * FROM repl_inject($1, $2, $3)', [origin, after, FAST_PATH_CHANGES]);
        const row = fast.rows[0];
        if (!row) throw new Error('repl_inject returned nothing');
        txs += row.txs;
        changes += row.changes;
        if (row.txs > 0)
          conflicts += await this.hooks.afterBatch(client, origin, after, Number(row.applied_seq));
        if (row.stopped_at === null) {
          await client.query('COMMIT');
          if (row.txs === 0 || row.changes < FAST_PATH_CHANGES) return { txs, changes, conflicts };
          continue;
        }
        // One transaction needs attention: apply it change by change.
        const seq = Number(row.stopped_at);
        try {
          const slow = await this.applySlowly(client, origin, seq);
          await client.query('SELECT repl_finish_txs($1, $2, $3)', [origin, seq - 1, seq]);
          slow.conflicts += await this.hooks.afterBatch(client, origin, seq - 1, seq);
          await client.query('COMMIT');
          txs += 1;
          changes += slow.changes;
          conflicts += slow.conflicts;
        } catch (err) {
          if (!(err instanceof Defer)) throw err;
          // Keep what the fast path applied; this transaction waits for the next round.
          await client.query('ROLLBACK TO SAVEPOINT slow_tx');
          await client.query('UPDATE repl_peers SET waiting_on = $2 WHERE peer_id = $1', [
            origin,
            err.waitingOn,
          ]);
          await client.query('COMMIT');
          return { txs, changes, conflicts, waitingOn: err.waitingOn };
        }
      } catch (err) {
        await client.query('ROLLBACK').catch(() => undefined);
        const message = err instanceof Error ? err.message : String(err);
        this.logger.error(`injecting changes from ${origin} failed: ${message}`);
        await this.db
          .query('UPDATE repl_peers SET waiting_on = $2 WHERE peer_id = $1', [origin, `error: ${message}`])
          .catch(() => undefined);
        return { txs, changes, conflicts, waitingOn: `error: ${message}` };
      } finally {
        client.off('error', ignoreClientError);
        client.release();
      }
    }
  }

  /**
   * Applies one transaction change by change inside a savepoint. Runs of unproblematic changes are
   * applied in one call; a change that fails is found by stepping one at a time.
   */
  private async applySlowly(
    client: pg.PoolClient,
    origin: string,
    seq: number,
  ): Promise<{ changes: number; conflicts: number }> {
    await client.query('SAVEPOINT slow_tx');
    const countRes = await client.query<{ change_count: number }>(
      'SELECT change_count FROM repl_incoming WHERE origin = $1 AND seq = $2',
      [origin, seq],
    );
    const total = countRes.rows[0]?.change_count ?? 0;
    let conflicts = 0;
    let idx = 0;
    let step: number | null = null; // null: as far as possible; 1: one change at a time
    // Trash entries whose move an update overruled: restored once the whole transaction is applied.
    const rescues = new Set<string>();
    while (idx < total) {
      await client.query('SAVEPOINT change');
      let stop: ApplyStop | undefined;
      try {
        const res = await client.query<ApplyStop>(
          `SELECT * FROM repl_apply($1, (SELECT changes FROM repl_incoming WHERE origin = $1 AND seq = $2), $3, $4)`,
          [origin, seq, idx, step],
        );
        stop = res.rows[0];
      } catch (err) {
        await client.query('ROLLBACK TO SAVEPOINT change');
        if (step === null) {
          step = 1; // find the failing change
          continue;
        }
        const change = await this.changeAt(client, origin, seq, idx);
        conflicts += await this.onApplyError(client, origin, change, asPgError(err));
        idx += 1;
        continue;
      }
      await client.query('RELEASE SAVEPOINT change');
      if (!stop) {
        idx = step === null ? total : idx + 1;
        continue;
      }
      const change = await this.changeAt(client, origin, seq, stop.idx);
      // Based on a version newer than the held one: on its way, unless that version was here and lost
      // (a move to the trash loses to an older live update): then the change is concurrent.
      const merged = this.application.merged.has(change.t);
      const onItsWay = stop.reason === 'behind' && !merged && !(await this.hooks.lostHere(client, change));
      if (stop.reason === 'missing' || onItsWay) {
        throw new Defer(
          stop.reason === 'missing'
            ? `${change.t} ${change.k}, changed at ${change.bs ?? 'another site'}, has not arrived yet`
            : `a newer version of ${change.t} ${change.k} from ${change.bs ?? 'another site'} has not arrived yet`,
        );
      }
      if (stop.reason === 'parked') {
        // An earlier change of this row is kept aside here: this one joins it.
        await client.query(
          `INSERT INTO repl_parked (origin, tbl, row_key, change, waiting_tbl, waiting_key)
           SELECT $1, $2, $3, $4, waiting_tbl, waiting_key FROM repl_parked
            WHERE tbl = $2 AND row_key = $3 ORDER BY id LIMIT 1`,
          [origin, change.t, change.k, JSON.stringify(change)],
        );
      } else if (
        merged &&
        (stop.reason === 'exists' || stop.reason === 'concurrent' || stop.reason === 'behind')
      ) {
        // Two copies of one record every site writes (a conflict record): they merge.
        await this.hooks.merge(client, origin, change);
      } else {
        conflicts += await this.resolve(client, origin, change, stop, rescues);
      }
      idx = stop.idx + 1;
    }
    for (const entry of rescues) await this.hooks.rescue(client, origin, entry);
    return { changes: total, conflicts };
  }

  private async changeAt(client: pg.PoolClient, origin: string, seq: number, idx: number): Promise<Change> {
    const res = await client.query<{ change: Change }>(
      'SELECT changes -> $3::int AS change FROM repl_incoming WHERE origin = $1 AND seq = $2',
      [origin, seq, idx],
    );
    const change = res.rows[0]?.change;
    if (!change) throw new Error(`change ${idx} of ${origin}#${seq} is missing`);
    return change;
  }

  private async resolve(
    client: pg.PoolClient,
    origin: string,
    change: Change,
    stop: ApplyStop,
    rescues: Set<string>,
  ): Promise<number> {
    const held = {
      stamp: stop.cur_stamp === null ? null : Number(stop.cur_stamp),
      site: stop.cur_site,
      deleted: stop.cur_deleted ?? false,
      row: await this.currentRow(client, change),
    };
    const kind: ConflictKind =
      stop.reason === 'exists'
        ? 'insert-exists'
        : stop.reason === 'orphan'
          ? 'orphan'
          : held.deleted
            ? 'update-deleted'
            : change.o === 'D'
              ? 'delete-updated'
              : 'update';
    const conflict: DetectedConflict = {
      kind,
      table: change.t,
      key: change.k,
      incoming: { site: origin, change },
      held,
    };
    // A version the held one superseded (the site that made the held one had it in view) arriving
    // late is not concurrent with it: nothing to apply, and its conflict is recorded already.
    if (await this.hooks.isAbsorbed(client, change.t, change.k, change.s, origin)) return 0;
    const decision = this.resolver.resolve(conflict);
    const resolution = decision.reason;
    if (kind === 'update' || kind === 'update-deleted' || kind === 'delete-updated') {
      await this.hooks.concurrent(client, origin, conflict, decision.winner);
      // A live version won over a move to the trash: the rest of what was trashed comes back too.
      const loser = decision.winner === 'incoming' ? held.row : change.o === 'D' ? null : change.d;
      const winnerRow = decision.winner === 'incoming' ? change.d : held.row;
      const { trash } = this.application;
      if (trash.tables.has(change.t)) {
        const entry = trash.entryOf(loser);
        if (entry !== null && trash.entryOf(winnerRow) === null) rescues.add(entry);
      }
    }
    if (decision.winner === 'incoming') {
      await client.query('SAVEPOINT forced');
      try {
        await client.query('SELECT repl_apply_forced($1, $2)', [origin, JSON.stringify(change)]);
        // The held version was not this change's base: record the one it was.
        await setHeldBase(client, change);
        await client.query('RELEASE SAVEPOINT forced');
        // A row deleted here came back: what was kept aside because it referenced it applies now.
        if (held.deleted && change.o !== 'D') await this.unpark(client, change.t, change.k);
      } catch (err) {
        await client.query('ROLLBACK TO SAVEPOINT forced');
        await this.record(
          client,
          conflict,
          decision.winner,
          `${resolution}; applying it failed: ${asPgError(err).message}`,
        );
        // Kept aside if it references a row deleted here, waits if that row has not arrived yet.
        return 1 + (await this.onApplyError(client, origin, change, asPgError(err)));
      }
    }
    await this.record(client, conflict, decision.winner, resolution);
    return 1;
  }

  /**
   * A change PostgreSQL refused. A reference to a row that has not arrived makes the origin wait;
   * a reference to a row deleted here, a delete of a row still referenced here, or a name taken
   * here is a conflict: the held state stays and the conflict is recorded.
   */
  private async onApplyError(
    client: pg.PoolClient,
    origin: string,
    change: Change,
    err: PgError,
  ): Promise<number> {
    let kind: string;
    if (err.code === '23503') {
      const missing = missingReference(err);
      if (missing) {
        if (!(await this.isDeletedHere(client, missing))) {
          throw new Defer(`${missing.table} ${missing.key} has not arrived yet`);
        }
        // PostgreSQL reports the first reference it checks: another may still be on its way, and the
        // change must wait for it as for any reference, not be kept aside for the deleted one alone.
        const notArrived = await this.unarrivedReference(client, change);
        if (notArrived) throw new Defer(`${notArrived} has not arrived yet`);
        kind = 'parent-deleted';
        await client.query(
          `INSERT INTO repl_parked (origin, tbl, row_key, change, waiting_tbl, waiting_key)
           VALUES ($1, $2, $3, $4, $5, $6)`,
          [origin, change.t, change.k, JSON.stringify(change), missing.table, missing.key],
        );
      } else {
        kind = 'delete-referenced';
      }
    } else if (err.code === '23505') {
      // Two records created with one name: the later one is renamed, both stay.
      if (
        this.application.named.has(change.t) &&
        change.o !== 'D' &&
        (await this.hooks.nameClash(client, origin, change, err))
      )
        return 1;
      kind = 'same-name';
    } else {
      throw new Defer(`error applying ${change.t} ${change.k}: ${err.message}`);
    }
    const held = await this.versionOf(client, change);
    await this.record(
      client,
      {
        kind: kind as ConflictKind,
        table: change.t,
        key: change.k,
        incoming: { site: origin, change },
        held: { ...held, row: await this.currentRow(client, change) },
      },
      'held',
      `refused here: ${err.message}`,
    );
    return 1;
  }

  /**
   * Applies, in the order they came, the changes kept aside because they referenced `table` `key`
   * (now back), and then what waited on those rows in turn. One that still fails stays kept aside.
   */
  private async unpark(client: pg.PoolClient, table: string, key: string, depth = 0): Promise<void> {
    if (depth > 20) return;
    const parked = await client.query<{ id: string; origin: string; change: Change }>(
      `SELECT id, origin, change FROM repl_parked WHERE waiting_tbl = $1 AND waiting_key = $2 ORDER BY id`,
      [table, key],
    );
    for (const p of parked.rows) {
      await client.query('SAVEPOINT unpark');
      try {
        await client.query('SELECT repl_apply_forced($1, $2)', [p.origin, JSON.stringify(p.change)]);
        await client.query('DELETE FROM repl_parked WHERE id = $1', [p.id]);
        await client.query('RELEASE SAVEPOINT unpark');
      } catch (err) {
        await client.query('ROLLBACK TO SAVEPOINT unpark');
        // It also references another row deleted here: it now waits for that one to come back.
        const deleted = missingReference(asPgError(err));
        if (deleted && (await this.isDeletedHere(client, deleted))) {
          await client.query('UPDATE repl_parked SET waiting_tbl = $2, waiting_key = $3 WHERE id = $1', [
            p.id,
            deleted.table,
            deleted.key,
          ]);
        } else {
          this.logger.warn(`${p.change.t} ${p.change.k} stays kept aside: ${asPgError(err).message}`);
        }
        continue;
      }
      if (p.change.o !== 'D') await this.unpark(client, p.change.t, p.change.k, depth + 1);
    }
  }

  private async isDeletedHere(client: pg.PoolClient, row: { table: string; key: string }): Promise<boolean> {
    const tomb = await client.query(
      'SELECT 1 FROM repl_versions WHERE tbl = $1 AND row_key = $2 AND deleted',
      [row.table, row.key],
    );
    return tomb.rowCount !== 0;
  }

  /**
   * A row the change references (by a single-column foreign key) that is neither here nor deleted
   * here: it has not arrived yet. Described as "table key", or null when every reference is here or
   * deleted here.
   */
  private async unarrivedReference(client: pg.PoolClient, change: Change): Promise<string | null> {
    if (change.o === 'D') return null;
    const refs = await client.query<{ child_column: string; parent_table: string; parent_column: string }>(
      `SELECT a.attname AS child_column, pc.relname AS parent_table, pa.attname AS parent_column
         FROM pg_constraint c
         JOIN pg_class cc ON cc.oid = c.conrelid
         JOIN pg_class pc ON pc.oid = c.confrelid
         JOIN pg_attribute a ON a.attrelid = c.conrelid AND a.attnum = c.conkey[1]
         JOIN pg_attribute pa ON pa.attrelid = c.confrelid AND pa.attnum = c.confkey[1]
        WHERE c.contype = 'f' AND cc.relname = $1 AND cardinality(c.conkey) = 1
          AND cc.relnamespace = current_schema()::regnamespace`,
      [change.t],
    );
    for (const ref of refs.rows) {
      const value = change.d[ref.child_column];
      // Foreign keys here are single numeric or text columns: anything else is not a reference.
      if (typeof value !== 'string' && typeof value !== 'number') continue;
      const key = String(value);
      const here = await client.query(
        `SELECT 1 FROM ${quoteIdent(ref.parent_table)} WHERE ${quoteIdent(ref.parent_column)}::text = $1
          UNION ALL
         SELECT 1 FROM repl_versions WHERE tbl = $2 AND row_key = $1 AND deleted
          LIMIT 1`,
        [key, ref.parent_table],
      );
      if (here.rowCount === 0) return `${ref.parent_table} ${key}`;
    }
    return null;
  }

  private async versionOf(
    client: pg.PoolClient,
    change: Change,
  ): Promise<{ stamp: number | null; site: string | null; deleted: boolean }> {
    const res = await client.query<{ stamp: string; site: string; deleted: boolean }>(
      'SELECT stamp, site, deleted FROM repl_held_version($1, $2) WHERE stamp IS NOT NULL',
      [change.t, change.k],
    );
    const row = res.rows[0];
    return row
      ? { stamp: Number(row.stamp), site: row.site, deleted: row.deleted }
      : { stamp: null, site: null, deleted: false };
  }

  private async currentRow(client: pg.PoolClient, change: Change): Promise<Record<string, unknown> | null> {
    const table = await client.query<{ key_column: string }>(
      'SELECT key_column FROM repl_tables WHERE name = $1',
      [change.t],
    );
    const keyColumn = table.rows[0]?.key_column;
    if (!keyColumn) return null;
    const res = await client.query<{ row: Record<string, unknown> }>(
      `SELECT to_jsonb(x) AS row FROM ${quoteIdent(change.t)} x WHERE x.${quoteIdent(keyColumn)}::text = $1`,
      [change.k],
    );
    return res.rows[0]?.row ?? null;
  }

  private async record(
    client: pg.PoolClient,
    conflict: DetectedConflict,
    winner: 'incoming' | 'held',
    resolution: string,
  ): Promise<void> {
    const incoming = { stamp: conflict.incoming.change.s, site: conflict.incoming.site };
    const id = conflictId(conflict.table, conflict.key, incoming, conflict.held);
    await client.query(
      `INSERT INTO repl_conflicts (id, kind, tbl, row_key, local_stamp, local_site, local_data,
                                   incoming_stamp, incoming_site, incoming_data, winner, resolution)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
      [
        id,
        conflict.kind,
        conflict.table,
        conflict.key,
        conflict.held.stamp,
        conflict.held.site,
        conflict.held.row === null ? null : JSON.stringify(conflict.held.row),
        incoming.stamp,
        incoming.site,
        JSON.stringify(conflict.incoming.change.d),
        winner,
        resolution,
      ],
    );
    this.logger.warn(
      `conflict ${conflict.kind} on ${conflict.table} ${conflict.key}: ${winner} version stands (${resolution})`,
    );
  }
}

/**
 * Records the version a change that won here was based on (a forced apply replaced a version that
 * was not its base, so the repl_versions trigger's guess is wrong).
 */
export async function setHeldBase(client: { query: pg.PoolClient['query'] }, change: Change): Promise<void> {
  await client.query(
    'UPDATE repl_versions SET base_stamp = $3, base_site = $4 WHERE tbl = $1 AND row_key = $2',
    [change.t, change.k, change.b, change.bs],
  );
}

/** The referenced row a foreign-key violation names as missing. */
function missingReference(err: PgError): { table: string; key: string } | null {
  if (err.code !== '23503') return null;
  const missing = /Key \(([^)]+)\)=\(([^)]*)\) is not present in table "([^"]+)"/.exec(err.detail ?? '');
  return missing ? { table: missing[3]!, key: missing[2]! } : null;
}
