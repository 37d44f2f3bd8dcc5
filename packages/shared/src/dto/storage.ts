import { z } from 'zod';
import { PathSchema, responseSchema } from './common';

/** One of a site's storage resources (docs/storage.md), as administrators see it. Never its keys. */
export const StorageResourceDtoSchema = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(['local', 's3', 'compound']),
  /** Where it is: a local directory, `s3://bucket/prefix`, or `compound://<cache>+<archive>`. */
  location: z.string(),
  /**
   * An s3 resource's endpoint, bucket, region and prefix; a compound's cache, archive and
   * cacheMaxBytes (empty for a local one).
   */
  settings: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  /** The resource new bytes go to. */
  default: z.boolean(),
  /** Configured at this site now (a resource taken out of the settings keeps its row). */
  configured: z.boolean(),
  status: z.enum(['ok', 'failing']),
  /** Why the last check failed. */
  error: z.string().nullable(),
  checkedAt: z.string().nullable(),
  /** Copies of this site held there, and their bytes. */
  objects: z.number().int(),
  bytes: z.number().int(),
});
export type StorageResourceDto = z.infer<typeof StorageResourceDtoSchema>;

export const StorageResourceListDtoSchema = responseSchema(
  'StorageResourceListDto',
  z.object({ site: z.string(), items: z.array(StorageResourceDtoSchema) }),
);
export type StorageResourceListDto = z.infer<typeof StorageResourceListDtoSchema>;

/** Move the copies this site holds under a collection to another of its resources (administrators). */
export const CreateStorageMoveSchema = z
  .object({
    /** The collection whose objects (at any depth) move. */
    path: PathSchema,
    /** The name of the resource they go to. */
    resource: z.string().min(1).max(64),
  })
  .strict();
export type CreateStorageMove = z.infer<typeof CreateStorageMoveSchema>;

export const StorageMoveDtoSchema = responseSchema(
  'StorageMoveDto',
  z.object({
    id: z.string(),
    /** The collection's path when the move was asked for. */
    path: z.string(),
    resource: z.string(),
    /** `running` until every copy is there (also across restarts), `failed` with `error`. */
    status: z.enum(['running', 'done', 'failed']),
    objectsTotal: z.number().int(),
    objectsMoved: z.number().int(),
    bytesTotal: z.number().int(),
    bytesMoved: z.number().int(),
    error: z.string().nullable(),
    createdAt: z.string(),
    finishedAt: z.string().nullable(),
  }),
);
export type StorageMoveDto = z.infer<typeof StorageMoveDtoSchema>;

export const StorageMoveListDtoSchema = responseSchema(
  'StorageMoveListDto',
  z.object({ items: z.array(StorageMoveDtoSchema) }),
);
export type StorageMoveListDto = z.infer<typeof StorageMoveListDtoSchema>;

/**
 * A download of an object held only in the archive of a compound resource (docs/storage.md,
 * "Compound resources"): `202` while it is staged into the cache, with `Retry-After`. A client that
 * sends `Prefer: wait=<seconds>` gets the bytes instead when the staging ends within that time.
 */
export const ObjectStagingDtoSchema = responseSchema(
  'ObjectStagingDto',
  z.object({
    path: z.string(),
    status: z.literal('staging'),
    /** Bytes copied from the archive into the cache so far. */
    bytesStaged: z.number().int(),
    bytesTotal: z.number().int(),
    /** Seconds after which to ask again (also the `Retry-After` header). */
    retryAfterSeconds: z.number().int(),
  }),
);
export type ObjectStagingDto = z.infer<typeof ObjectStagingDtoSchema>;
