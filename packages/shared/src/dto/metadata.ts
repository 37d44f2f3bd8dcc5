import { z } from 'zod';
import {
  checkAttribute,
  MAX_UNIT_LENGTH,
  METADATA_VALUE_TYPES,
  typedValue,
  type ConditionJson,
  type TypedValue,
} from '../metadata-query';
import { IdSchema, PathSchema, responseSchema, text, TimeSchema } from './common';

export const AttributeSchema = z.string().refine((v) => {
  try {
    checkAttribute(v);
    return true;
  } catch {
    return false;
  }
}, 'must be a letter or _, then letters, digits, _ . : or - (at most 63 characters)');

const UnitSchema = text(0, MAX_UNIT_LENGTH).nullable().optional();
const RawValueSchema = z.union([z.string(), z.number()]);

/** A triple as the API checked it: its value read into `value` (canonical text) and `num` or `time`. */
export function checkedTriple(attribute: string, v: TypedValue, unit: string | null) {
  return { attribute, type: v.type, value: v.text, num: v.num, time: v.time, unit };
}

/** A triple to add or set: the value is read as `type` (default: JSON numbers are numbers, strings text). */
export const TripleInputSchema = z
  .object({
    attribute: AttributeSchema,
    value: RawValueSchema,
    type: z.enum(METADATA_VALUE_TYPES).optional(),
    unit: UnitSchema,
  })
  .transform((t, ctx) => {
    try {
      return checkedTriple(t.attribute, typedValue(t.value, t.type), t.unit || null);
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: (err as Error).message });
      return z.NEVER;
    }
  });
export type TripleInput = z.input<typeof TripleInputSchema>;
export type CheckedTriple = z.output<typeof TripleInputSchema>;

/** Which triples to remove: every value of the attribute, or only those equal to `value` (and `unit`). */
export const TripleMatchSchema = z
  .object({
    attribute: AttributeSchema,
    value: RawValueSchema.optional(),
    type: z.enum(METADATA_VALUE_TYPES).optional(),
    unit: UnitSchema,
  })
  .transform((t, ctx) => {
    // unit: absent matches any unit; null or '' only triples without one.
    const unit = t.unit === undefined ? undefined : t.unit || null;
    if (t.value === undefined) return { attribute: t.attribute, value: null, unit };
    try {
      return { attribute: t.attribute, value: typedValue(t.value, t.type).text, unit };
    } catch (err) {
      ctx.addIssue({ code: 'custom', path: ['value'], message: (err as Error).message });
      return z.NEVER;
    }
  });
export type TripleMatch = z.input<typeof TripleMatchSchema>;

/** Most issues reported for one column of a table of triples (the rest would repeat them). */
const MAX_COLUMN_ISSUES = 10;

/**
 * A column of a table of triples (bulk `columns`): one attribute's value for each of the operation's
 * paths, in the same order; `null` where a path gets none. Every value is read as `type` (default: JSON
 * numbers are numbers, strings text), with the column's unit.
 */
export const TripleColumnSchema = z
  .object({
    attribute: AttributeSchema,
    type: z.enum(METADATA_VALUE_TYPES).optional(),
    unit: UnitSchema,
    values: z
      .array(z.union([z.string(), z.number(), z.null()], { error: 'must be a string, a number or null' }))
      .max(100_000),
  })
  .transform((c, ctx) => {
    const values: (TypedValue | null)[] = new Array<TypedValue | null>(c.values.length);
    let issues = 0;
    for (let i = 0; i < c.values.length && issues < MAX_COLUMN_ISSUES; i++) {
      const v = c.values[i]!;
      if (v === null) {
        values[i] = null;
        continue;
      }
      try {
        values[i] = typedValue(v, c.type);
      } catch (err) {
        ctx.addIssue({ code: 'custom', path: ['values', i], message: (err as Error).message });
        issues += 1;
      }
    }
    if (issues) return z.NEVER;
    return { attribute: c.attribute, unit: c.unit || null, values };
  });
export type TripleColumn = z.input<typeof TripleColumnSchema>;
export type CheckedTripleColumn = z.output<typeof TripleColumnSchema>;

