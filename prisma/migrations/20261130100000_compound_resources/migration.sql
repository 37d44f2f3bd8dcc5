-- Compound resources (issue 31; docs/storage.md, "Compound resources"): a local cache resource in
-- front of an archive resource. The driver enum gains `compound`; storage_resources rows of that
-- kind replicate like the others (settings name the cache, the archive and the cache's limit).
--
-- compound_objects: this site's state of each key of a compound resource. Local: not in
-- repl_tables, so never replicated (each site's own tiers). SQL-only, like storage_moves: the API
-- reaches it with plain SQL (apps/api/src/storage/compound-state.repository.ts).
--   resource, key: the compound resource's name and the key (keys are never reused).
--   size, sha256: the bytes the key holds, measured when they were written.
--   in_cache: the cache holds them.
--   archive: `pending` (not yet copied to the archive) or `archived` (copied and read back there
--     hashing to sha256: only then may the cache's copy be evicted).
--   archived_at, archive_error: when it was archived; why the last attempt failed.
--   last_read_at: the eviction order (least recently read first).
ALTER TYPE "StorageDriver" ADD VALUE 'compound';

CREATE TABLE "compound_objects" (
    "resource" TEXT NOT NULL,
    "key" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "sha256" TEXT NOT NULL,
    "in_cache" BOOLEAN NOT NULL DEFAULT true,
    "archive" TEXT NOT NULL DEFAULT 'pending',
    "archived_at" TIMESTAMPTZ(3),
    "archive_error" TEXT,
    "last_read_at" TIMESTAMPTZ(3),
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "compound_objects_pkey" PRIMARY KEY ("resource", "key"),
    CONSTRAINT "compound_objects_archive_check" CHECK ("archive" IN ('pending', 'archived')),
    CONSTRAINT "compound_objects_somewhere_check" CHECK ("in_cache" OR "archive" = 'archived')
);

CREATE INDEX "compound_objects_pending_idx" ON "compound_objects"("resource", "created_at") WHERE "archive" = 'pending';
CREATE INDEX "compound_objects_cached_idx" ON "compound_objects"("resource", "last_read_at") WHERE "in_cache";
