/**
 * Copies the scrub hashes at once: a few hide the open/read/close latency of small files (one at a
 * time, 10 KB files hash at a tenth of sha256sum's speed); the rate setting bounds their bytes together.
 */
export const SCRUB_CONCURRENCY = 4;
