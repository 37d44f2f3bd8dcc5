import { createHash } from 'node:crypto';
import type { Change } from './types';

/**
 * Why a change could not be applied as it came:
 * - `update`: the row was changed here concurrently (the change was based on another version);
 * - `insert-exists`: a row with this key already exists here;
 * - `update-deleted`: the change updates a row deleted here;
 * - `delete-updated`: the change deletes a row changed here since;
 * - `orphan`: the change's origin changed a row that this site refused earlier.
 */
export type ConflictKind = 'update' | 'insert-exists' | 'update-deleted' | 'delete-updated' | 'orphan';

/** The version a row has here when a conflicting change arrives. */
export interface HeldVersion {
  stamp: number | null;
  site: string | null;
  deleted: boolean;
  row: Record<string, unknown> | null;
}

export interface DetectedConflict {
  kind: ConflictKind;
  table: string;
  key: string;
  incoming: { site: string; change: Change };
  held: HeldVersion;
}

export interface Resolution {
  /** Which version stands (provisionally: people may decide otherwise later). */
  winner: 'incoming' | 'held';
  /** Why, in words an operator reads. */
  reason: string;
}

/**
 * Decides a conflict. It must decide identically at every site from the two versions alone (never
 * from which one arrived first), so that all catalogs converge.
 */
export interface ConflictResolver {
  resolve(conflict: DetectedConflict): Resolution;
}

/** Orders two versions: by stamp, then by site id as the tie-break. Positive when `a` is later. */
export function compareVersions(
  a: { stamp: number | null; site: string | null },
  b: { stamp: number | null; site: string | null },
): number {
  const sa = a.stamp ?? -1;
  const sb = b.stamp ?? -1;
  if (sa !== sb) return sa > sb ? 1 : -1;
  const ia = a.site ?? '';
  const ib = b.site ?? '';
  return ia === ib ? 0 : ia > ib ? 1 : -1;
}

/** The seed's provisional rule: the latest timestamp wins; equal stamps go to the greater site id. */
export class LatestTimestampWins implements ConflictResolver {
  resolve(conflict: DetectedConflict): Resolution {
    const incoming = { stamp: conflict.incoming.change.s, site: conflict.incoming.site };
    const later = compareVersions(incoming, conflict.held) > 0;
    return later
      ? { winner: 'incoming', reason: 'latest timestamp wins: the incoming version is later' }
      : { winner: 'held', reason: 'latest timestamp wins: the version held here is later' };
  }
}

/**
 * A conflict's id: the same at every site that detects it, whichever version it held, so records
 * of one conflict can be matched across sites.
 */
export function conflictId(
  table: string,
  key: string,
  a: { stamp: number | null; site: string | null },
  b: { stamp: number | null; site: string | null },
): string {
  const [first, second] = compareVersions(a, b) <= 0 ? [a, b] : [b, a];
  return createHash('sha256')
    .update(`${table}\n${key}\n${first.stamp}@${first.site}\n${second.stamp}@${second.site}`)
    .digest('hex')
    .slice(0, 32);
}
