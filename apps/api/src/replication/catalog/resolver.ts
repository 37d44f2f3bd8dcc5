import {
  LatestTimestampWins,
  type ConflictResolver,
  type DetectedConflict,
  type Resolution,
} from '@tributary/replication';
import { isTrashed, TRASHABLE } from './tables';

/**
 * Tables whose rows describe something physical at one site, so that removing a row means the thing
 * is gone: a copy row is deleted only by its own site once the bytes are gone (eviction, fewer copies,
 * a failed fill) or with its object (a purge). Another site's update of such a row (marking it stale
 * when the bytes changed) must not bring it back: a site would count a copy that is not there, and
 * the site's next copy of the object (a new row, same object, site and resource) would clash with it.
 */
const REMOVAL_WINS: ReadonlySet<string> = new Set(['replicas', 'erasure_shards']);

/**
 * The seed's rule plus two: an update rescues what another site moved to the trash, and a removed
 * copy row stays removed.
 */
export class CatalogResolver implements ConflictResolver {
  private readonly latest = new LatestTimestampWins();

  resolve(conflict: DetectedConflict): Resolution {
    const { table, incoming, held } = conflict;
    const change = incoming.change;
    if (REMOVAL_WINS.has(table) && (held.deleted || change.o === 'D')) {
      return held.deleted
        ? { winner: 'held', reason: 'the copy was removed here: its removal stands over the update' }
        : { winner: 'incoming', reason: 'the copy was removed: its removal stands over the update here' };
    }
    if (table === 'replicas' && !held.deleted && change.o !== 'D' && held.row) {
      // Only the copy's own site knows where its bytes are (which resource, which key: a move
      // between its resources, a refresh): its version wins over another site's update, which is
      // only ever a stale mark, and which the copy's site makes itself from the object's checksum
      // (docs/storage.md, "Moving between resources"). The latest would otherwise point the row at
      // bytes that were moved away.
      const site = held.row.site_id ?? change.d?.site_id;
      const owner = typeof site === 'string' ? site : '';
      const heldByOwner = held.site === owner;
      const incomingByOwner = conflict.incoming.site === owner;
      if (heldByOwner !== incomingByOwner) {
        return heldByOwner
          ? { winner: 'held', reason: "the copy's own site changed it here: its version stands" }
          : { winner: 'incoming', reason: "the copy's own site changed it: its version stands" };
      }
    }
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