export const AddTriplesSchema = z.object({ triples: z.array(TripleInputSchema).min(1).max(1000) });
export type AddTriplesRequest = z.input<typeof AddTriplesSchema>;

export const UpdateTripleSchema = z
  .object({
    attribute: AttributeSchema.optional(),
    value: RawValueSchema.optional(),
    type: z.enum(METADATA_VALUE_TYPES).optional(),
    unit: UnitSchema,
  })
  .refine((v) => v.value !== undefined || v.unit !== undefined || v.attribute !== undefined, {
    message: 'give at least one of attribute, value, unit',
  });
export type UpdateTripleRequest = z.input<typeof UpdateTripleSchema>;

export const TripleIdParamSchema = z.object({ id: IdSchema });

/** Largest number of (target, triple) rows one bulk request may touch. */
export const MAX_BULK_ROWS = 200_000;

export const BulkOperationSchema = z
  .object({
    /** Data objects or collections by path. */
    paths: z.array(PathSchema).max(100_000).optional(),
    /** Everything below this collection (not the collection itself). */
    under: PathSchema.optional(),
    /** With `under`: the data objects (default), the collections, or both. */
    include: z.enum(['objects', 'collections', 'all']).default('objects'),
    /** Triples added (one identical to a triple already there is not added again). */
    add: z.array(TripleInputSchema).max(1000).default([]),
    /** Replace every value of each named attribute with the values given. */
    set: z.array(TripleInputSchema).max(1000).default([]),
    /** Triples removed. */
    remove: z.array(TripleMatchSchema).max(1000).default([]),
    /**
     * Triples added from a table: each column gives one attribute's value for each path, in the order
     * of `paths` (one value per path, `null` for none). Added like `add`.
     */
    columns: z.array(TripleColumnSchema).max(1000).default([]),
  })
  .refine(
    (o) => (o.paths === undefined) !== (o.under === undefined),
    'give exactly one of "paths" or "under"',
  )
  .refine(
    (o) => o.add.length + o.set.length + o.remove.length + o.columns.length > 0,
    'give at least one of add, set, remove, columns',
  )
  .superRefine((o, ctx) => {
    o.columns.forEach((c, i) => {
      if (o.paths === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['columns', i],
          message: 'columns need "paths" (one value per path)',
        });
      } else if (c.values.length !== o.paths.length) {
        ctx.addIssue({
          code: 'custom',
          path: ['columns', i, 'values'],
          message: `has ${c.values.length} values for ${o.paths.length} paths: give one per path (null for none)`,
        });
      }
    });
  });

export const BulkMetadataSchema = z.object({ operations: z.array(BulkOperationSchema).min(1).max(100_000) });
export type BulkMetadataRequest = z.input<typeof BulkMetadataSchema>;

export const BulkMetadataResultSchema = responseSchema(
  'BulkMetadataResult',
  z.object({
    /** Distinct objects and collections the request applied to. */
    targets: z.number().int(),
    added: z.number().int(),
    updated: z.number().int(),
    removed: z.number().int(),
  }),
);
export type BulkMetadataResult = z.infer<typeof BulkMetadataResultSchema>;

export const METADATA_SORTS = ['name', 'size', 'modified', 'created'] as const;

