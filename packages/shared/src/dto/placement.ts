import { z } from 'zod';
import {
  cursorSchema,
  IdSchema,
  ObjectPathSchema,
  pageSchema,
  PathSchema,
  responseSchema,
  TimeSchema,
} from './common';

/**
 * Placement (docs/placement.md): rules that keep copies of a collection's objects at several sites,
 * the state of each copy, the mover's queue, and on-demand verification.
 */

/** A copy's state (docs/placement.md, "Copy states"). */
export const COPY_STATES = ['pending', 'copying', 'good', 'stale', 'suspect', 'failed'] as const;
export type CopyState = (typeof COPY_STATES)[number];

export const PlacementSiteIdSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,39}$/, 'must be a site id (lower-case letters, digits and dashes)');

/** The most copies one rule may ask for (the number of usable sites decides below that). */
export const MAX_RULE_COPIES = 64;

/** Largest k and m of an erasure rule (the codec's limits; docs/erasure.md). */
export const MAX_ERASURE_K = 24;
export const MAX_ERASURE_M = 6;

/** What each shard of an erasure-coded object must differ in: its site, or its storage resource. */
export const ERASURE_DOMAINS = ['site', 'resource'] as const;
export type ErasureDomain = (typeof ERASURE_DOMAINS)[number];

/** `erasure` of a rule: k data shards and m parity shards, each in another failure domain. */
export const ErasureSpecSchema = z
  .object({
    k: z.number().int().min(1).max(MAX_ERASURE_K),
    m: z.number().int().min(1).max(MAX_ERASURE_M),
    /** site (default): each shard at another site; resource: at another storage resource. */
    domain: z.enum(ERASURE_DOMAINS).optional(),
  })
  .strict();
export type ErasureSpec = z.input<typeof ErasureSpecSchema>;

/** At `site`, the rule's copies are kept on the storage resource named `resource`. */
export const RuleResourceSchema = z
  .object({
    site: PlacementSiteIdSchema,
    resource: z
      .string()
      .regex(
        /^[a-z][a-z0-9-]{0,31}$/,
        'must be a storage resource name (lower-case letters, digits and dashes)',
      ),
  })
  .strict();
export type RuleResource = z.infer<typeof RuleResourceSchema>;

export const PlacementRuleRequestSchema = z
  .object({
    /** The collection the rule covers (everything below it, now and later). */
    path: PathSchema,
    /** Whole copies to keep; give either this or `erasure`. */
    copies: z.number().int().min(1).max(MAX_RULE_COPIES).optional(),
    /** Keep the objects erasure-coded instead: k data + m parity shards (docs/erasure.md). */
    erasure: ErasureSpecSchema.optional(),
    /** The sites to choose from; absent: any site. */
    sites: z.array(PlacementSiteIdSchema).min(1).max(MAX_RULE_COPIES).optional(),
    /**
     * Where at a site the copies are kept: its storage resource by name (docs/storage.md, "Rules
     * naming resources"); sites not listed keep them on their default resource. Rules of copies only.
     */
    resources: z.array(RuleResourceSchema).min(1).max(MAX_RULE_COPIES).optional(),
    /** Only objects that match this metadata condition (the query language of docs/metadata.md). */
    condition: z.string().min(1).max(4000).optional(),
    /** After this time the rule no longer counts (ISO 8601, in the future). */
    expiresAt: z.iso.datetime({ offset: true }).optional(),
  })
  .strict()
  .superRefine((rule, ctx) => {
    // What the request alone can tell; the site checks the rest (known sites, how many are usable).
    if ((rule.copies === undefined) === (rule.erasure === undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: [rule.copies === undefined ? 'copies' : 'erasure'],
        message: 'give either copies or erasure, not both nor neither',
      });
    }
    if (rule.resources) {
      if (rule.erasure)
        ctx.addIssue({ code: 'custom', path: ['resources'], message: 'is for rules of copies, not erasure' });
      const named = new Set<string>();
      for (const [i, r] of rule.resources.entries()) {
        if (named.has(r.site))
          ctx.addIssue({
            code: 'custom',
            path: ['resources', i, 'site'],
            message: `${r.site} is listed twice`,
          });
        named.add(r.site);
        if (rule.sites && !rule.sites.includes(r.site))
          ctx.addIssue({
            code: 'custom',
            path: ['resources', i, 'site'],
            message: `${r.site} is not one of the rule's sites`,
          });
      }
    }
    if (!rule.sites) return;
    const seen = new Set<string>();
    for (const site of rule.sites) {
      if (seen.has(site))
        ctx.addIssue({ code: 'custom', path: ['sites'], message: `${site} is listed twice` });
      seen.add(site);
    }
    const shards = rule.erasure ? rule.erasure.k + rule.erasure.m : 0;
    if (rule.erasure && (rule.erasure.domain ?? 'site') === 'site' && shards > rule.sites.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['erasure'],
        message: `k + m (${shards}) shards need as many sites, ${rule.sites.length} listed`,
      });
    }
    if (rule.copies !== undefined && rule.copies > rule.sites.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['copies'],
        message: `must be at most the number of sites listed (${rule.sites.length})`,
      });
    }
  });
