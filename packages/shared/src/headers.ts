/**
 * Names of the HTTP headers the API and its clients share. Kept apart from the DTO modules (which
 * build zod schemas when loaded), so a client that only needs a header name does not load zod: the
 * portal's first chunk is the typed client without the schemas (docs/portal.md, "Bundle size").
 */

/** A file time sent with bytes (docs/attributes.md). */
export const MTIME_HEADER = 'x-tributary-mtime';
/** Permission bits sent with bytes (docs/attributes.md). */
export const MODE_HEADER = 'x-tributary-mode';
/** The SHA-256 of one chunk of an upload session. */
export const CHUNK_SHA256_HEADER = 'x-chunk-sha256';
