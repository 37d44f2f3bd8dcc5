-- Files to remove from this site's storage (issue 28; docs/placement.md, "Updates, deletes and fewer
-- copies"): a copy's row of this site that is deleted (a purge applied here or arriving from a peer,
-- the mover trimming a copy) leaves its key here, in the same transaction, through the trigger in
-- prisma/functions/110_storage_garbage.sql; the API's sweeper (apps/api/src/storage/storage-garbage.ts)
-- removes the file, then the row. Local: not in repl_tables, so never replicated (each site's keys
-- are its own).
--   resource_id, key: the storage resource and the key (replicas.physical_path) of the file.
--   object_id: the object whose copy it was; a key in use again by a row of this site for that object
--     (the copy came back before the sweep) is not removed.
CREATE TABLE "storage_garbage" (
    "resource_id" BIGINT NOT NULL,
    "key" TEXT NOT NULL,
    "object_id" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "storage_garbage_pkey" PRIMARY KEY ("resource_id", "key")
);
