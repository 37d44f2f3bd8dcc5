-- Storage resources beyond one disk (issue 31; docs/storage.md).
--
-- storage_resources gains what a resource is and how it is doing:
--   driver: the kind; `s3` (an S3-compatible object store) besides `local`.
--   settings: where it is (an s3 resource's endpoint, bucket, region, prefix), never its keys,
--     which come from the environment or a 0600 file at the site that owns the resource.
--   is_default: the one resource of its site new bytes go to.
--   health, health_error, health_checked_at: what the owning site's last check found. Local
--     columns (repl_tables.local_columns): each site's own view, never shipped to peers.
-- replicas gains an index on (site_id, physical_path): a site with several resources finds which
-- one holds a key.

ALTER TYPE "StorageDriver" ADD VALUE 's3';

ALTER TABLE "storage_resources" ADD COLUMN "settings" JSONB NOT NULL DEFAULT '{}',
ADD COLUMN "is_default" BOOLEAN NOT NULL DEFAULT false,
ADD COLUMN "health" TEXT NOT NULL DEFAULT 'ok',
ADD COLUMN "health_error" TEXT,
ADD COLUMN "health_checked_at" TIMESTAMPTZ(3);

-- The resource every site used so far (named `default`) stays its default.
UPDATE "storage_resources" SET "is_default" = true WHERE "name" = 'default';

CREATE INDEX "replicas_site_id_physical_path_idx" ON "replicas"("site_id", "physical_path");

UPDATE "repl_tables" SET "local_columns" = '{health,health_error,health_checked_at}' WHERE "name" = 'storage_resources';
