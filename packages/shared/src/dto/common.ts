import { z } from 'zod';
import { normalizeName, normalizePath, PathError } from '../paths';

/** Catalog ids are bigints; on the wire they are decimal strings. */
export const IdSchema = z
  .string()
  .regex(/^[1-9][0-9]{0,18}$/, 'must be a positive integer id (decimal string)');

/** An absolute logical path, normalised (NFC, no `..`, no empty segments, no control characters). */
export const PathSchema = z.string().transform((value, ctx) => {
  try {
    return normalizePath(value);
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
  cursor: z.string().max(2048).optional(),
});

export interface Page<T> {
  items: T[];
  /** Pass as `cursor` to get the next page; absent on the last page. */
  nextCursor?: string;
  /** Number of items in the whole listing. */
  total: number;
}
