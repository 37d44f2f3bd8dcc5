import { createHash } from 'node:crypto';
import type pg from 'pg';
import {
  compareVersions,
  LatestTimestampWins,
  type ConflictResolver,
  type DetectedConflict,
  type Resolution,
} from './conflict-resolver';
import { asPgError, type PgError } from './sql';
import type { Change } from './types';

/**
 * The catalog's conflict rules on top of the generic engine (docs/conflicts.md):
 * - an update that meets a move to the trash wins over it (it rescues the record from the trash);
 * - two records created with one name: the later one is renamed `name_1` (`data_1.csv`);
 * - every conflict people may negotiate is written to the replicated `conflicts` table under an id
 *   every site computes alike, and copies of one conflict merge.
 */

/** Kinds of negotiable conflict. */
export type NegotiableKind = 'update' | 'delete' | 'same-name';

/** The decision fields of a conflict nobody has decided yet. */
const UNDECIDED = {
  status: 'open',
  decision: null,
  decided_value: null,
  decided_by: null,
  decided_by_name: null,
  decided_policy: null,
  decided_at: null,
  decided_at_site: null,
} as const;

/** Tables whose rows move to the trash (`trash_id` ≠ 0) instead of being deleted. */
const TRASHABLE = new Set(['data_objects', 'collections']);

/**
 * Tables whose conflicts are bookkeeping rather than something people decide (they stay in the
 * engine's log, `repl_conflicts`): the federation's own rows, replicas, trash entries, and the
 * conflict records themselves (their copies merge).
 */
const NOT_NEGOTIATED = new Set(['sites', 'storage_resources', 'replicas', 'trash_entries', 'conflicts']);

/** Tables where two rows may not share a name, the column, and what the name is unique within. */
const NAMED: Record<string, { name: string; parent: string | null; trash: boolean; extension: boolean }> = {
  data_objects: { name: 'name', parent: 'collection_id', trash: true, extension: true },
  collections: { name: 'name', parent: 'parent_id', trash: true, extension: false },
  users: { name: 'username', parent: null, trash: false, extension: false },
  project_groups: { name: 'name', parent: null, trash: false, extension: false },
};

export function isNegotiable(table: string): boolean {
  return !NOT_NEGOTIATED.has(table);
}

/** Whether a row (as JSON) is in the trash. */
export function isTrashed(table: string, row: Record<string, unknown> | null | undefined): boolean {
  if (!TRASHABLE.has(table) || !row) return false;
  const t = row.trash_id;
  return t !== undefined && t !== null && scalarText(t) !== '0';
}

/** One version of a record in a conflict. */
export interface ConflictVersion {
  site: string;
  stamp: number;
  /** Deleted outright (not moved to the trash). */
  deleted: boolean;
  /** The user who made it (`updated_by` of the row), when known. */
  by: string | null;
  /** For `same-name`: which record this is. */
  key?: string;
  data: Record<string, unknown> | null;
  /** The version this one was based on (`stamp@site`), when known: versions no other is based on are heads. */
  base?: string | null;
}

/** A row of `conflicts` (as JSON: timestamps as ISO text). */
export interface ConflictRow {
  id: string;
  kind: NegotiableKind;
  tbl: string;
  row_key: string;
  versions: ConflictVersion[];
  winner_site: string;
  winner_stamp: number;
  detail: Record<string, unknown>;
  collection_id: string | null;
  opened_at: string;
  deadline: string;
  status: 'open' | 'decided';
  decision: string | null;
  decided_value: unknown;
  decided_by: string | null;
  decided_by_name: string | null;
  decided_policy: string | null;
  decided_at: string | null;
  decided_at_site: string | null;
}

/**
 * The provisional winner among concurrent versions of one record: the latest (ties to the greater
 * site id), except that a live version wins over one that moved the record to the trash.
 */
export function provisionalWinner(table: string, all: readonly ConflictVersion[]): ConflictVersion {
  // A version another one was based on is superseded: only heads compete.
  const bases = new Set(all.map((v) => v.base).filter((b): b is string => !!b));
  const heads = all.filter((v) => !bases.has(`${v.stamp}@${v.site}`));
  const versions = heads.length > 0 ? heads : all;
  const live = versions.filter((v) => !v.deleted && !isTrashed(table, v.data));
  const trashed = versions.filter((v) => !v.deleted && isTrashed(table, v.data));
  const pool = live.length > 0 && trashed.length > 0 ? live : versions;
  let best = pool[0] as ConflictVersion;
  for (const v of pool) if (compareVersions(v, best) > 0) best = v;
  return best;
}