// Strict: a misspelt field (`text` for `q`) would otherwise be dropped, and the query would
// silently match everything in scope.
export const MetadataQuerySchema = z
  .strictObject({
    /** The condition in JSON form; or give `q`. Neither: everything in scope. */
    where: z.unknown().optional(),
    /** The condition in text form, e.g. `filetype = fits and size > 1e6`. */
    q: z.string().max(10_000).optional(),
    /** Only entries below (or at) this collection. */
    scope: PathSchema.default('/'),
    kind: z.enum(['object', 'collection']).default('object'),
    sort: z.enum(METADATA_SORTS).default('name'),
    order: z.enum(['asc', 'desc']).default('asc'),
    limit: z.number().int().min(0).max(1000).default(100),
    cursor: text(0, 2048).optional(),
    /** Attributes to count values of within the whole result. */
    facets: z.array(AttributeSchema).max(8).default([]),
    /** Most values per facet (the most frequent first). */
    facetLimit: z.number().int().min(1).max(1000).default(50),
    /** Return each item's triples too. */
    withTriples: z.boolean().default(false),
    /**
     * Count the whole result (default): exact when that is cheap, otherwise an estimate from a
     * sample, marked by `totalIsEstimate`. `false` leaves the total out.
     */
    count: z.boolean().default(true),
    /**
     * The exact total and exact facets however many entries match (a broad result then costs a
     * count of every match); default: estimates where counting would be slow.
     */
    exact: z.boolean().default(false),
  })
  .refine((v) => v.where === undefined || v.q === undefined, 'give "where" or "q", not both');
export type MetadataQueryRequest = Omit<z.input<typeof MetadataQuerySchema>, 'where'> & {
  where?: ConditionJson;
};

export const TripleDtoSchema = responseSchema(
  'TripleDto',
  z.object({
    id: z.string(),
    attribute: z.string(),
    /** Numbers as JSON numbers, times as ISO 8601 strings, text as strings. */
    value: z.union([z.string(), z.number()]),
    type: z.enum(METADATA_VALUE_TYPES),
    unit: z.string().nullable(),
    modifiedAt: TimeSchema,
  }),
);
export type TripleDto = z.infer<typeof TripleDtoSchema>;

export const EntryTriplesDtoSchema = responseSchema(
  'EntryTriplesDto',
  z.object({
    kind: z.enum(['collection', 'object']),
    id: z.string(),
    path: z.string(),
    triples: z.array(TripleDtoSchema),
  }),
);
export type EntryTriplesDto = z.infer<typeof EntryTriplesDtoSchema>;

export const MetadataHitDtoSchema = responseSchema(
  'MetadataHitDto',
  z.object({
    kind: z.enum(['collection', 'object']),
    id: z.string(),
    name: z.string(),
    path: z.string(),
    size: z.number().int(),
    modifiedAt: TimeSchema,
    triples: z.array(TripleDtoSchema).optional(),
  }),
);
export type MetadataHitDto = z.infer<typeof MetadataHitDtoSchema>;

export const FacetValueDtoSchema = responseSchema(
  'FacetValueDto',
  z.object({ value: z.union([z.string(), z.number()]), count: z.number().int() }),
);
export type FacetValueDto = z.infer<typeof FacetValueDtoSchema>;

export const MetadataQueryResultSchema = responseSchema(
  'MetadataQueryResult',
  z.object({
    items: z.array(MetadataHitDtoSchema),
    nextCursor: z.string().optional(),
    /** Entries in the whole result (absent with `count: false`). */
    total: z.number().int().optional(),
    /**
     * With `total`: true when it is an estimate from a sample of the catalog ("about 120,000"),
     * false when it is exact. Ask with `exact: true` for the exact count.
     */
    totalIsEstimate: z.boolean().optional(),
    facets: z.record(z.string(), z.array(FacetValueDtoSchema)).optional(),
    /** With `facets`: true when their counts are estimates from the same sample as the total. */
    facetsAreEstimates: z.boolean().optional(),
  }),
);
export type MetadataQueryResult = z.infer<typeof MetadataQueryResultSchema>;

/** `GET /api/v1/metadata/attributes`: attribute names in use, for suggestions. */
export const MetadataAttributesQuerySchema = z.object({
  /** Only names starting with this (case-sensitive); no control characters (PostgreSQL refuses NUL). */
  prefix: text(0, 63).default(''),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});
export type MetadataAttributesQuery = z.input<typeof MetadataAttributesQuerySchema>;

export const MetadataAttributesDtoSchema = responseSchema(
  'MetadataAttributesDto',
  z.object({
    /** Names of attributes on at least one live entry the caller may read, in byte order. */
    attributes: z.array(z.string()),
  }),
);
export type MetadataAttributesDto = z.infer<typeof MetadataAttributesDtoSchema>;
