import { createHash } from 'node:crypto';
import { compareVersions } from '@tributary/replication';
import { isTrashed } from './tables';
import { canonical, idOrder, nullableText, sameValue, scalarText } from './values';

/**
 * What a conflict record is (a row of the replicated `conflicts` table, docs/conflicts.md) and how
 * two copies of one merge: pure functions, the same at every site, so every site ends with the same
 * record whatever order the copies arrive in.
 */

/** Kinds of negotiable conflict. */
export type NegotiableKind = 'update' | 'delete' | 'same-name';

/** The decision fields of a conflict nobody has decided yet. */
export const UNDECIDED = {
  status: 'open',
  decision: null,
  decided_value: null,
  decided_by: null,
  decided_by_name: null,
  decided_policy: null,
  decided_at: null,
  decided_at_site: null,
} as const;

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

export function hashId(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\n')).digest('hex').slice(0, 32);
}

export function sortVersions(versions: ConflictVersion[]): ConflictVersion[] {
  return [...versions].sort((a, b) => compareVersions(a, b) || (a.key ?? '').localeCompare(b.key ?? ''));
}

export function versionId(v: ConflictVersion): string {
  return `${v.stamp}@${v.site}#${v.key ?? ''}`;
}

export function iso(micros: number): string {
  return new Date(Math.floor(micros / 1000)).toISOString();
}

/** A conflict opens when a second version appears: the stamp of the second-earliest one. */
export function openedAt(versions: readonly ConflictVersion[]): number {
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

/** A record read back from PostgreSQL, in the shape the merge compares (timestamps as ISO text). */
export function normalise(row: ConflictRow): ConflictRow {
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

export function byOf(row: Record<string, unknown> | null | undefined): string | null {
  const by = row?.updated_by ?? row?.created_by;
  return by === null || by === undefined ? null : scalarText(by);
}

/** The collection a record belongs to, for permissions and policies. */
export function collectionOf(table: string, row: Record<string, unknown> | null): string | null {
  if (!row) return null;
  if (table === 'data_objects') return nullableText(row.collection_id);
  if (table === 'collections') return nullableText(row.id);
  if (table === 'permissions') return nullableText(row.collection_id);
  return nullableText(row.collection_id ?? null);
}