/** The seed's rule plus the trash rule: an update rescues what another site moved to the trash. */
export class CatalogResolver implements ConflictResolver {
  private readonly latest = new LatestTimestampWins();

  resolve(conflict: DetectedConflict): Resolution {
    const { table, incoming, held } = conflict;
    const change = incoming.change;
    if (TRASHABLE.has(table) && !held.deleted && change.o !== 'D' && held.row) {
      const incomingTrashed = isTrashed(table, change.d);
      const heldTrashed = isTrashed(table, held.row);
      if (incomingTrashed !== heldTrashed) {
        return incomingTrashed
          ? { winner: 'held', reason: 'an update made here rescues it from the trash' }
          : { winner: 'incoming', reason: 'the incoming update rescues it from the trash' };
      }
    }
    return this.latest.resolve(conflict);
  }
}

function hashId(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32);
}

function sortVersions(versions: ConflictVersion[]): ConflictVersion[] {
  return [...versions].sort((a, b) => compareVersions(a, b) || (a.key ?? '').localeCompare(b.key ?? ''));
}

function versionId(v: ConflictVersion): string {
  return `${v.stamp}@${v.site}#${v.key ?? ''}`;
}

function iso(micros: number): string {
  return new Date(Math.floor(micros / 1000)).toISOString();
}

/** A conflict opens when a second version appears: the stamp of the second-earliest one. */
function openedAt(versions: readonly ConflictVersion[]): number {
  const stamps = versions.map((v) => v.stamp).sort((x, y) => x - y);
  return stamps[Math.min(1, stamps.length - 1)] ?? 0;
}

/** How long a record gives people to decide (the deadline setting of the site that wrote it), in ms. */
function span(row: ConflictRow): number {
  return Date.parse(row.deadline) - Date.parse(row.opened_at);
}

/**
 * Merges two copies of one conflict (each site writes what it detected): the union of their
 * versions, the earliest opening and the latest deadline, and the decision if one was taken (the
 * later one if both were). Commutative, so every site ends with the same record.
 */
export function mergeConflictRows(a: ConflictRow, b: ConflictRow): ConflictRow {
  // Two sites may describe one version slightly differently (text forms): keep the same one everywhere.
  const byId = new Map<string, ConflictVersion>();
  for (const v of [...a.versions, ...b.versions]) {
    const seen = byId.get(versionId(v));
    if (!seen || canonical(v) < canonical(seen)) byId.set(versionId(v), v);
  }
  const versions = sortVersions([...byId.values()]);
  let winner = { site: a.winner_site, stamp: a.winner_stamp };
  if (a.kind === 'same-name') {
    if (compareVersions({ stamp: b.winner_stamp, site: b.winner_site }, winner) > 0)
      winner = { site: b.winner_site, stamp: b.winner_stamp };
  } else {
    const w = provisionalWinner(a.tbl, versions);
    winner = { site: w.site, stamp: w.stamp };
  }
  const decided = pickDecision(a, b);
  const detail = canonical(a.detail) <= canonical(b.detail) ? a.detail : b.detail;
  return {
    ...decided,
    id: a.id,
    // One site may have seen only the updates, another the delete too: the delete makes it a delete conflict.
    kind: a.kind === b.kind ? a.kind : a.kind === 'delete' || b.kind === 'delete' ? 'delete' : a.kind,
    tbl: a.tbl,
    row_key: a.row_key,
    versions,
    winner_site: winner.site,
    winner_stamp: winner.stamp,
    detail,
    // Sites may have seen the record in different collections: the same choice everywhere.
    collection_id:
      a.collection_id === null || b.collection_id === null
        ? (a.collection_id ?? b.collection_id)
        : idOrder(a.collection_id, b.collection_id) <= 0
          ? a.collection_id
          : b.collection_id,
    opened_at: iso(openedAt(versions)),
    deadline: iso(openedAt(versions) + 1000 * Math.max(span(a), span(b))),
  };
}

