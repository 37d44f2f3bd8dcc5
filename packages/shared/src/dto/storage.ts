import { z } from 'zod';
import { responseSchema } from './common';

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
