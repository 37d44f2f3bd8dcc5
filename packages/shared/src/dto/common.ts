import { z } from 'zod';
import { normalizeName, normalizeObjectPath, normalizePath, PathError } from '../paths';

/** Largest catalog id: PostgreSQL's bigint. */
export const MAX_ID = 2n ** 63n - 1n;

/** True for a decimal string of a positive bigint that PostgreSQL can hold. */
export function isCatalogId(value: string): boolean {
  return /^[1-9][0-9]{0,18}$/.test(value) && BigInt(value) <= MAX_ID;
}

/** Catalog ids are bigints; on the wire they are decimal strings. */
export const IdSchema = z.string().refine(isCatalogId, 'must be a positive integer id (decimal string)');

// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f]/;

/**
 * Free text stored in the catalog: no NUL or other control characters (PostgreSQL refuses NUL);
 * `trim` drops surrounding white space first.
 */
export function text(min = 0, max = 1000, trim = false) {
  const base = trim ? z.string().trim() : z.string();
  return base
    .min(min, min === 1 ? 'is required' : `must be at least ${min} characters`)
    .max(max)
    .refine((v) => !CONTROL_CHARACTERS.test(v), 'must not contain NUL or other control characters');
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

export const PageQuerySchema = z.object({
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: text(0, 2048).optional(),
});

export interface Page<T> {
  items: T[];
  /** Pass as `cursor` to get the next page; absent on the last page. */
  nextCursor?: string;
  /** Number of items in the whole listing. */
  total: number;
}
