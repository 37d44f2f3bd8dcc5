import type { ReplicatedApplication } from '@tributary/replication';
import { ConflictRecords } from './conflict-records';
import { CatalogResolver } from './resolver';
import { SameNameContests } from './same-name';
import { CONFLICTS_TABLE, NAMED, SNAPSHOT_TABLES, TRASHABLE, trashEntryOf } from './tables';
import { settleDeletes } from './trash-settlement';
import { TrashRescue } from './trash-rescue';

/**
 * The catalog's tables and rules, as the replication engine takes them (docs/conflicts.md): the
 * latest version wins except that a live file or folder wins over a move to the trash, and rescues
 * it; a name taken at two sites is kept by the first record created and the others renamed
 * `name_1`, ...; every conflict people may negotiate is written to the replicated `conflicts` table,
 * whose copies merge; a delete settles once every peer has applied it. `conflictDeadlineMs` is how
 * long people have to decide a conflict before its provisional winner is final.
 */
export function catalogApplication(options: { conflictDeadlineMs: number }): ReplicatedApplication {
  const records = new ConflictRecords(options.conflictDeadlineMs);
  const names = new SameNameContests(records);
  const trash = new TrashRescue(records);
  return {
    resolver: new CatalogResolver(),
    snapshot: SNAPSHOT_TABLES,
    named: new Set(Object.keys(NAMED)),
    merged: new Set([CONFLICTS_TABLE]),
    trash: { tables: TRASHABLE, entryOf: trashEntryOf },
    hooks: {
      async afterBatch(client, origin, after, through) {
        await records.afterBatch(client, origin, after, through);
        await names.honourRecords(client, origin, after, through);
        return trash.reconsiderTrashed(client, origin, after, through);
      },
      lostHere: (client, change) => records.lostHere(client, change),
      isAbsorbed: (client, table, key, stamp, site) => trash.isAbsorbed(client, table, key, stamp, site),
      async concurrent(client, origin, conflict, winner) {
        const change = conflict.incoming.change;
        await records.noteConcurrent(client, origin, conflict, change.b, change.bs);
        await trash.trackHeads(client, origin, change, conflict.held, winner);
      },
      merge: (client, origin, change) => records.mergeIncoming(client, origin, change),
      rescue: (client, origin, entry) => trash.rescue(client, origin, entry),
      nameClash: (client, origin, change, err) => names.renameOnClash(client, origin, change, err),
      async afterCycle(db, siteId, peers) {
        await settleDeletes(db, siteId, peers);
      },
    },
  };
}
