import { z } from 'zod';
import { ModeSchema, MtimeSchema } from '../attributes';
import { ObjectPathSchema, responseSchema, text, TimeSchema } from './common';

const Sha256Schema = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits')
  .transform((v) => v.toLowerCase());

/**
 * The version of an existing object a partial update starts from, as the client last saw it: its
 * `version` and SHA-256 (`checksum` of its entry, with or without the `sha256:` prefix).
 */
export const UploadBaseSchema = z.object({
  version: z.number().int().min(1).max(2_147_483_647),
  sha256: z
    .string()
    .transform((v) => v.replace(/^sha256:/i, ''))
    .pipe(Sha256Schema),
});
export type UploadBase = z.output<typeof UploadBaseSchema>;

/**
 * Starts a resumable upload of one object. With `base`, the session is a partial update of the
 * existing object at `path`: `size` (required) is the new size, chunks may go to any offset (each
 * range once, see UploadSessionDto.ranges), and completing makes the new version out of the base
 * version's bytes where nothing was sent (zeros past the base's end) and the chunks elsewhere.
 */
export const CreateUploadSchema = z.object({
  path: ObjectPathSchema,
  /** Total bytes, when known: chunks past it are refused and completing needs all of them. */
  size: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  /** Hex SHA-256 of the whole object; completing refuses other bytes. */
  sha256: Sha256Schema.optional(),
  /** Replace an existing object's bytes (a new version) when complete. */
  overwrite: z.boolean().default(false),
  contentType: text(1, 255).optional(),
  /** Partial update of the existing object: the version the changes apply to (implies overwrite). */
  base: UploadBaseSchema.optional(),
});
export type CreateUploadRequest = z.input<typeof CreateUploadSchema>;

export const CompleteUploadSchema = z.object({
  /** Hex SHA-256 of the whole object, if not given when the session was created. */
  sha256: Sha256Schema.optional(),
  /** The object's file time with this version (default: now). */
  mtime: MtimeSchema.optional(),
  /** The object's permission bits with this version (default: unchanged; 0o644 for a new object). */
  mode: ModeSchema.optional(),
});
export type CompleteUploadRequest = z.input<typeof CompleteUploadSchema>;
/** A completion as the API reads it (mtime in nanoseconds since 1970, mode as bits). */
export type CompleteUpload = z.output<typeof CompleteUploadSchema>;

/**
 * A resumable upload session. Chunks go to `PUT /api/v1/uploads/{id}?offset=<received>`; after an
 * interruption, `GET /api/v1/uploads/{id}` tells how many bytes the site holds (`received`). In a
 * partial update (`base` set) chunks go to any offset below `size`; `received` counts the bytes
 * received and `ranges` tells which.
 */
export const UploadSessionDtoSchema = responseSchema(
  'UploadSessionDto',
  z.object({
    id: z.string(),
    path: z.string(),
    size: z.number().int().nullable(),
    received: z.number().int(),
    sha256: z.string().nullable(),
    overwrite: z.boolean(),
    contentType: z.string(),
    /** Partial updates: the version the changes apply to; null for a whole-object upload. */
    base: z.object({ version: z.number().int(), sha256: z.string() }).nullable(),
    /**
     * Partial updates: the ranges received so far, `[start, end)`, sorted and merged; null for a
     * whole-object upload. A chunk overlapping one of them is refused (409 UPLOAD_RANGE_OVERLAP).
     */
    ranges: z.array(z.tuple([z.number().int(), z.number().int()])).nullable(),
    expiresAt: TimeSchema,
    createdAt: TimeSchema,
  }),
);
export type UploadSessionDto = z.infer<typeof UploadSessionDtoSchema>;

/** Header with the hex SHA-256 of one chunk; a mismatch refuses the chunk. */
export { CHUNK_SHA256_HEADER } from '../headers';
/**
 * Header with the hex SHA-256 of the session's bytes from offset 0 through the end of this chunk
 * (the whole object's running hash); a mismatch refuses the chunk. It checks the chunk as
 * X-Chunk-Sha256 does, but the site reads the hash off the whole-object SHA-256 it computes anyway
 * instead of hashing the chunk a second time, and a client writing in order keeps one running hash.
 */
export const PREFIX_SHA256_HEADER = 'x-prefix-sha256';
