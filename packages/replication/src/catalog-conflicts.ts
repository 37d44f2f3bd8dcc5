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
interface NameSpec {
  name: string;
  parent: string | null;
  trash: boolean;
  extension: boolean;
}

const NAMED: Record<string, NameSpec> = {
  data_objects: { name: 'name', parent: 'collection_id', trash: true, extension: true },
  collections: { name: 'name', parent: 'parent_id', trash: true, extension: false },
  users: { name: 'username', parent: null, trash: false, extension: false },
  project_groups: { name: 'name', parent: null, trash: false, extension: false },
};

export function isNegotiable(table: string): boolean {
  return !NOT_NEGOTIATED.has(table);
}

/**
 * Columns of files and folders that hold their POSIX attributes (docs/attributes.md), with the
 * record's bookkeeping (and a folder's path, which follows from its parent and name, compared
 * already). Two concurrent versions that differ in nothing else (a `chmod` at one site and a
 * `touch -d` at another, or both) are decided by the latest-wins rule alone, identically at every
 * site, without a conflict record: there is nothing for people to negotiate in a file time. Versions
 * that differ in anything else (content, name, place, trash) are an ordinary conflict, attributes
 * included.
 */
const ATTRIBUTE_ONLY: Record<string, ReadonlySet<string>> = {
  data_objects: new Set(['mode', 'mtime_s', 'mtime_nsec', 'updated_at', 'updated_by']),
  collections: new Set(['mode', 'mtime_s', 'mtime_nsec', 'updated_at', 'updated_by', 'path']),
};

/** Whether two versions of a file or folder differ in their POSIX attributes only (see ATTRIBUTE_ONLY). */
export function differsOnlyInAttributes(
  table: string,
  a: Record<string, unknown> | null,
  b: Record<string, unknown> | null,
): boolean {
  const ignored = ATTRIBUTE_ONLY[table];
  if (!ignored || !a || !b) return false;
  for (const key of new Set([...Object.keys(a), ...Object.keys(b)])) {
    if (ignored.has(key) || sameValue(a[key], b[key])) continue;
    return false;
  }
  return true;
}

