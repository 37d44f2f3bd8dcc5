import { z } from 'zod';
import { IdSchema, PathSchema, responseSchema, TimeSchema } from './common';
import { COPY_STATES, PlacementSiteIdSchema } from './placement';

/**
 * Caching sites and subscriptions (docs/caching.md): the objects a site keeps because they were read
 * there (cached copies), staging a collection into the cache ahead of use, pins, and subscriptions
 * of a site to a collection (placement rules with the subscriber as their site).
 */

/** A path (object or collection) the cache acts on. */
export const CachePathRequestSchema = z.object({ path: PathSchema }).strict();
export type CachePathRequest = z.input<typeof CachePathRequestSchema>;

export const CacheListQuerySchema = z.object({
  /** Only cached objects below this collection (or this object); default `/`. */
  path: PathSchema.default('/'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});
export type CacheListQuery = z.input<typeof CacheListQuerySchema>;

export const CacheEntryDtoSchema = responseSchema(
  'CacheEntryDto',
  z.object({
    path: z.string(),
    size: z.number().int(),
    state: z.enum(COPY_STATES),
    /** Whether the cached bytes are the object's current ones (and so are served). */
    current: z.boolean(),
    pinned: z.boolean(),
    /** When this site last served the copy (null: not yet). */
    lastReadAt: TimeSchema.nullable(),
  }),
);
export type CacheEntryDto = z.infer<typeof CacheEntryDtoSchema>;

export const CacheListDtoSchema = responseSchema(
  'CacheListDto',
  z.object({
    /** Most recently read first. */
    items: z.array(CacheEntryDtoSchema),
    /** Cached copies below the path (the listing may show fewer). */
    total: z.number().int(),
    /** Their bytes together. */
    bytes: z.number().int(),
  }),
);
export type CacheListDto = z.infer<typeof CacheListDtoSchema>;

/** `GET /cache`: this site's cache (administrators). */
export const CacheStatusDtoSchema = responseSchema(
  'CacheStatusDto',
  z.object({
    site: z.string(),
    /** Whether this site keeps cached copies (CACHE_MAX_BYTES above 0). */
    enabled: z.boolean(),
    limitBytes: z.number().int(),
    /** Bytes of the cached copies here (good, or on their way). */
    usedBytes: z.number().int(),
    pinnedBytes: z.number().int(),
    copies: z.number().int(),
    /** Since the site started: reads served from a cached copy here. */
    hits: z.number().int(),
    /** Reads whose bytes came from another site (each fills the cache if it can). */
    misses: z.number().int(),
    /** Bytes brought into the cache (on read, staged, pinned). */
    bytesIn: z.number().int(),
    evictions: z.number().int(),
  }),
);
export type CacheStatusDto = z.infer<typeof CacheStatusDtoSchema>;

/** Staging (or pinning) a collection or an object: how far its bytes have come into this site. */
export const StageStatusDtoSchema = responseSchema(
  'StageStatusDto',
  z.object({
    path: z.string(),
    site: z.string(),
    /** Objects below the path (symbolic links and empty objects left out). */
    objects: z.number().int(),
    bytes: z.number().int(),
    /** Of them, held here with their current bytes (cached or wanted by a rule). */
    readyObjects: z.number().int(),
    readyBytes: z.number().int(),
    /** Waiting or on their way. */
    pendingObjects: z.number().int(),
    /** Whose last attempt failed (retried with backoff). */
    failedObjects: z.number().int(),
    done: z.boolean(),
  }),
);
export type StageStatusDto = z.infer<typeof StageStatusDtoSchema>;

export const CacheChangeDtoSchema = responseSchema(
  'CacheChangeDto',
  z.object({
    /** Cached copies changed (evicted, unpinned). */
    changed: z.number().int(),
    /** Copies left as they are, with why (a rule wants it, the last good copy, pinned, ...). */
    kept: z.array(z.object({ path: z.string(), reason: z.string() })),
  }),
);
export type CacheChangeDto = z.infer<typeof CacheChangeDtoSchema>;

export const SubscriptionRequestSchema = z
  .object({
    /** The publisher's collection: every object below it, now and later. */
    path: PathSchema,
    /** The subscribing site; absent: the site answering. */
    site: PlacementSiteIdSchema.optional(),
    /** Only objects that match this metadata condition (docs/metadata.md's query language). */
    condition: z.string().min(1).max(4000).optional(),
  })
  .strict();
export type SubscriptionRequest = z.input<typeof SubscriptionRequestSchema>;

export const SubscriptionListQuerySchema = z.object({
  /** Only subscriptions to this collection or below it; default every one the caller may read. */
  path: PathSchema.default('/'),
  /** Only this subscriber's. */
  site: PlacementSiteIdSchema.optional(),
});
export type SubscriptionListQuery = z.input<typeof SubscriptionListQuerySchema>;

export const SubscriptionIdParamSchema = z.object({ id: IdSchema });

export const SubscriptionDtoSchema = responseSchema(
  'SubscriptionDto',
  z.object({
    /** The id of the placement rule it is. */
    id: z.string(),
    /** The collection subscribed to (its path now). */
    path: z.string(),
    /** The subscriber. */
    site: z.string(),
    condition: z.string().nullable(),
    owner: z.string().nullable(),
    createdAt: TimeSchema,
  }),
);
export type SubscriptionDto = z.infer<typeof SubscriptionDtoSchema>;

export const SubscriptionListDtoSchema = responseSchema(
  'SubscriptionListDto',
  z.object({ items: z.array(SubscriptionDtoSchema) }),
);
export type SubscriptionListDto = z.infer<typeof SubscriptionListDtoSchema>;