function pickDecision(a: ConflictRow, b: ConflictRow): ConflictRow {
  if (a.status !== 'decided') return b.status === 'decided' ? b : a;
  if (b.status !== 'decided') return a;
  const ta = Date.parse(a.decided_at ?? '') || 0;
  const tb = Date.parse(b.decided_at ?? '') || 0;
  if (ta !== tb) return ta > tb ? a : b;
  return (a.decided_at_site ?? '') >= (b.decided_at_site ?? '') ? a : b;
}

function splitExtension(name: string, keepExtension: boolean): [string, string] {
  if (!keepExtension) return [name, ''];
  const compound = /\.tar\.(gz|bz2|xz|zst)$/i.exec(name);
  const dot = compound ? compound.index : name.lastIndexOf('.');
  return dot <= 0 ? [name, ''] : [name.slice(0, dot), name.slice(dot)];
}

/**
 * `data.csv` → `data_1.csv`; `run.tar.gz` → `run_1.tar.gz`; `notes` → `notes_1`. A name that is
 * already numbered counts on from its stem (`data_1.csv` → `data_2.csv`, not `data_1_1.csv`), so a
 * record renamed twice while changes cross ends with the same name at every site.
 */
export function numberedName(name: string, n: number, keepExtension: boolean): string {
  const [stem, extension] = splitExtension(name, keepExtension);
  const base = /^(.+)_\d+$/.exec(stem)?.[1] ?? stem;
  return `${base}_${n}${extension}`;
}

function quoteIdent(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}

function microsOf(timestamp: unknown): number {
  const ms = typeof timestamp === 'string' ? Date.parse(timestamp) : NaN;
  return Number.isFinite(ms) ? ms * 1000 : 0;
}

function idOrder(a: unknown, b: unknown): number {
  const x = BigInt(scalarText(a));
  const y = BigInt(scalarText(b));
  return x === y ? 0 : x > y ? 1 : -1;
}

/**
 * Writes and merges conflict records, renames on a name clash, and rescues from the trash, inside
 * the injector's transaction. Records are written as local changes (captured and replicated) even
 * though the injector works on behalf of a peer.
 */
export class ConflictRecords {
  constructor(private readonly deadlineMs: number) {}

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