/** Equal JSON values; times written in two zones (`+00:00`, `Z`) are the same time. */
function sameValue(x: unknown, y: unknown): boolean {
  if (canonical(x ?? null) === canonical(y ?? null)) return true;
  if (typeof x !== 'string' || typeof y !== 'string' || !/^\d{4}-\d{2}-\d{2}[T ]/.test(x)) return false;
  const tx = Date.parse(x);
  return Number.isFinite(tx) && tx === Date.parse(y);
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
  const decided = pickDecision(a, b);
  if (a.kind === 'same-name' && b.kind === 'same-name') {
    // A copy written knowing more contenders for the name is the later word on who keeps it and
    // which `name_N` this record takes: every site ends with the copy that knew them all.
    const pick = sameNameOrder(a, b) >= 0 ? a : b;
    return {
      ...decided,
      id: a.id,
      kind: 'same-name',
      tbl: a.tbl,
      row_key: a.row_key,
      versions: pick.versions,
      winner_site: pick.winner_site,
      winner_stamp: pick.winner_stamp,
      detail: pick.detail,
      collection_id: pick.collection_id,
      opened_at: iso(openedAt(pick.versions)),
      deadline: iso(openedAt(pick.versions) + 1000 * Math.max(span(a), span(b))),
    };
  }
  const w = provisionalWinner(a.tbl, versions);
  const winner = { site: w.site, stamp: w.stamp };
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

/** > 0 when copy `a` of a same-name record knew more than `b` (ties: the smaller text). */
function sameNameOrder(a: ConflictRow, b: ConflictRow): number {
  // Knowing more never lowers a record's `name_N`: more contenders ahead of it, or more names taken.
  const count = (r: ConflictRow): number => Number(r.detail.contenders ?? 2);
  const suffix = (r: ConflictRow): number => Number(r.detail.suffix ?? 0);
  if (count(a) !== count(b)) return count(a) - count(b);
  if (suffix(a) !== suffix(b)) return suffix(a) - suffix(b);
  const x = canonical([a.versions, a.detail, a.collection_id]);
  const y = canonical([b.versions, b.detail, b.collection_id]);
  return x === y ? 0 : x < y ? 1 : -1;
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

/** Whether `name` is `base` numbered (`data_2.csv` of `data.csv` or of `data_1.csv`). */
export function isNumberedFrom(name: string, base: string, keepExtension: boolean): boolean {
  const [stem, extension] = splitExtension(name, keepExtension);
  const m = /^(.+)_\d+$/.exec(stem);
  if (!m) return false;
  const [baseStem, baseExtension] = splitExtension(base, keepExtension);
  const baseRoot = /^(.+)_\d+$/.exec(baseStem)?.[1] ?? baseStem;
  return m[1] === baseRoot && extension === baseExtension;
}

/** What a name is unique within: the parent and the trash entry (as text), where the table has them. */
interface NameScope {
  parent: string | null;
  trash: string;
}

function nameScope(spec: NameSpec, row: Record<string, unknown>): NameScope {
  return {
    parent: spec.parent ? nullableText(row[spec.parent]) : null,
    trash: scalarText(row.trash_id ?? 0),
  };
}

function sameId(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return scalarText(a.id) === scalarText(b.id);
}

/** Creation order: created_at, then id (the same at every site). */
function creationOrder(a: Record<string, unknown>, b: Record<string, unknown>): number {
  return microsOf(a.created_at) - microsOf(b.created_at) || idOrder(a.id, b.id);
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

  /**
   * A change refused because its name is taken here by another record. Every record created under
   * the contested name (the contenders: the two clashing now and those earlier clashes on that name
   * renamed, as their open same-name records say) is ordered by creation (created_at, then id: the
   * same order at every site); the first keeps the name, the others take `name_1`, `name_2`, ... in
   * that order, skipping names other records hold. The assignment depends only on which contenders
   * a site has seen, so once every site has seen them all, every site gives each the same name,
   * whatever order the creations and renames arrived in.
   *
   * A site renames the records it created as changes of its own, which replicate; other records it
   * renames provisionally, until their creators' renames arrive. A creator's rename made before it
   * saw every contender clashes where more are known, and is corrected there the same way. Returns
   * false when the clash is not a name clash this rule handles.
   */
  async renameOnClash(client: pg.PoolClient, origin: string, change: Change, err: PgError): Promise<boolean> {
    const spec = NAMED[change.t];
    if (!spec || change.o === 'D') return false;
    const d = change.d;
    const name = d[spec.name];
    if (typeof name !== 'string') return false;
    const scope = nameScope(spec, d);
    const held = (
      await this.rowsInScope(client, change.t, spec, scope, `x.${quoteIdent(spec.name)} = $1`, [name])
    ).filter((row) => scalarText(row.id) !== change.k)[0];
    if (!held) return false;

    // What each of the two claims: the name it was created under (a record an earlier clash renamed
    // to `name_N` claims the name it lost), and which records contend for that name.
    const heldClaim = await this.claimOf(client, change.t, spec, scalarText(held.id), name);
    const incomingClaim = await this.claimOf(client, change.t, spec, change.k, name);
    // Two claims on one name: one contest. Otherwise the record holding its own name keeps it, and
    // the contest of the one renamed onto it is settled again with that name taken.
    const incomingContends = incomingClaim === heldClaim || heldClaim === name;
    const contested = incomingContends ? incomingClaim : heldClaim;
    const members = await this.contenders(client, change.t, spec, scope, contested, change.k);
    if (heldClaim === contested && !members.some((r) => sameId(r, held))) members.push(held);
    const group = (incomingContends ? [d, ...members] : members).sort(creationOrder);
    // The incoming record, when it does not contend, takes its name (not yet held here).
    const reserved = incomingContends ? [] : [name];
    const assigned = await this.assignNames(client, change.t, spec, scope, contested, group, reserved);
    const targets = new Map([...assigned].map(([id, t]) => [id, t.name]));
    if (!incomingContends) targets.set(change.k, name);
    const renamed = incomingContends ? group : [...group, d];

    await client.query('SAVEPOINT rename_clash');
    try {
      await this.applyNames(client, origin, change, spec, renamed, targets);
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
      [group.map((row) => scalarText(row.id))],
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
        [spec.name]: contested,
        ...(spec.parent ? { [spec.parent]: row[spec.parent] } : {}),
        created_at: row.created_at,
        created_by: row.created_by ?? null,
      },
    });
    const keeper = group[0] as Record<string, unknown>;
    const keeperVersion = versionOf(keeper);
    for (const loser of group.slice(1)) {
      const versions = sortVersions([keeperVersion, versionOf(loser)]);
      const openedMicros = openedAt(versions);
      await this.write(client, origin, {
        id: hashId('same-name', change.t, scalarText(loser.id), contested),
        kind: 'same-name',
        tbl: change.t,
        row_key: scalarText(loser.id),
        versions,
        winner_site: keeperVersion.site,
        winner_stamp: keeperVersion.stamp,
        detail: {
          name: contested,
          renamedTo: assigned.get(scalarText(loser.id))?.name,
          suffix: assigned.get(scalarText(loser.id))?.suffix,
          kept: scalarText(keeper.id),
          renamed: scalarText(loser.id),
          contenders: group.length,
        },
        collection_id: spec.parent ? nullableText(loser[spec.parent]) : null,
        opened_at: iso(openedMicros),
        deadline: iso(openedMicros + this.deadlineMs * 1000),
        ...UNDECIDED,
      });
    }
    return true;
  }

  /** Rows of `table` in one name scope (parent, trash) matching `condition`, locked. */
  private async rowsInScope(
    client: pg.PoolClient,
    table: string,
    spec: NameSpec,
    scope: NameScope,
    condition: string,
    params: unknown[],
  ): Promise<Record<string, unknown>[]> {
    const where = [condition];
    const all = [...params];
    if (spec.parent) {
      all.push(scope.parent);
      where.push(`x.${quoteIdent(spec.parent)}::text IS NOT DISTINCT FROM $${all.length}`);
    }
    if (spec.trash) {
      all.push(scope.trash);
      where.push(`x.trash_id::text = $${all.length}`);
    }
    const res = await client.query<{ row: Record<string, unknown> }>(
      `SELECT to_jsonb(x) AS row FROM ${quoteIdent(table)} x WHERE ${where.join(' AND ')} ORDER BY x.id FOR UPDATE`,
      all,
    );
    return res.rows.map((r) => r.row);
  }

  /**
   * The name a record claims: `name` itself, unless an earlier clash still open renamed the record
   * from another name to this `name_N` (then the name it lost).
   */
  private async claimOf(
    client: pg.PoolClient,
    table: string,
    spec: NameSpec,
    key: string,
    name: string,
  ): Promise<string> {
    const res = await client.query<{ name: string }>(
      `SELECT detail ->> 'name' AS name FROM conflicts
        WHERE kind = 'same-name' AND tbl = $1 AND status <> 'decided' AND detail ->> 'renamed' = $2
        ORDER BY id`,
      [table, key],
    );
    return res.rows.map((r) => r.name).find((n) => isNumberedFrom(name, n, spec.extension)) ?? name;
  }

  /**
   * The records held here that contend for `contested` (besides the incoming one): those open
   * same-name records on that name, still in the scope and still under that name or a
   * `name_N` of it (one a person renamed, or whose rename was decided, no longer contends).
   */
  private async contenders(
    client: pg.PoolClient,
    table: string,
    spec: NameSpec,
    scope: NameScope,
    contested: string,
    incomingKey: string,
  ): Promise<Record<string, unknown>[]> {
    const named = await client.query<{ key: string }>(
      `SELECT DISTINCT k AS key FROM conflicts c, LATERAL (VALUES (c.detail ->> 'kept'), (c.detail ->> 'renamed')) v(k)
        WHERE c.kind = 'same-name' AND c.tbl = $1 AND c.status <> 'decided' AND c.detail ->> 'name' = $2`,
      [table, contested],
    );
    const keys = named.rows.map((r) => r.key).filter((k) => k !== incomingKey);
    if (keys.length === 0) return [];
    const rows = await this.rowsInScope(client, table, spec, scope, 'x.id::text = ANY($1::text[])', [keys]);
    return rows.filter((row) => {
      const current = row[spec.name];
      return (
        typeof current === 'string' &&
        (current === contested || isNumberedFrom(current, contested, spec.extension))
      );
    });
  }

  /** The name each contender ends with: the first keeps `contested`, the others the free `name_N` in order. */
  private async assignNames(
    client: pg.PoolClient,
    table: string,
    spec: NameSpec,
    scope: NameScope,
    contested: string,
    group: Record<string, unknown>[],
    reserved: string[],
  ): Promise<Map<string, { name: string; suffix: number }>> {
    const ids = group.map((row) => scalarText(row.id));
    const targets = new Map([[ids[0] as string, { name: contested, suffix: 0 }]]);
    const used = new Set([contested, ...reserved]);
    let n = 0;
    for (const id of ids.slice(1)) {
      for (;;) {
        const candidate = numberedName(contested, ++n, spec.extension);
        if (used.has(candidate)) continue;
        const taken = await this.rowsInScope(
          client,
          table,
          spec,
          scope,
          `x.${quoteIdent(spec.name)} = $1 AND NOT (x.id::text = ANY($2::text[]))`,
          [candidate, ids],
        );
        if (taken.length > 0) continue;
        targets.set(id, { name: candidate, suffix: n });
        used.add(candidate);
        break;
      }
    }
    return targets;
  }

  /**
   * Gives every contender its name: the incoming change is applied under its name, the records held
   * here renamed (as this site's own change when it created them). Each rename waits until its name
   * is free; contenders swapping names go through a name of their own first.
   */
  private async applyNames(
    client: pg.PoolClient,
    origin: string,
    change: Change,
    spec: NameSpec,
    group: Record<string, unknown>[],
    targets: Map<string, string>,
  ): Promise<void> {
    const incoming = await client.query<{ name: string }>(
      `SELECT ${quoteIdent(spec.name)} AS name FROM ${quoteIdent(change.t)} WHERE id = $1::bigint`,
      [change.k],
    );
    const current = new Map<string, string | null>(
      group.map((row) => {
        const id = scalarText(row.id);
        return [id, id === change.k ? (incoming.rows[0]?.name ?? null) : (row[spec.name] as string)];
      }),
    );
    const pending = group
      .map((row) => scalarText(row.id))
      .filter((id) => id === change.k || current.get(id) !== targets.get(id));
    const holds = (id: string, name: string): boolean =>
      [...current].some(([other, held]) => other !== id && held === name);
    // Each record moves at most twice (aside, then to its name): more is a bug, not a wait.
    for (let steps = 0; pending.length > 0; steps++) {
      if (steps > 2 * group.length + 2) throw new Error(`no free name for ${change.t} ${change.k}`);
      const i = pending.findIndex((id) => !holds(id, targets.get(id) as string));
      let name: string;
      if (i < 0) {
        // A cycle (each name held by another contender): one held record steps aside first.
        const id = pending.find((other) => other !== change.k);
        if (id === undefined) throw new Error(`no free name for ${change.t} ${change.k}`);
        name = `${current.get(id) ?? ''}~${id}`;
        await this.renameHeld(client, origin, change.t, spec, id, name);
        current.set(id, name);
        continue;
      }
      const id = pending.splice(i, 1)[0] as string;
      name = targets.get(id) as string;
      if (id === change.k) {
        const renamed = { ...change.d, [spec.name]: name };
        if (change.t === 'collections') renamed.path = await this.pathFor(client, change.d.parent_id, name);
        await client.query('SELECT repl_apply_forced($1, $2)', [
          origin,
          JSON.stringify({ ...change, d: renamed }),
        ]);
      } else {
        await this.renameHeld(client, origin, change.t, spec, id, name);
      }
      current.set(id, name);
    }
  }

  /** Renames a record held here: this site's own change when it created the record, else provisional. */
  private async renameHeld(
    client: pg.PoolClient,
    origin: string,
    table: string,
    spec: NameSpec,
    id: string,
    name: string,
  ): Promise<void> {
    const createdHere = await client.query(
      'SELECT 1 FROM sites WHERE is_local AND $1::bigint BETWEEN id_range_start AND id_range_end',
      [id],
    );
    // Set either way: the failed statement that brought us here may have rolled the setting back.
    await client.query(`SELECT set_config('tributary.origin', $1, true)`, [
      createdHere.rowCount ? '' : origin,
    ]);
    try {
      if (table === 'collections') {
        // Name and path in one change (a peer applying the name alone would meet the old path).
        const row = await client.query<{ path: string; parent_id: string | null }>(
          'SELECT path, parent_id::text FROM collections WHERE id = $1::bigint',
          [id],
        );
        const oldPath = row.rows[0]?.path as string;
        const newPath = await this.pathFor(client, row.rows[0]?.parent_id, name);
        await client.query(
          `UPDATE collections SET path = $2 || substr(path, length($1) + 1)
            WHERE left(path, length($1) + 1) = $1 || '/'`,
          [oldPath, newPath],
        );
        await client.query('UPDATE collections SET name = $1, path = $2 WHERE id = $3::bigint', [
          name,
          newPath,
          id,
        ]);
      } else {
        await client.query(
          `UPDATE ${quoteIdent(table)} SET ${quoteIdent(spec.name)} = $1 WHERE id = $2::bigint`,
          [name, id],
        );
      }
    } finally {
      await client.query(`SELECT set_config('tributary.origin', $1, true)`, [origin]);
    }
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
   * Whether the version a change was based on was held here and lost a conflict (it is a head, was
   * absorbed, or is kept in a conflict record about the record).
   */
  async lostHere(client: pg.PoolClient, change: Change): Promise<boolean> {
    if (change.b === null || change.bs === null) return false;
    const res = await client.query<{ lost: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM repl_heads WHERE tbl = $1 AND row_key = $2 AND stamp = $3 AND site = $4)
           OR EXISTS (SELECT 1 FROM repl_absorbed WHERE tbl = $1 AND row_key = $2 AND stamp = $3 AND site = $4)
           OR EXISTS (SELECT 1 FROM conflicts WHERE tbl = $1 AND row_key = $2
                         AND versions @> jsonb_build_array(jsonb_build_object('stamp', $3::bigint, 'site', $4::text)))
           AS lost`,
      [change.t, change.k, change.b, change.bs],
    );
    return res.rows[0]?.lost ?? false;
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
    if (next.kind !== 'same-name') await this.consolidate(client, origin, next.tbl, next.row_key);
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
      await client.query(`SELECT set_config('tributary.origin', '', true)`);
      try {
        await client.query('DELETE FROM conflicts WHERE id = ANY($1::text[])', [rest.map((r) => r.id)]);
      } finally {
        await client.query(`SELECT set_config('tributary.origin', $1, true)`, [origin]);
      }
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
