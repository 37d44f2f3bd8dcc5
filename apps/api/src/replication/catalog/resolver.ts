import {
  LatestTimestampWins,
  type ConflictResolver,
  type DetectedConflict,
  type Resolution,
} from '@tributary/replication';
import { isTrashed, TRASHABLE } from './tables';

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