export type PlacementRuleRequest = z.input<typeof PlacementRuleRequestSchema>;

export const PlacementRuleListQuerySchema = z.object({
  path: PathSchema,
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: cursorSchema(200).optional(),
});
export type PlacementRuleListQuery = z.input<typeof PlacementRuleListQuerySchema>;

export const PlacementRuleIdParamSchema = z.object({ id: IdSchema });

export const PlacementRuleDtoSchema = responseSchema(
  'PlacementRuleDto',
  z.object({
    id: z.string(),
    /** The collection's path now. */
    path: z.string(),
    /** Whole copies; for an erasure rule, k + m (the shards it places). */
    copies: z.number().int(),
    /** Set for an erasure rule: k data + m parity shards, each in another `domain`. */
    erasure: z
      .object({ k: z.number().int(), m: z.number().int(), domain: z.enum(ERASURE_DOMAINS) })
      .nullable()
      .optional(),
    /** Null: any site. */
    sites: z.array(z.string()).nullable(),
    condition: z.string().nullable(),
    expiresAt: TimeSchema.nullable(),
    /** Username of the rule's owner, when known here. */
    owner: z.string().nullable(),
    createdAt: TimeSchema,
    /** A subscription of its one site to the collection (docs/placement.md, "Subscriptions"). */
    subscription: z.boolean(),
    /** The storage resource the copies are kept on at each site listed (null: every site's default). */
    resources: z.array(RuleResourceSchema).nullable().optional(),
    /** In a listing for a path: the ancestor collection the rule is inherited from (null: on the path itself). */
    inheritedFrom: z.string().nullable().optional(),
  }),
);
export type PlacementRuleDto = z.infer<typeof PlacementRuleDtoSchema>;

export const PlacementRulePageSchema = pageSchema('PlacementRulePage', PlacementRuleDtoSchema);
export type PlacementRulePage = z.infer<typeof PlacementRulePageSchema>;

/** `GET /placement/sites`: the sites a rule can place copies at (every site in the catalog). */
export const PlacementSiteDtoSchema = responseSchema(
  'PlacementSiteDto',
  z.object({
    id: z.string(),
    name: z.string(),
    /** This site (the one answering). */
    local: z.boolean(),
  }),
);
export type PlacementSiteDto = z.infer<typeof PlacementSiteDtoSchema>;

export const ObjectPathQuerySchema = z.object({ path: ObjectPathSchema });

export const CopyDtoSchema = responseSchema(
  'CopyDto',
  z.object({
    site: z.string(),
    state: z.enum(COPY_STATES),
    /** Whether this copy can be served: good, and its checksum is the object's. */
    current: z.boolean(),
    size: z.number().int(),
    checksum: z.string(),
    verifiedAt: TimeSchema.nullable(),
    error: z.string().nullable(),
    /** Whether a placement rule wants a copy at this site. */
    wanted: z.boolean(),
    /** A cached copy: kept because the object was read there (docs/caching.md). */
    cached: z.boolean(),
    /** A cached copy its site's eviction leaves alone. */
    pinned: z.boolean(),
    updatedAt: TimeSchema,
  }),
);
export type CopyDto = z.infer<typeof CopyDtoSchema>;

/** One shard of an erasure-coded object (docs/erasure.md). */
export const ShardDtoSchema = responseSchema(
  'ShardDto',
  z.object({
    index: z.number().int(),
    site: z.string(),
    /** good, suspect (the scrub found it missing or different), or stale (older bytes). */
    state: z.enum(['good', 'suspect', 'stale']),
    /** Whether this shard can be used for reads: good, and of the object's current bytes. */
    current: z.boolean(),
    size: z.number().int(),
    checksum: z.string(),
    verifiedAt: TimeSchema.nullable(),
    error: z.string().nullable(),
    /** Whether the erasure rule wants this shard at this site. */
    wanted: z.boolean(),
  }),
);
export type ShardDto = z.infer<typeof ShardDtoSchema>;