  /**
   * A change refused because its name is taken here by another record. The later-created of the two
   * (created_at, then id: the same order at every site) gets the next free `name_N`; the other keeps
   * the name. The site that created the renamed record makes the rename a change of its own, which
   * replicates; elsewhere it is applied provisionally until that change arrives. Returns false when
   * the clash is not a name clash this rule handles.
   */
  async renameOnClash(client: pg.PoolClient, origin: string, change: Change, err: PgError): Promise<boolean> {
    const spec = NAMED[change.t];
    if (!spec || change.o === 'D') return false;
    const d = change.d;
    const name = d[spec.name];
    if (typeof name !== 'string') return false;
    const where = [`x.${quoteIdent(spec.name)} = $1`, `x.id::text <> $2`];
    const params: unknown[] = [name, change.k];
    if (spec.parent) {
      params.push(
        d[spec.parent] === null || d[spec.parent] === undefined ? null : scalarText(d[spec.parent]),
      );
      where.push(`x.${quoteIdent(spec.parent)}::text IS NOT DISTINCT FROM $${params.length}`);
    }
    if (spec.trash) {
      params.push(scalarText(d.trash_id ?? 0));
      where.push(`x.trash_id::text = $${params.length}`);
    }
    const clash = await client.query<{ row: Record<string, unknown> }>(
      `SELECT to_jsonb(x) AS row FROM ${quoteIdent(change.t)} x WHERE ${where.join(' AND ')} FOR UPDATE`,
      params,
    );
    const held = clash.rows[0]?.row;
    if (!held) return false;
    const incomingLater =
      microsOf(d.created_at) !== microsOf(held.created_at)
        ? microsOf(d.created_at) > microsOf(held.created_at)
        : idOrder(d.id, held.id) > 0;
    const loser = incomingLater ? d : held;
    const keeper = incomingLater ? held : d;
    const newName = await this.freeName(client, change.t, loser, name);

    await client.query('SAVEPOINT rename_clash');
    try {
      if (incomingLater) {
        const renamed = { ...d, [spec.name]: newName };
        if (change.t === 'collections') renamed.path = await this.pathFor(client, d.parent_id, newName);
        await client.query('SELECT repl_apply_forced($1, $2)', [
          origin,
          JSON.stringify({ ...change, d: renamed }),
        ]);
      } else {
        const createdHere = await client.query(
          'SELECT 1 FROM sites WHERE is_local AND $1::bigint BETWEEN id_range_start AND id_range_end',
          [scalarText(held.id)],
        );
        // The creating site's rename is the one that replicates; elsewhere it is provisional.
        if (createdHere.rowCount) await client.query(`SELECT set_config('tributary.origin', '', true)`);
        if (change.t === 'collections') {
          // Name and path in one change (a peer applying the name alone would meet the old path).
          const oldPath = scalarText(held.path);
          const newPath = await this.pathFor(client, held.parent_id, newName);
          await client.query(
            `UPDATE collections SET path = $2 || substr(path, length($1) + 1)
              WHERE left(path, length($1) + 1) = $1 || '/'`,
            [oldPath, newPath],
          );
          await client.query('UPDATE collections SET name = $1, path = $2 WHERE id = $3::bigint', [
            newName,
            newPath,
            scalarText(held.id),
          ]);
        } else {
          await client.query(
            `UPDATE ${quoteIdent(change.t)} SET ${quoteIdent(spec.name)} = $1 WHERE id = $2::bigint`,
            [newName, scalarText(held.id)],
          );
        }
        await client.query(`SELECT set_config('tributary.origin', $1, true)`, [origin]);
        await client.query('SELECT repl_apply_forced($1, $2)', [origin, JSON.stringify(change)]);
      }
      await client.query('RELEASE SAVEPOINT rename_clash');
    } catch (e) {
      await client.query('ROLLBACK TO SAVEPOINT rename_clash');
      await client.query(`SELECT set_config('tributary.origin', $1, true)`, [origin]);
      throw Object.assign(new Error(`renaming on a name clash failed: ${asPgError(e).message}`), {
        cause: e,
        original: err,
      });
    }

    const sites = await client.query<{ id: string; key: string }>(
      `SELECT s.id, k.key FROM unnest($1::bigint[]) AS k(key)
         JOIN sites s ON k.key BETWEEN s.id_range_start AND s.id_range_end`,
      [[scalarText(keeper.id), scalarText(loser.id)]],
    );
    const siteOf = (row: Record<string, unknown>): string =>
      sites.rows.find((r) => scalarText(r.key) === scalarText(row.id))?.id ?? '?';
    const versionOf = (row: Record<string, unknown>): ConflictVersion => ({
      site: siteOf(row),
      stamp: microsOf(row.created_at),
      deleted: false,
      by: row.created_by === null || row.created_by === undefined ? null : scalarText(row.created_by),
      key: scalarText(row.id),
      // Only what every site holds alike: the record as it was created under the contested name.
      data: {
        id: row.id,
        [spec.name]: name,
        ...(spec.parent ? { [spec.parent]: row[spec.parent] } : {}),
        created_at: row.created_at,
        created_by: row.created_by ?? null,
      },
    });
    const versions = sortVersions([versionOf(keeper), versionOf(loser)]);
    const keeperVersion = versionOf(keeper);
    const openedMicros = openedAt(versions);
    await this.write(client, origin, {
      id: hashId('same-name', change.t, scalarText(loser.id), name),
      kind: 'same-name',
      tbl: change.t,
      row_key: scalarText(loser.id),
      versions,
      winner_site: keeperVersion.site,
      winner_stamp: keeperVersion.stamp,
      detail: { name, renamedTo: newName, kept: scalarText(keeper.id), renamed: scalarText(loser.id) },
      collection_id: spec.parent ? nullableText(loser[spec.parent]) : null,
      opened_at: iso(openedMicros),
      deadline: iso(openedMicros + this.deadlineMs * 1000),
      ...UNDECIDED,
    });
    return true;
  }

