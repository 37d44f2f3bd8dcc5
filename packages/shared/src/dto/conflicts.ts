import { z } from 'zod';
import { cursorSchema, NameSchema, pageSchema, PathSchema, responseSchema, TimeSchema } from './common';

/**
 * Conflicts people negotiate (docs/conflicts.md): concurrent updates of one record (`update`), an
 * update that met a delete (`delete`), and two records created with one name (`same-name`).
 */
export const CONFLICT_KINDS = ['update', 'delete', 'same-name'] as const;
export type ConflictKind = (typeof CONFLICT_KINDS)[number];

/** `final`: open past its deadline, so the provisional winner stands. `closed`: decided or final. */
export const CONFLICT_STATUS_FILTERS = ['open', 'decided', 'final', 'closed', 'all'] as const;
export type ConflictStatus = 'open' | 'decided' | 'final';

/** Default decisions a collection's owner can set per kind of conflict. */
export const CONFLICT_POLICIES = ['keep', 'prefer-site', 'newest'] as const;
export type ConflictPolicy = (typeof CONFLICT_POLICIES)[number];

const SiteIdSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,39}$/, 'must be a site id (lower-case letters, digits and dashes)');

export const ConflictIdSchema = z
  .string()
  .regex(/^[0-9a-f]{32}$/, 'must be a conflict id (32 hexadecimal digits)');

export const ConflictIdParamSchema = z.object({ id: ConflictIdSchema });

const FilterFields = {
  kind: z.enum(CONFLICT_KINDS).optional(),
  /** Only conflicts about records at or below this path. */
  path: PathSchema.optional(),
  /** Only conflicts with a version from this site. */
  site: SiteIdSchema.optional(),
};

export const ConflictListQuerySchema = z.object({
  ...FilterFields,
  status: z.enum(CONFLICT_STATUS_FILTERS).default('open'),
  /** `me`: only conflicts about the caller's records or changes (the in-app notices). */
  involving: z.enum(['me']).optional(),
  limit: z.coerce.number().int().min(1).max(500).default(100),
  cursor: cursorSchema(200).optional(),
});
export type ConflictListQuery = z.input<typeof ConflictListQuerySchema>;

/**
 * keep: the provisional winner stands (same-name: accept the new name); choose: version `version`
 * (its index in `versions`) stands; merge: the record's current state with the fields in `value`;
 * rename (same-name): give the renamed record `name` instead.
 */
export const ConflictDecisionSchema = z
  .object({
    action: z.enum(['keep', 'choose', 'merge', 'rename']),
    version: z.number().int().min(0).max(1000).optional(),
    value: z.record(z.string(), z.unknown()).optional(),
    name: NameSchema.optional(),
  })
  .superRefine((b, ctx) => {
    const needs = { keep: null, choose: 'version', merge: 'value', rename: 'name' } as const;
    const field = needs[b.action];
    if (field && b[field] === undefined) {
      ctx.addIssue({ code: 'custom', path: [field], message: `${b.action} needs ${field}` });
    }
  });
export type ConflictDecisionRequest = z.input<typeof ConflictDecisionSchema>;

/** A decision after validation: what each action carries. */
export type ConflictDecision =
  | { action: 'keep' }
  | { action: 'choose'; version: number }
  | { action: 'merge'; value: Record<string, unknown> }
  | { action: 'rename'; name: string };

/** The decision a validated request describes. */
export function toConflictDecision(body: ConflictDecisionRequest): ConflictDecision {
  switch (body.action) {
    case 'choose':
      return { action: 'choose', version: body.version as number };
    case 'merge':
      return { action: 'merge', value: body.value as Record<string, unknown> };
    case 'rename':
      return { action: 'rename', name: body.name as string };
    default:
      return { action: 'keep' };
  }
}

