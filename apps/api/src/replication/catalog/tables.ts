import type { SnapshotTables } from '@tributary/replication';
import { scalarText } from './values';

/**
 * What the catalog states about its replicated tables (besides `repl_tables` in the migrations):
 * which rows go to the trash, which hold names that must stay unique, which conflicts people
 * negotiate, and the order a snapshot loads them in.
 */

/** Tables whose rows move to the trash (`trash_id` ≠ 0) instead of being deleted. */
export const TRASHABLE: ReadonlySet<string> = new Set(['data_objects', 'collections']);

/** Tables where two rows may not share a name, the column, and what the name is unique within. */
export interface NameSpec {
  name: string;
  parent: string | null;
  trash: boolean;
  extension: boolean;
}

export const NAMED: Readonly<Record<string, NameSpec>> = {
  data_objects: { name: 'name', parent: 'collection_id', trash: true, extension: true },
  collections: { name: 'name', parent: 'parent_id', trash: true, extension: false },
  users: { name: 'username', parent: null, trash: false, extension: false },
  project_groups: { name: 'name', parent: null, trash: false, extension: false },
};

/** The replicated table of conflict records: every site writes its copy, and copies merge. */
export const CONFLICTS_TABLE = 'conflicts';

/**
 * Tables whose conflicts are bookkeeping rather than something people decide (they stay in the
 * engine's log, `repl_conflicts`): the federation's own rows, replicas and erasure shards, trash entries, and the
 * conflict records themselves (their copies merge).
 */
const NOT_NEGOTIATED = new Set([
  'sites',
  'storage_resources',
  'replicas',
  'erasure_shards',
  'trash_entries',
  CONFLICTS_TABLE,
]);

export function isNegotiable(table: string): boolean {
  return !NOT_NEGOTIATED.has(table);
}

/** Whether a row (as JSON) is in the trash. */
export function isTrashed(table: string, row: Record<string, unknown> | null | undefined): boolean {
  return TRASHABLE.has(table) && trashEntryOf(row) !== null;
}

/** The trash entry a file's or folder's row (as JSON) is in, as text; null when it is live. */
export function trashEntryOf(row: Record<string, unknown> | null | undefined): string | null {
  const t = row?.trash_id;
  return t === undefined || t === null || scalarText(t) === '0' ? null : scalarText(t);
}

/** A snapshot loads these first, in this order, so every reference points at a row already there. */
export const SNAPSHOT_TABLES: SnapshotTables = {
  loadOrder: [
    'sites',
    'storage_resources',
    'project_groups',
    'users',
    'memberships',
    'collections',
    'data_objects',
    'replicas',
    'permissions',
    'api_tokens',
    'trash_entries',
  ],
  // A folder's parent comes before it: a shorter path first.
  rowOrder: { collections: 'length(x.path), x.id' },
};
