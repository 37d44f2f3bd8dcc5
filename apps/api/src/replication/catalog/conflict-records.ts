import type pg from 'pg';
import { asLocalChange, compareVersions, type Change, type DetectedConflict } from '@tributary/replication';
import {
  byOf,
  collectionOf,
  differsOnlyInAttributes,
  hashId,
  iso,
  mergeConflictRows,
  normalise,
  openedAt,
  provisionalWinner,
  sortVersions,
  UNDECIDED,
  versionId,
  type ConflictRow,
  type ConflictVersion,
} from './conflict-rows';
import { isNegotiable, isTrashed } from './tables';
import { canonical } from './values';

/**
 * The store of conflict records: writes and merges the records people negotiate, inside the
 * injector's transaction. Records are written as local changes (captured and replicated) even
 * though the injector works on behalf of a peer.
 */
export class ConflictRecords {
  constructor(readonly deadlineMs: number) {}

  /** Records an update or delete conflict the resolver decided. */
  async noteConcurrent(
    client: pg.PoolClient,
    origin: string,
    conflict: DetectedConflict,
    baseStamp: number | null,
    baseSite: string | null,
  ): Promise<void> {
    if (!isNegotiable(conflict.table)) return;
    const change = conflict.incoming.change;
    const held = conflict.held;
    const heldBase = await client.query<{ base: string | null }>(
      `SELECT base_stamp || '@' || base_site AS base FROM repl_versions WHERE tbl = $1 AND row_key = $2`,
      [conflict.table, conflict.key],
    );
    const incomingVersion: ConflictVersion = {
      site: origin,
      stamp: change.s,
      deleted: change.o === 'D',
      by: byOf(change.d),
      data: change.d,
      base: baseStamp === null || baseSite === null ? null : `${baseStamp}@${baseSite}`,
    };
    const heldVersion: ConflictVersion = {
      site: held.site ?? '?',
      stamp: held.stamp ?? 0,
      deleted: held.deleted,
      by: byOf(held.row),
      data: held.row,
      base: heldBase.rows[0]?.base ?? null,
    };
    const versions = sortVersions([incomingVersion, heldVersion]);
    const deleteKind =
      versions.some((v) => v.deleted) ||
      isTrashed(conflict.table, incomingVersion.data) !== isTrashed(conflict.table, heldVersion.data);
    // A file time or permission bits changed at two sites: the latest stands, nobody is asked.
    if (!deleteKind && differsOnlyInAttributes(conflict.table, incomingVersion.data, heldVersion.data))
      return;
    const winner = provisionalWinner(conflict.table, versions);
    const openedMicros = openedAt(versions);
    const collection = collectionOf(conflict.table, winner.data ?? change.d);
    const id =
      (await this.recordLost(client, conflict.table, conflict.key, baseStamp, baseSite)) ??
      hashId('concurrent', conflict.table, conflict.key, `${baseStamp ?? ''}@${baseSite ?? ''}`);
    await this.write(client, origin, {
      id,
      kind: deleteKind ? 'delete' : 'update',
      tbl: conflict.table,
      row_key: conflict.key,
      versions,
      winner_site: winner.site,
      winner_stamp: winner.stamp,
      detail: {},
      collection_id: collection,
      opened_at: iso(openedMicros),
      deadline: iso(openedMicros + this.deadlineMs * 1000),
      ...UNDECIDED,
    });
  }

  /**
   * The conflict record in which the version a change was based on lost: a site that kept editing
   * after its version lost (before it heard of the conflict) continues that conflict rather than
   * opening another, so every site files the versions under one record whatever order they arrive
   * in. A change based on a record's winner is a new conflict.
   */
  private async recordLost(
    client: pg.PoolClient,
    table: string,
    key: string,
    baseStamp: number | null,
    baseSite: string | null,
  ): Promise<string | null> {
    if (baseStamp === null || baseSite === null) return null;
    const res = await client.query<{ id: string }>(
      `SELECT id FROM conflicts
        WHERE tbl = $1 AND row_key = $2
          AND versions @> jsonb_build_array(jsonb_build_object('stamp', $3::bigint, 'site', $4::text))
          AND NOT (winner_stamp = $3::bigint AND winner_site = $4)
        ORDER BY id LIMIT 1`,
      [table, key, baseStamp, baseSite],
    );
    return res.rows[0]?.id ?? null;
  }

