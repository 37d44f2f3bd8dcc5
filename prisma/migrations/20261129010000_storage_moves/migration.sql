-- Moving the objects under a collection to another storage resource of the site (issue 31;
-- docs/storage.md, "Moving between resources"). Local: not in repl_tables, so never replicated (a
-- move is this site's work on its own copies; the copies' new resource replicates with their rows).
-- SQL-only, like dav_properties: the API reaches it with plain SQL (apps/api/src/resources).
--   collection_id, path: the collection (its path when the move was asked for, for display).
--   resource_id: where the copies go.
--   status: running (also after a restart: the work is what the catalog still has elsewhere),
--     done, or failed (error says why: bytes that did not match their checksum).
--   objects_total, bytes_total: what there was to move when it started; *_moved: done so far.
CREATE TABLE "storage_moves" (
    "id" BIGSERIAL NOT NULL,
    "collection_id" BIGINT NOT NULL,
    "path" TEXT NOT NULL,
    "resource_id" BIGINT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'running',
    "objects_total" INTEGER NOT NULL DEFAULT 0,
    "objects_moved" INTEGER NOT NULL DEFAULT 0,
    "bytes_total" BIGINT NOT NULL DEFAULT 0,
    "bytes_moved" BIGINT NOT NULL DEFAULT 0,
    "error" TEXT,
    "created_by" BIGINT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "finished_at" TIMESTAMPTZ(3),

    CONSTRAINT "storage_moves_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "storage_moves_status_check" CHECK ("status" IN ('running', 'done', 'failed')),
    CONSTRAINT "storage_moves_collection_id_fkey" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE CASCADE,
    CONSTRAINT "storage_moves_resource_id_fkey" FOREIGN KEY ("resource_id") REFERENCES "storage_resources"("id") ON DELETE CASCADE
);

CREATE INDEX "storage_moves_status_idx" ON "storage_moves"("status");