export const BulkConflictDecisionSchema = z
  .object({
    filter: z.object({ ...FilterFields, ids: z.array(ConflictIdSchema).min(1).max(1000).optional() }),
    /** keep: provisional winners stand; prefer-site: that site's version; newest: the latest version. */
    action: z.enum(CONFLICT_POLICIES),
    site: SiteIdSchema.optional(),
  })
  .refine((b) => b.action !== 'prefer-site' || b.site !== undefined, {
    message: 'prefer-site needs the site whose versions should stand',
    path: ['site'],
  });
export type BulkConflictDecisionRequest = z.input<typeof BulkConflictDecisionSchema>;

export const ConflictPolicyRequestSchema = z
  .object({
    path: PathSchema,
    kind: z.enum(CONFLICT_KINDS),
    policy: z.enum(CONFLICT_POLICIES),
    site: SiteIdSchema.optional(),
  })
  .refine((b) => b.policy !== 'prefer-site' || b.site !== undefined, {
    message: 'prefer-site needs the site whose versions should stand',
    path: ['site'],
  });
export type ConflictPolicyRequest = z.input<typeof ConflictPolicyRequestSchema>;

export const ConflictPolicyQuerySchema = z.object({
  path: PathSchema,
  kind: z.enum(CONFLICT_KINDS).optional(),
});

/** What a conflict is about, in people's terms (docs/conflicts.md, "How the portal shows a conflict"). */
export const CONFLICT_ENTRY_TYPES = [
  'file',
  'folder',
  'link',
  'attribute',
  'permission',
  'account',
  'group',
  'membership',
  'token',
  'policy',
  'record',
] as const;
export type ConflictEntryType = (typeof CONFLICT_ENTRY_TYPES)[number];

export const ConflictEntryDtoSchema = responseSchema(
  'ConflictEntryDto',
  z.object({
    type: z.enum(CONFLICT_ENTRY_TYPES),
    /** The file's, folder's, attribute's, account's or group's name (the provisional winner's). */
    name: z.string().nullable(),
    /** Where it is now; for an entry that is gone, where its versions last put it. */
    path: z.string().nullable(),
    /** An attribute's or permission's file or folder. */
    on: z.string().nullable(),
    /** The entry is no longer in the catalog (purged or deleted since): name and path are what its versions said. */
    gone: z.boolean(),
    /** One phrase for people: `file run.tar.gz`, `attribute temperature of /p/a.csv`. */
    label: z.string(),
  }),
);
export type ConflictEntryDto = z.infer<typeof ConflictEntryDtoSchema>;

/** One version in the fields a person compares; internal columns are left out. */
export const ConflictFactsDtoSchema = responseSchema(
  'ConflictFactsDto',
  z.object({
    name: z.string().nullable(),
    /** The folder the file or folder is in. */
    location: z.string().nullable(),
    size: z.number().nullable(),
    checksum: z.string().nullable(),
    contentType: z.string().nullable(),
    /** A metadata triple's attribute, value and unit. */
    attribute: z.string().nullable(),
    value: z.string().nullable(),
    unit: z.string().nullable(),
    /** Other readable fields (an account's display name, a permission's level, ...), by field name. */
    other: z.record(z.string(), z.string().nullable()),
    state: z.enum(['live', 'trashed', 'deleted']),
  }),
);
export type ConflictFactsDto = z.infer<typeof ConflictFactsDtoSchema>;

/** A record created under the contested name of a same-name conflict, as it is now. */
export const ConflictContenderDtoSchema = responseSchema(
  'ConflictContenderDto',
  z.object({
    recordId: z.string(),
    site: z.string(),
    createdAt: TimeSchema,
    createdBy: z.string().nullable(),
    /** Its name and path now (null when it is gone). */
    name: z.string().nullable(),
    path: z.string().nullable(),
    size: z.number().nullable(),
    checksum: z.string().nullable(),
    /** It kept the contested name (the first created). */
    kept: z.boolean(),
    trashed: z.boolean(),
    gone: z.boolean(),
  }),
);
export type ConflictContenderDto = z.infer<typeof ConflictContenderDtoSchema>;

