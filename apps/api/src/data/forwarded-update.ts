import { IdSchema, MODE_MASK, MTIME_MAX_NS, MTIME_MIN_NS } from '@tributary/shared';
import { z } from 'zod';

/**
 * What a site sends with a data update it forwards to the site holding the object's bytes (signed;
 * the bytes follow as the body and must match `size` and `sha256`).
 */
export const ForwardedUpdateSchema = z.object({
  objectId: IdSchema,
  /** The user the forwarding site authenticated. */
  userId: IdSchema,
  /** The object's path at the forwarding site, for messages. */
  path: z.string().min(1).max(4096),
  size: z.number().int().nonnegative(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  contentType: z.string().min(1).max(255).nullable(),
  /** A partial update's base: the holding site refuses the update unless this is still the version. */
  baseVersion: z.number().int().min(1).optional(),
  /** The file time the writer gave with the bytes (nanoseconds since 1970, decimal); absent: now. */
  mtime: z
    .string()
    .regex(/^-?\d{1,19}$/)
    .refine((v) => BigInt(v) >= MTIME_MIN_NS && BigInt(v) <= MTIME_MAX_NS)
    .optional(),
  /** The permission bits the writer gave with the bytes; absent: unchanged. */
  mode: z.number().int().min(0).max(MODE_MASK).optional(),
});

export type ForwardedUpdate = z.infer<typeof ForwardedUpdateSchema>;

/** The forwarded update's route at the holding site, under PEER_OBJECT_PATH. */
export const forwardedUpdatePath = (objectId: bigint | string): string =>
  `/api/v1/replication/peer/objects/${objectId}/bytes`;
