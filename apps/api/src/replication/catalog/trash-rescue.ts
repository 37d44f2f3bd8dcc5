import type pg from 'pg';
import { setHeldBase, setOrigin, type Change } from '@tributary/replication';
import type { ConflictRecords } from './conflict-records';
import { isTrashed, TRASHABLE } from './tables';
import { scalarText } from './values';

/**
 * The trash rule on the engine's versions: a live version of a file or folder wins over a move to
 * the trash, and brings back everything the move took. Versions that lost here and are still heads
 * (no later version was based on them) are kept in `repl_heads`, so that the best head stands
 * whatever order the versions arrive in (docs/conflicts.md, Heads).
 */
export class TrashRescue {
  constructor(private readonly records: ConflictRecords) {}

  /**
   * Restores what a move to the trash took, when an update to part of it won over that move: the
   * whole trashed collection (or object) comes back and its trash entry goes. Every site does the
   * same once it holds both changes, so this is not captured. A name taken since leaves it in the
   * trash (the conflict record still shows both versions).
   */
  async rescue(client: pg.PoolClient, origin: string, trashId: string): Promise<void> {
    await client.query('SAVEPOINT rescue');
    try {
      await setOrigin(client, origin);
      await client.query('UPDATE collections SET trash_id = 0 WHERE trash_id = $1::bigint', [trashId]);
      await client.query('UPDATE data_objects SET trash_id = 0 WHERE trash_id = $1::bigint', [trashId]);
      // The entry stays (empty, hidden from trash listings): its move is still a version of the
      // record that a later change can bring back, and every site keeps the same entries.
      await client.query('RELEASE SAVEPOINT rescue');
    } catch {
      await client.query('ROLLBACK TO SAVEPOINT rescue');
    }
  }

  /**
   * Keeps track of live versions of files and folders that lost a conflict here and are still heads
   * (repl_heads), after the resolver decided between `held` and the incoming change.
   */
  async trackHeads(
    client: pg.PoolClient,
    origin: string,
    change: Change,
    held: { stamp: number | null; site: string | null; row: Record<string, unknown> | null },
    winner: 'incoming' | 'held',
  ): Promise<void> {
    if (!TRASHABLE.has(change.t)) return;
    // A version this change was based on is no longer a head.
    if (change.b !== null && change.bs !== null)
      await dropHead(client, change.t, change.k, change.b, change.bs);
    const loser =
      winner === 'incoming'
        ? held.row && held.stamp !== null && held.site !== null
          ? { stamp: held.stamp, site: held.site, data: held.row, base: await this.heldBase(client, change) }
          : null
        : change.o === 'D'
          ? null
          : { stamp: change.s, site: origin, data: change.d, base: [change.b, change.bs] as const };
    if (loser) await keepHead(client, change.t, change.k, loser);
  }

  private async heldBase(
    client: pg.PoolClient,
    change: Change,
  ): Promise<readonly [number | null, string | null]> {
    const res = await client.query<{ base_stamp: string | null; base_site: string | null }>(
      'SELECT base_stamp, base_site FROM repl_versions WHERE tbl = $1 AND row_key = $2',
      [change.t, change.k],
    );
    const r = res.rows[0];
    return [r?.base_stamp == null ? null : Number(r.base_stamp), r?.base_site ?? null];
  }

  /** Whether a version of a record was superseded by a change that had it in view (see absorb). */
  async isAbsorbed(
    client: pg.PoolClient,
    table: string,
    key: string,
    stamp: number,
    site: string,
  ): Promise<boolean> {
    if (!TRASHABLE.has(table)) return false;
    const res = await client.query(
      'SELECT 1 FROM repl_absorbed WHERE tbl = $1 AND row_key = $2 AND stamp = $3 AND site = $4',
      [table, key, stamp, site],
    );
    return (res.rowCount ?? 0) > 0;
  }

