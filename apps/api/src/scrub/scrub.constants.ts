/**
 * Copies the scrub hashes at once: several hide the open/stat/read/close round trips of small files
 * (one at a time, 10 KB files hash at about a tenth of sha256sum's speed; 8 at once, 0.6 to 0.7 of it
 * on a loaded 2-core machine); the rate setting bounds their bytes together.
 */
export const SCRUB_CONCURRENCY = 8;
