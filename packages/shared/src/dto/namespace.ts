import { z } from 'zod';
import { IdSchema, NameSchema, PageQuerySchema, PathSchema, text } from './common';

export const PathQuerySchema = z.object({ path: PathSchema });

export const LIST_SORTS = ['name', 'size', 'modified'] as const;
/**
 * Largest `offset` a listing accepts. The API serves an offset from whichever end of the listing is
 * nearer, so opening position N costs an index walk over at most min(N, total - N) entries.
 */
export const MAX_LIST_OFFSET = 10_000_000;
export const ListChildrenQuerySchema = PageQuerySchema.extend({
  path: PathSchema,
  sort: z.enum(LIST_SORTS).default('name'),
  order: z.enum(['asc', 'desc']).default('asc'),
  /** Start at this position of the listing instead of at a cursor (to open any place at once). */
  offset: z.coerce.number().int().min(0).max(MAX_LIST_OFFSET).optional(),
}).refine((v) => v.cursor === undefined || v.offset === undefined, {
  message: 'give "cursor" or "offset", not both',
  path: ['offset'],
});
export interface ListChildrenQuery {
  path: string;
  limit?: number;
  cursor?: string;
  /** Position to start at (0-based); not together with `cursor`. */
  offset?: number;
  sort?: (typeof LIST_SORTS)[number];
  order?: 'asc' | 'desc';
}

export const CreateCollectionSchema = z.object({
  path: PathSchema,
  /** Create missing parents too (like `mkdir -p`). */
  parents: z.boolean().default(false),
});

export const MoveSchema = z.object({ from: PathSchema, to: PathSchema });

export const RenameSchema = z.object({ path: PathSchema, name: NameSchema });

export const PERMISSION_LEVELS = ['read', 'write', 'own'] as const;
export type PermissionLevel = (typeof PERMISSION_LEVELS)[number];

export const GrantSchema = z
  .object({
    path: PathSchema,
    user: text(1, 63).optional(),
    group: text(1, 63).optional(),
    /** `null` removes the grant. */
    level: z.enum(PERMISSION_LEVELS).nullable(),
  })
  .refine((v) => (v.user === undefined) !== (v.group === undefined), 'give exactly one of "user" or "group"');
export type GrantRequest = z.input<typeof GrantSchema>;

export const TrashIdParamSchema = z.object({ id: IdSchema });

export type EntryKind = 'collection' | 'object';

export interface ReplicaDto {
  site: string;
  resource: string;
  size: number;
  checksum: string;
  status: 'good' | 'stale';
}

export interface EntryDto {
  kind: EntryKind;
  id: string;
  name: string;
  path: string;
  owner: string;
  group: string | null;
  /** Bytes for objects; 0 for collections. */
  size: number;
  /** `sha256:<hex>` for objects. */
  checksum: string | null;
  contentType: string | null;
  version: number | null;
  /** Site holding the bytes (first good replica) for objects. */
  site: string | null;
  replicaCount: number;
  createdAt: string;
  modifiedAt: string;
  /** What the caller may do here (null: the name is visible, the content is not). */
  access: PermissionLevel | null;
}

export interface EntryDetailDto extends EntryDto {
  replicas: ReplicaDto[];
}

export interface PermissionDto {
  path: string;
  user: string | null;
  group: string | null;
  level: PermissionLevel;
  inheritedFrom: string | null;
}

export interface TrashEntryDto {
  id: string;
  kind: EntryKind;
  originalPath: string;
  deletedBy: string;
  deletedAt: string;
  deletedAtSite: string;
  /** Every site has applied the delete: it may be purged (docs/conflicts.md). */
  purgeAllowed: boolean;
}