  /**
   * Restores what a move to the trash took, when an update to part of it won over that move: the
   * whole trashed collection (or object) comes back and its trash entry goes. Every site does the
   * same once it holds both changes, so this is not captured. A name taken since leaves it in the
   * trash (the conflict record still shows both versions).
   */
  async rescue(client: pg.PoolClient, origin: string, trashId: string): Promise<void> {
    await client.query('SAVEPOINT rescue');
    try {
      await client.query(`SELECT set_config('tributary.origin', $1, true)`, [origin]);
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
      await this.noteConcurrent(
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
    await client.query(`SELECT set_config('tributary.origin', $1, true)`, [origin]);
    return rescued;
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

  /** Inserts a record detected here, or merges it into the copy held here; captured either way. */
  private async write(client: pg.PoolClient, origin: string, row: ConflictRow): Promise<void> {
    const held = await client.query<{ row: ConflictRow }>(
      'SELECT to_jsonb(c) AS row FROM conflicts c WHERE id = $1 FOR UPDATE',
      [row.id],
    );
    const current = held.rows[0]?.row;
    const next = current ? mergeConflictRows(normalise(current), row) : row;
    if (current && canonical(normalise(current)) === canonical(normalise(next))) return;
    await this.upsert(client, origin, next);
  }

  /** Writes a conflict record as a change of this site (captured, so it replicates). */
  private async upsert(client: pg.PoolClient, origin: string, row: ConflictRow): Promise<void> {
    await client.query(`SELECT set_config('tributary.origin', '', true)`);
    try {
      await client.query(
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
      );
    } finally {
      await client.query(`SELECT set_config('tributary.origin', $1, true)`, [origin]);
    }
  }

  private async freeName(
    client: pg.PoolClient,
    table: string,
    loser: Record<string, unknown>,
    name: string,
  ): Promise<string> {
    const spec = NAMED[table] as (typeof NAMED)[string];
    for (let n = 1; ; n++) {
      const candidate = numberedName(name, n, spec.extension);
      const where = [`${quoteIdent(spec.name)} = $1`];
      const params: unknown[] = [candidate];
      if (spec.parent) {
        params.push(nullableText(loser[spec.parent]));
        where.push(`${quoteIdent(spec.parent)}::text IS NOT DISTINCT FROM $${params.length}`);
      }
      if (spec.trash) {
        params.push(scalarText(loser.trash_id ?? 0));
        where.push(`trash_id::text = $${params.length}`);
      }
      const taken = await client.query(
        `SELECT 1 FROM ${quoteIdent(table)} WHERE ${where.join(' AND ')} LIMIT 1`,
        params,
      );
      if (taken.rowCount === 0) return candidate;
    }
  }

  private async pathFor(client: pg.PoolClient, parentId: unknown, name: string): Promise<string> {
    const parent = await client.query<{ path: string }>(
      'SELECT path FROM collections WHERE id = $1::bigint',
      [String(parentId)],
    );
    const p = parent.rows[0]?.path ?? '/';
    return p === '/' ? `/${name}` : `${p}/${name}`;
  }
}

/** A scalar JSON value (an id, a number) as text; anything else as its JSON. */
export function scalarText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'bigint' || typeof value === 'boolean')
    return String(value);
  return JSON.stringify(value) ?? '';
}

/** JSON text with object keys sorted: equal values give equal text whatever their key order. */
export function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

function nullableText(value: unknown): string | null {
  return value === null || value === undefined ? null : scalarText(value);
}

function byOf(row: Record<string, unknown> | null | undefined): string | null {
  const by = row?.updated_by ?? row?.created_by;
  return by === null || by === undefined ? null : scalarText(by);
}

/** The collection a record belongs to, for permissions and policies. */
function collectionOf(table: string, row: Record<string, unknown> | null): string | null {
  if (!row) return null;
  if (table === 'data_objects') return nullableText(row.collection_id);
  if (table === 'collections') return nullableText(row.id);
  if (table === 'permissions') return nullableText(row.collection_id);
  return nullableText(row.collection_id ?? null);
}

/** A record read back from PostgreSQL, in the shape the merge compares (timestamps as ISO text). */
function normalise(row: ConflictRow): ConflictRow {
  const ts = (v: string | null): string | null => (v === null ? null : new Date(v).toISOString());
  return {
    ...row,
    winner_stamp: Number(row.winner_stamp),
    collection_id: nullableText(row.collection_id),
    decided_by: nullableText(row.decided_by),
    opened_at: ts(row.opened_at) as string,
    deadline: ts(row.deadline) as string,
    decided_at: ts(row.decided_at),
  };
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
