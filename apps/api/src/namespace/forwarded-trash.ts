import { IdSchema } from '@tributary/shared';
import { z } from 'zod';

/**
 * What a site sends when it forwards a user's restore or purge of a trash entry to the site where
 * the entry was deleted, which decides on it (signed, see PeerTrashController).
 */
export const ForwardedTrashActionSchema = z.object({
  /** The user the forwarding site authenticated (and checked may act on the entry). */
  userId: IdSchema,
});

export type ForwardedTrashAction = z.infer<typeof ForwardedTrashActionSchema>;

export type TrashAction = 'restore' | 'purge';

/** The route at the deciding site. */
export const forwardedTrashPath = (trashId: bigint | string, action: TrashAction): string =>
  `/api/v1/replication/peer/trash/${trashId}/${action}`;