export const ConflictVersionDtoSchema = responseSchema(
  'ConflictVersionDto',
  z.object({
    index: z.number().int(),
    site: z.string(),
    /** When this version was made (ISO 8601). */
    at: TimeSchema,
    deleted: z.boolean(),
    trashed: z.boolean(),
    /** Username of who made it, when known. */
    by: z.string().nullable(),
    /** Same-name: which record this is. */
    recordId: z.string().optional(),
    /** The record's fields in this version (password and token hashes redacted). */
    values: z.record(z.string(), z.unknown()).nullable(),
    /** The fields a person compares, internal columns left out. */
    facts: ConflictFactsDtoSchema,
    provisionalWinner: z.boolean(),
  }),
);
export type ConflictVersionDto = z.infer<typeof ConflictVersionDtoSchema>;

export const ConflictDecisionDtoSchema = responseSchema(
  'ConflictDecisionDto',
  z.object({
    action: z.string(),
    by: z.string().nullable(),
    /** Set when a collection's default policy decided. */
    policy: z.string().nullable(),
    at: TimeSchema,
    site: z.string(),
    value: z.unknown(),
  }),
);
export type ConflictDecisionDto = z.infer<typeof ConflictDecisionDtoSchema>;

export const ConflictDtoSchema = responseSchema(
  'ConflictDto',
  z.object({
    id: z.string(),
    kind: z.enum(CONFLICT_KINDS),
    table: z.string(),
    recordId: z.string(),
    /** Where the record is now, for namespace records. */
    path: z.string().nullable(),
    status: z.enum(['open', 'decided', 'final']),
    openedAt: TimeSchema,
    deadline: TimeSchema,
    versions: z.array(ConflictVersionDtoSchema),
    /** Fields whose values differ between the versions. */
    changedFields: z.array(z.string()),
    detail: z.record(z.string(), z.unknown()),
    /** What the conflict is about, in people's terms. */
    entry: ConflictEntryDtoSchema,
    /** What happened, in one sentence: `renamed to b.txt at lsu while renamed to c.txt at tulane`. */
    story: z.string(),
    /** The readable facts (keys of `facts`, `other.*` for the rest) on which the versions differ. */
    differing: z.array(z.string()),
    /** Same-name: every record created under the name, as each is now (others: empty). */
    contenders: z.array(ConflictContenderDtoSchema),
    decision: ConflictDecisionDtoSchema.nullable(),
    /** About the caller's own records or changes. */
    involvesMe: z.boolean(),
    /** The caller may decide it (and it is still open). */
    canDecide: z.boolean(),
  }),
);
export type ConflictDto = z.infer<typeof ConflictDtoSchema>;
export const ConflictPageSchema = pageSchema('ConflictPage', ConflictDtoSchema);

export const ConflictSummaryDtoSchema = responseSchema(
  'ConflictSummaryDto',
  z.object({
    open: z.number().int(),
    byKind: z.object({ update: z.number().int(), delete: z.number().int(), 'same-name': z.number().int() }),
    /** Open conflicts about the caller's records or changes (the header badge). */
    involvingMe: z.number().int(),
  }),
);
export type ConflictSummaryDto = z.infer<typeof ConflictSummaryDtoSchema>;

export const BulkConflictDecisionDtoSchema = responseSchema(
  'BulkConflictDecisionDto',
  z.object({
    decided: z.array(z.string()),
    skipped: z.array(z.object({ id: z.string(), reason: z.string() })),
  }),
);
export type BulkConflictDecisionDto = z.infer<typeof BulkConflictDecisionDtoSchema>;

export const ConflictPolicyDtoSchema = responseSchema(
  'ConflictPolicyDto',
  z.object({
    path: z.string(),
    kind: z.enum(CONFLICT_KINDS),
    policy: z.enum(CONFLICT_POLICIES),
    site: z.string().nullable(),
    setBy: z.string().nullable(),
    updatedAt: TimeSchema,
  }),
);
export type ConflictPolicyDto = z.infer<typeof ConflictPolicyDtoSchema>;
