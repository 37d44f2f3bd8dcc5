import { z } from 'zod';
import { PathSchema, text } from './common';

const Sha256Schema = z
  .string()
  .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits')
  .transform((v) => v.toLowerCase());

/** Starts a resumable upload of one object. */
export const CreateUploadSchema = z.object({
  path: PathSchema,
  /** Total bytes, when known: chunks past it are refused and completing needs all of them. */
  size: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  /** Hex SHA-256 of the whole object; completing refuses other bytes. */
  sha256: Sha256Schema.optional(),
  /** Replace an existing object's bytes (a new version) when complete. */
  overwrite: z.boolean().default(false),
  contentType: text(1, 255).optional(),
});
export type CreateUploadRequest = z.input<typeof CreateUploadSchema>;

export const CompleteUploadSchema = z.object({
  /** Hex SHA-256 of the whole object, if not given when the session was created. */
  sha256: Sha256Schema.optional(),
});
export type CompleteUploadRequest = z.input<typeof CompleteUploadSchema>;

/**
 * A resumable upload session. Chunks go to `PUT /api/v1/uploads/{id}?offset=<received>`; after an
 * interruption, `GET /api/v1/uploads/{id}` tells how many bytes the site holds (`received`).
 */
export interface UploadSessionDto {
  id: string;
  path: string;
  size: number | null;
  received: number;
  sha256: string | null;
  overwrite: boolean;
  contentType: string;
  expiresAt: string;
  createdAt: string;
}

/** Header with the hex SHA-256 of one chunk; a mismatch refuses the chunk. */
export const CHUNK_SHA256_HEADER = 'x-chunk-sha256';
/**
 * Header with the hex SHA-256 of the session's bytes from offset 0 through the end of this chunk
 * (the whole object's running hash); a mismatch refuses the chunk. It checks the chunk as
 * X-Chunk-Sha256 does, but the site reads the hash off the whole-object SHA-256 it computes anyway
 * instead of hashing the chunk a second time, and a client writing in order keeps one running hash.
 */
export const PREFIX_SHA256_HEADER = 'x-prefix-sha256';
