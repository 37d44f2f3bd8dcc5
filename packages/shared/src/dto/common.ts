import { hasControlCharacter } from '../control-characters';
import { z } from 'zod';
import { ErrorCode } from '../errors';
import { normalizeName, normalizeObjectPath, normalizePath, PathError } from '../paths';

/** Largest catalog id: PostgreSQL's bigint. */
export const MAX_ID = 2n ** 63n - 1n;

/** True for a decimal string of a positive bigint that PostgreSQL can hold. */
export function isCatalogId(value: string): boolean {
  return /^[1-9][0-9]{0,18}$/.test(value) && BigInt(value) <= MAX_ID;
}

/** Catalog ids are bigints; on the wire they are decimal strings. */
export const IdSchema = z.string().refine(isCatalogId, 'must be a positive integer id (decimal string)');

/**
 * Free text stored in the catalog: no NUL or other control characters (PostgreSQL refuses NUL);
 * `trim` drops surrounding white space first.
 */
export function text(min = 0, max = 1000, trim = false) {
  const base = trim ? z.string().trim() : z.string();
  return base
    .min(min, min === 1 ? 'is required' : `must be at least ${min} characters`)
    .max(max)
    .refine((v) => !hasControlCharacter(v), 'must not contain NUL or other control characters');
}

/** An absolute logical path, normalised (NFC, no `..`, no empty segments, no control characters). */
export const PathSchema = z.string().transform((value, ctx) => {
  try {
    return normalizePath(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof PathError ? err.message : 'invalid path' });
    return z.NEVER;
  }
});

/** A path that names a data object: as PathSchema, but a trailing slash is refused (it names a collection). */
export const ObjectPathSchema = z.string().transform((value, ctx) => {
  try {
    return normalizeObjectPath(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof PathError ? err.message : 'invalid path' });
    return z.NEVER;
  }
});

/** One path segment: a file or folder name. */
export const NameSchema = z.string().transform((value, ctx) => {
  try {
    return normalizeName(value);
  } catch (err) {
    ctx.addIssue({ code: 'custom', message: err instanceof PathError ? err.message : 'invalid name' });
    return z.NEVER;
  }
});

/**
 * A listing's `cursor`: what the listing handed out as `nextCursor` (base64url, an id or a name), so
 * letters, digits, `.`, `_` and `-` only; that keeps the longest one within the limit on the size
 * of a request's URL and headers (16 KB), where 2,048 characters of any kind would not be.
 */
export function cursorSchema(max: number) {
  return z
    .string()
    .max(max)
    .regex(/^[A-Za-z0-9._-]*$/, 'must be a cursor a listing returned (letters, digits, ".", "_" and "-")');
}

export const PageQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: cursorSchema(2048).optional(),
});

export interface Page<T> {
  items: T[];
  /** Pass as `cursor` to get the next page; absent on the last page. */
  nextCursor?: string;
  /** Number of items in the whole listing. */
  total: number;
}

/**
 * The API's answers as zod schemas: the typed client's response types are inferred from them, and
 * the OpenAPI document's response schemas are generated from them (apps/api/src/common/api-responses.ts),
 * so a contract test checks the API against what the clients compile against. Each is registered
 * here under the name it has in the document's `components.schemas`.
 */
export const responseSchemas = z.registry<{ id: string }>();

/** Registers a response schema under `id` (its name in the OpenAPI document) and returns it. */
export function responseSchema<S extends z.ZodType>(id: string, schema: S): S {
  responseSchemas.add(schema, { id });
  return schema;
}

/** An ISO 8601 time as the API writes it (`Date.toISOString()`). */
export const TimeSchema = z.string().describe('ISO 8601 time');

/** A page of `item`s (see Page). */
export function pageSchema<T extends z.ZodType>(id: string, item: T) {
  return responseSchema(
    id,
    z.object({
      items: z.array(item),
      /** Pass as `cursor` to get the next page; absent on the last page. */
      nextCursor: z.string().optional(),
      /** Number of items in the whole listing. */
      total: z.number().int(),
    }),
  );
}

/** Every failure: `{ error: { code, message, details? } }` (see ErrorBody in errors.ts). */
export const ErrorBodySchema = responseSchema(
  'ErrorBody',
  z.object({
    error: z.object({
      code: z.enum(Object.values(ErrorCode) as [ErrorCode, ...ErrorCode[]]),
      message: z.string(),
      /** For VALIDATION_FAILED: messages keyed by field path (`name`, `limit`, `members.0.role`). */
      details: z.record(z.string(), z.array(z.string())).optional(),
    }),
  }),
);

/** `GET /api/health`: liveness and catalog reachability. */
export const HealthDtoSchema = responseSchema(
  'HealthDto',
  z.object({
    status: z.enum(['ok', 'degraded']),
    site: z.string(),
    catalog: z.enum(['ok', 'unreachable']),
    /**
     * This site's storage resources (docs/storage.md): `failing` when the last check found the
     * store not answering or refusing the site's credentials.
     */
    storage: z
      .array(
        z.object({
          name: z.string(),
          kind: z.enum(['local', 's3', 'compound']),
          default: z.boolean(),
          status: z.enum(['ok', 'failing']),
        }),
      )
      .optional(),
  }),
);
export type HealthDto = z.infer<typeof HealthDtoSchema>;
