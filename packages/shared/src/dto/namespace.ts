import { z } from 'zod';
import { LinkTargetSchema, ModeSchema, MtimeSchema } from '../attributes';
import { COPY_STATES } from './placement';
import {
  IdSchema,
  ObjectPathSchema,
  NameSchema,
  PageQuerySchema,
  pageSchema,
  PathSchema,
  responseSchema,
  text,
  TimeSchema,
} from './common';

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
  /** The new collection's permission bits (default 0o755; missing parents get the default). */
  mode: ModeSchema.optional(),
  /** The new collection's file time (default: now). */
  mtime: MtimeSchema.optional(),
});
export type CreateCollectionRequest = z.input<typeof CreateCollectionSchema>;

/**
 * A new symbolic link: `target` is stored exactly as written (relative or absolute, it may point
 * nowhere) and never followed by the site. Its mode is always 0o777.
 */
export const CreateSymlinkSchema = z.object({
  path: ObjectPathSchema,
  target: LinkTargetSchema,
  /** The link's own file time (default: now), as `lutimes` sets it. */
  mtime: MtimeSchema.optional(),
});
export type CreateSymlinkRequest = z.input<typeof CreateSymlinkSchema>;

/**
 * Sets an entry's file time and/or permission bits (`touch -d`, `utimensat`, `chmod`). Both are
 * advisory: the catalog's grants decide access. A symbolic link takes `mtime` only.
 */
export const SetAttributesSchema = z
  .object({
    path: PathSchema,
    mtime: MtimeSchema.optional(),
    mode: ModeSchema.optional(),
  })
  .refine((v) => v.mtime !== undefined || v.mode !== undefined, {
    message: 'give "mtime", "mode" or both',
    path: ['mtime'],
  });
export type SetAttributesRequest = z.input<typeof SetAttributesSchema>;

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

/** A symbolic link is an entry of its own kind: a name with a target, no bytes (docs/attributes.md). */
export const ENTRY_KINDS = ['collection', 'object', 'symlink'] as const;
export type EntryKind = (typeof ENTRY_KINDS)[number];

export const ReplicaDtoSchema = responseSchema(
  'ReplicaDto',
  z.object({
    site: z.string(),
    resource: z.string(),
    size: z.number().int(),
    checksum: z.string(),
    /** The copy's state (docs/placement.md); only a good copy whose checksum is the object's is served. */
    status: z.enum(COPY_STATES),
    /**
     * A copy on a compound resource of the site answering (docs/storage.md): in its cache, archived
     * (`pending`: not yet copied to the archive; `archived`: copied and verified there), and the
     * staging from the archive into the cache when one runs. Absent for other copies.
     */
    tier: z
      .object({
        cache: z.boolean(),
        archive: z.enum(['pending', 'archived']),
        archiveError: z.string().nullable(),
        staging: z.object({ bytesStaged: z.number().int(), bytesTotal: z.number().int() }).nullable(),
      })
      .optional(),
  }),
);
export type ReplicaDto = z.infer<typeof ReplicaDtoSchema>;

const entryFields = {
  kind: z.enum(ENTRY_KINDS),
  id: z.string(),
  name: z.string(),
  path: z.string(),
  owner: z.string(),
  group: z.string().nullable(),
  /** Bytes for objects; the target's length in bytes of UTF-8 for symlinks; 0 for collections. */
  size: z.number().int(),
  /** `sha256:<hex>` for objects (of the target, for symlinks). */
  checksum: z.string().nullable(),
  contentType: z.string().nullable(),
  version: z.number().int().nullable(),
  /** Site holding the bytes (first good replica) for objects. */
  site: z.string().nullable(),
  replicaCount: z.number().int(),
  createdAt: TimeSchema,
  /** When the catalog record last changed (any change: a rename, a grant, a move to the trash and back). */
  modifiedAt: TimeSchema,
  /**
   * The file time (POSIX mtime): set by writers (`touch -d`, `rsync -a`), else the time of the last
   * content change. ISO 8601 in UTC with nine fraction digits (nanoseconds).
   */
  mtime: TimeSchema,
  /** Permission bits (0..0o7777), advisory: grants decide access. */
  mode: z.number().int(),
  /** A symlink's target, exactly as written; null for other kinds. */
  linkTarget: z.string().nullable(),
  /** What the caller may do here (null: the name is visible, the content is not). */
  access: z.enum(PERMISSION_LEVELS).nullable(),
};

export const EntryDtoSchema = responseSchema('EntryDto', z.object(entryFields));
export type EntryDto = z.infer<typeof EntryDtoSchema>;
export const EntryPageSchema = pageSchema('EntryPage', EntryDtoSchema);

export const EntryDetailDtoSchema = responseSchema(
  'EntryDetailDto',
  z.object({ ...entryFields, replicas: z.array(ReplicaDtoSchema) }),
);
export type EntryDetailDto = z.infer<typeof EntryDetailDtoSchema>;

export const PermissionDtoSchema = responseSchema(
  'PermissionDto',
  z.object({
    path: z.string(),
    user: z.string().nullable(),
    group: z.string().nullable(),
    level: z.enum(PERMISSION_LEVELS),
    inheritedFrom: z.string().nullable(),
  }),
);
export type PermissionDto = z.infer<typeof PermissionDtoSchema>;

export const TrashEntryDtoSchema = responseSchema(
  'TrashEntryDto',
  z.object({
    id: z.string(),
    kind: z.enum(ENTRY_KINDS),
    originalPath: z.string(),
    deletedBy: z.string(),
    deletedAt: TimeSchema,
    deletedAtSite: z.string(),
    /** Every site has applied the delete: it may be purged (docs/conflicts.md). */
    purgeAllowed: z.boolean(),
  }),
);
export type TrashEntryDto = z.infer<typeof TrashEntryDtoSchema>;
export const TrashPageSchema = pageSchema('TrashPage', TrashEntryDtoSchema);