  /**
   * Moves to the trash from `origin` (its transactions after `after`, through `through`) that this
   * site applied in order, on top of the version it held, while a live version that lost a conflict
   * on the same record is still a head. Sites that met that version and the move directly let the
   * live one rescue the record; here it lost before the move arrived. So the latest such version
   * stands, as if it had arrived now, the move is recorded in the conflict, and what it trashed is
   * rescued.
   */
  async reconsiderTrashed(
    client: pg.PoolClient,
    origin: string,
    after: number,
    through: number,
  ): Promise<number> {
    const any = await client.query('SELECT 1 FROM repl_heads LIMIT 1');
    if (!any.rowCount) return 0;
    const moves = await client.query<{ change: Change }>(
      `SELECT c AS change FROM repl_archive a, jsonb_array_elements(a.changes) c
        WHERE a.origin = $1 AND a.seq > $2 AND a.seq <= $3 AND c ->> 'o' = 'U' AND c ->> 't' = ANY($4)
          AND COALESCE(c -> 'd' ->> 'trash_id', '0') <> '0'
          AND EXISTS (SELECT 1 FROM repl_heads h WHERE h.tbl = c ->> 't' AND h.row_key = c ->> 'k')
        ORDER BY a.seq`,
      [origin, after, through, [...TRASHABLE]],
    );
    let rescued = 0;
    for (const { change: move } of moves.rows) {
      const held = await client.query<{ stamp: string; site: string }>(
        'SELECT stamp, site FROM repl_versions WHERE tbl = $1 AND row_key = $2',
        [move.t, move.k],
      );
      // A later change of the same batch replaced it: that one stands.
      if (Number(held.rows[0]?.stamp) !== move.s || held.rows[0]?.site !== origin) continue;
      const stored = await client.query<{
        stamp: string;
        site: string;
        base_stamp: string | null;
        base_site: string | null;
        data: Record<string, unknown>;
      }>('SELECT stamp, site, base_stamp, base_site, data FROM repl_heads WHERE tbl = $1 AND row_key = $2', [
        move.t,
        move.k,
      ]);
      // The version that stands is the best head: live before trashed, then the latest.
      const rank = (v: { stamp: number; site: string; data: Record<string, unknown> }) =>
        [isTrashed(move.t, v.data) ? 0 : 1, v.stamp, v.site] as const;
      let best: (typeof stored.rows)[number] | undefined;
      let bestRank = rank({ stamp: move.s, site: origin, data: move.d });
      for (const h of stored.rows) {
        const r = rank({ stamp: Number(h.stamp), site: h.site, data: h.data });
        if (
          r[0] > bestRank[0] ||
          (r[0] === bestRank[0] && (r[1] > bestRank[1] || (r[1] === bestRank[1] && r[2] > bestRank[2])))
        ) {
          best = h;
          bestRank = r;
        }
      }
      if (!best) continue;
      const revived: Change = {
        t: move.t,
        o: 'U',
        k: move.k,
        d: best.data,
        s: Number(best.stamp),
        b: best.base_stamp === null ? null : Number(best.base_stamp),
        bs: best.base_site,
      };
      await this.records.noteConcurrent(
        client,
        best.site,
        {
          kind: 'update',
          table: move.t,
          key: move.k,
          incoming: { site: best.site, change: revived },
          held: { stamp: move.s, site: origin, deleted: false, row: move.d },
        },
        revived.b,
        revived.bs,
      );
      await client.query('SELECT repl_apply_forced($1, $2)', [best.site, JSON.stringify(revived)]);
      await setHeldBase(client, revived);
      await dropHead(client, move.t, move.k, best.stamp, best.site);
      // The move lost but is still a head; a live winner brings back what the move took.
      await keepHead(client, move.t, move.k, {
        stamp: move.s,
        site: origin,
        data: move.d,
        base: [move.b, move.bs],
      });
      if (!isTrashed(move.t, best.data)) await this.rescue(client, origin, scalarText(move.d.trash_id));
      rescued += 1;
    }
    await setOrigin(client, origin);
    return rescued;
  }
}

/** Keeps a version that lost here as a head of its record (repl_heads). */
async function keepHead(
  client: pg.PoolClient,
  table: string,
  key: string,
  v: {
    stamp: number | string;
    site: string;
    data: Record<string, unknown>;
    base: readonly [number | string | null, string | null];
  },
): Promise<void> {
  await client.query(
    `INSERT INTO repl_heads (tbl, row_key, stamp, site, base_stamp, base_site, data)
     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
    [table, key, v.stamp, v.site, v.base[0], v.base[1], JSON.stringify(v.data)],
  );
}

/** Forgets a head: a later version was based on it, or it stands again. */
async function dropHead(
  client: pg.PoolClient,
  table: string,
  key: string,
  stamp: number | string,
  site: string,
): Promise<void> {
  await client.query('DELETE FROM repl_heads WHERE tbl = $1 AND row_key = $2 AND stamp = $3 AND site = $4', [
    table,
    key,
    stamp,
    site,
  ]);
}