  /** Inserts a record detected here, or merges it into the copy held here; captured either way. */
  async write(client: pg.PoolClient, origin: string, row: ConflictRow): Promise<void> {
    const held = await client.query<{ row: ConflictRow }>(
      'SELECT to_jsonb(c) AS row FROM conflicts c WHERE id = $1 FOR UPDATE',
      [row.id],
    );
    const current = held.rows[0]?.row;
    const next = current ? mergeConflictRows(normalise(current), row) : row;
    if (current && canonical(normalise(current)) === canonical(normalise(next))) return;
    await this.upsert(client, origin, next);
    if (next.kind !== 'same-name') await this.consolidate(client, origin, next.tbl, next.row_key);
  }

  /** Writes a conflict record as a change of this site (captured, so it replicates). */
  private async upsert(client: pg.PoolClient, origin: string, row: ConflictRow): Promise<void> {
    await asLocalChange(client, origin, () =>
      client.query(
        `INSERT INTO conflicts SELECT * FROM jsonb_populate_record(NULL::conflicts, $1)
         ON CONFLICT (id) DO UPDATE SET
           kind = EXCLUDED.kind, versions = EXCLUDED.versions, winner_site = EXCLUDED.winner_site,
           winner_stamp = EXCLUDED.winner_stamp, detail = EXCLUDED.detail,
           collection_id = EXCLUDED.collection_id, opened_at = EXCLUDED.opened_at,
           deadline = EXCLUDED.deadline, status = EXCLUDED.status, decision = EXCLUDED.decision,
           decided_value = EXCLUDED.decided_value, decided_by = EXCLUDED.decided_by,
           decided_by_name = EXCLUDED.decided_by_name, decided_policy = EXCLUDED.decided_policy,
           decided_at = EXCLUDED.decided_at, decided_at_site = EXCLUDED.decided_at_site`,
        [JSON.stringify(row)],
      ),
    );
  }

  /**
   * A peer's copy of a conflict record met the copy held here (both sites detected it, or both
   * decided it): the merge of the two stands, with the incoming version recorded.
   */
  async mergeIncoming(client: pg.PoolClient, origin: string, change: Change): Promise<void> {
    const held = await client.query<{ row: ConflictRow }>(
      'SELECT to_jsonb(c) AS row FROM conflicts c WHERE id = $1 FOR UPDATE',
      [change.k],
    );
    const current = held.rows[0]?.row;
    const version = await client.query<{ stamp: string; site: string }>(
      `SELECT stamp, site FROM repl_versions WHERE tbl = 'conflicts' AND row_key = $1`,
      [change.k],
    );
    await client.query('SELECT repl_apply_forced($1, $2)', [origin, JSON.stringify(change)]);
    if (change.o === 'D' || !current) return;
    const incoming = normalise(change.d as unknown as ConflictRow);
    const merged = mergeConflictRows(normalise(current), incoming);
    if (canonical(merged) !== canonical(incoming)) {
      // The merge holds more than the incoming copy: written as a change of this site, so that the
      // sites that sent or already hold the incoming copy get the union too.
      await this.upsert(client, origin, merged);
      return;
    }
    // The row's version never goes back: later changes based on the newer one must not wait for it.
    const before = version.rows[0];
    if (
      before &&
      compareVersions({ stamp: Number(before.stamp), site: before.site }, { stamp: change.s, site: origin }) >
        0
    ) {
      await client.query(
        `UPDATE repl_versions SET stamp = $2, site = $3 WHERE tbl = 'conflicts' AND row_key = $1`,
        [change.k, before.stamp, before.site],
      );
    }
  }