/** An object's erasure layout: k, m, where each shard is wanted and where each one is. */
export const ErasureLayoutDtoSchema = responseSchema(
  'ErasureLayoutDto',
  z.object({
    k: z.number().int(),
    m: z.number().int(),
    /** Bytes of each shard per stripe (the stripe holds k of them of the object). */
    chunk: z.number().int(),
    domain: z.enum(ERASURE_DOMAINS),
    /** The site wanted for each shard index (0..k+m-1); empty when no erasure rule covers it now. */
    wantedSites: z.array(z.string()),
    /** Current good shards (a read needs k of them). */
    goodShards: z.number().int(),
    shards: z.array(ShardDtoSchema),
  }),
);
export type ErasureLayoutDto = z.infer<typeof ErasureLayoutDtoSchema>;

/** `GET /placement/shards`: an object's erasure layout (null: no erasure rule covers it, no shards). */
export const ObjectShardsDtoSchema = responseSchema(
  'ObjectShardsDto',
  z.object({
    path: z.string(),
    size: z.number().int(),
    checksum: z.string(),
    erasure: ErasureLayoutDtoSchema.nullable(),
  }),
);
export type ObjectShardsDto = z.infer<typeof ObjectShardsDtoSchema>;

/** `POST /placement/erasure/scrub` (administrators): this site's shards re-hashed now. */
export const ErasureScrubDtoSchema = responseSchema(
  'ErasureScrubDto',
  z.object({
    site: z.string(),
    /** Shards hashed. */
    checked: z.number().int(),
    /** Shards found missing or different (now suspect, rebuilt by the mover). */
    suspect: z.number().int(),
  }),
);
export type ErasureScrubDto = z.infer<typeof ErasureScrubDtoSchema>;

export const ObjectCopiesDtoSchema = responseSchema(
  'ObjectCopiesDto',
  z.object({
    path: z.string(),
    size: z.number().int(),
    checksum: z.string(),
    /** The sites placement rules want copies at (empty: no rule covers the object). */
    wantedSites: z.array(z.string()),
    /** The ids of the rules that cover the object. */
    rules: z.array(z.string()),
    copies: z.array(CopyDtoSchema),
  }),
);
export type ObjectCopiesDto = z.infer<typeof ObjectCopiesDtoSchema>;

/** `POST /placement/verify`: this site's copy checked now, and every copy's state. */
export const VerifyReportDtoSchema = responseSchema(
  'VerifyReportDto',
  z.object({
    path: z.string(),
    /** What this site found: ok, missing, mismatch, or none (no copy here). */
    local: z.enum(['ok', 'missing', 'mismatch', 'none']),
    copies: z.array(CopyDtoSchema),
  }),
);
export type VerifyReportDto = z.infer<typeof VerifyReportDtoSchema>;

export const MoverTransferDtoSchema = responseSchema(
  'MoverTransferDto',
  z.object({
    path: z.string(),
    from: z.string(),
    bytesDone: z.number().int(),
    size: z.number().int(),
    startedAt: TimeSchema,
  }),
);
export type MoverTransferDto = z.infer<typeof MoverTransferDtoSchema>;

export const MoverFailureDtoSchema = responseSchema(
  'MoverFailureDto',
  z.object({
    path: z.string(),
    error: z.string(),
    attempts: z.number().int(),
    nextAttemptAt: TimeSchema.nullable(),
  }),
);
export type MoverFailureDto = z.infer<typeof MoverFailureDtoSchema>;

/** `GET /placement/mover` (administrators): this site's mover. */
export const MoverStatusDtoSchema = responseSchema(
  'MoverStatusDto',
  z.object({
    site: z.string(),
    /** Copies at this site per state. */
    states: z.record(z.enum(COPY_STATES), z.number().int()),
    inFlight: z.array(MoverTransferDtoSchema),
    failed: z.array(MoverFailureDtoSchema),
    /** Bytes per second copied in over the last minute. */
    bytesPerSecond: z.number(),
    /** Bytes copied in since the site started. */
    bytesTotal: z.number().int(),
    settings: z.object({
      concurrency: z.number().int(),
      bandwidthMiBs: z.number(),
      scrubRateMiBs: z.number(),
    }),
  }),
);
export type MoverStatusDto = z.infer<typeof MoverStatusDtoSchema>;
