import { z } from 'zod';
import { PathSchema, responseSchema } from './common';

/** One of a site's storage resources (docs/storage.md), as administrators see it. Never its keys. */
export const StorageResourceDtoSchema = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(['local', 's3']),
  /** Where it is: a local directory, or `s3://bucket/prefix`. */
  location: z.string(),
  /** An s3 resource's endpoint, bucket, region and prefix (empty for a local one). */
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