  /**
   * Folds the records about one row that share a version into one: a site that met a chain of
   * versions out of order may have filed a version under a second record (each id comes from the
   * version the concurrent changes started from, as far as that site could tell). The records of a
   * group merge into the one with the smallest id; the others are deleted. Both are changes of this
   * site, and every site holding the records folds them alike.
   */
  async consolidate(client: pg.PoolClient, origin: string, table: string, key: string): Promise<void> {
    const res = await client.query<{ row: ConflictRow }>(
      `SELECT to_jsonb(c) AS row FROM conflicts c
        WHERE tbl = $1 AND row_key = $2 AND kind <> 'same-name' ORDER BY id FOR UPDATE`,
      [table, key],
    );
    if (res.rows.length < 2) return;
    // Groups of records connected by a shared version (in id order, so each group's first is its smallest).
    const groups: ConflictRow[][] = [];
    for (const { row } of res.rows) {
      const ids = new Set(row.versions.map(versionId));
      const joined = groups.filter((g) => g.some((r) => r.versions.some((v) => ids.has(versionId(v)))));
      const merged = [...joined.flat(), normalise(row)].sort((a, b) =>
        a.id < b.id ? -1 : a.id > b.id ? 1 : 0,
      );
      for (const g of joined) groups.splice(groups.indexOf(g), 1);
      groups.push(merged);
    }
    for (const group of groups) {
      if (group.length < 2) continue;
      const [first, ...rest] = group as [ConflictRow, ...ConflictRow[]];
      const folded = rest.reduce((acc, r) => mergeConflictRows(acc, { ...r, id: acc.id }), first);
      if (canonical(folded) !== canonical(first)) await this.upsert(client, origin, folded);
      await asLocalChange(client, origin, () =>
        client.query('DELETE FROM conflicts WHERE id = ANY($1::text[])', [rest.map((r) => r.id)]),
      );
    }
  }

  /**
   * After changes from `origin` (its transactions after `after`, through `through`) were applied, in
   * one pass over them:
   * - the versions they superseded besides their base (`h`: heads at the origin) are no longer heads
   *   here either, and are remembered, so that one arriving later is not taken for a concurrent update;
   * - the records about each row that conflict records among them touched are folded (copies applied
   *   here in order are not merged on the way).
   */
  async afterBatch(client: pg.PoolClient, origin: string, after: number, through: number): Promise<void> {
    const touched = await client.query<{ tbl: string; row_key: string }>(
      `WITH batch AS (
         SELECT c FROM repl_archive a, jsonb_array_elements(a.changes) c
          WHERE a.origin = $1 AND a.seq > $2 AND a.seq <= $3
            AND a.changes @? '$[*] ? (exists(@.h) || @.t == "conflicts")'
            AND (c ? 'h' OR c ->> 't' = 'conflicts')),
       h AS (
         SELECT c ->> 't' AS tbl, c ->> 'k' AS row_key, (x ->> 0)::bigint AS stamp, x ->> 1 AS site
           FROM batch, jsonb_array_elements(c -> 'h') x WHERE c ? 'h'),
       gone AS (
         DELETE FROM repl_heads r USING h
          WHERE r.tbl = h.tbl AND r.row_key = h.row_key AND r.stamp = h.stamp AND r.site = h.site),
       absorbed AS (
         INSERT INTO repl_absorbed (tbl, row_key, stamp, site) SELECT tbl, row_key, stamp, site FROM h
         ON CONFLICT DO NOTHING)
       SELECT DISTINCT c -> 'd' ->> 'tbl' AS tbl, c -> 'd' ->> 'row_key' AS row_key FROM batch
        WHERE c ->> 't' = 'conflicts' AND c ->> 'o' <> 'D' AND c -> 'd' ->> 'kind' <> 'same-name'`,
      [origin, after, through],
    );
    for (const r of touched.rows) await this.consolidate(client, origin, r.tbl, r.row_key);
  }

  /**
   * Whether the version a change was based on was held here and lost a conflict (it is a head, was
   * absorbed, or is kept in a conflict record about the record), or was made here: a site applies its
   * own versions as it makes them, so one it does not hold now was lost here (one between two that
   * a rescue overruled is in no record), and it will never arrive.
   */
  async lostHere(client: pg.PoolClient, change: Change): Promise<boolean> {
    if (change.b === null || change.bs === null) return false;
    const res = await client.query<{ lost: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM sites WHERE is_local AND id = $4)
           OR EXISTS (SELECT 1 FROM repl_heads WHERE tbl = $1 AND row_key = $2 AND stamp = $3 AND site = $4)
           OR EXISTS (SELECT 1 FROM repl_absorbed WHERE tbl = $1 AND row_key = $2 AND stamp = $3 AND site = $4)
           OR EXISTS (SELECT 1 FROM conflicts WHERE tbl = $1 AND row_key = $2
                         AND versions @> jsonb_build_array(jsonb_build_object('stamp', $3::bigint, 'site', $4::text)))
           AS lost`,
      [change.t, change.k, change.b, change.bs],
    );
    return res.rows[0]?.lost ?? false;
  }
}
