-- Erasure-coded objects across sites (issue 30; docs/erasure.md).
--
-- placement_rules.erasure_k, erasure_m: a rule that keeps an object as k data shards and m parity
--   shards (any k rebuild it) instead of `copies` whole copies; NULL for a rule of copies. `copies`
--   holds k + m for such a rule (the shards it places), so listings stay simple; the copies mover
--   leaves erasure rules out.
-- placement_rules.erasure_domain: 'site' (each shard at a different site) or 'resource' (each at a
--   different storage resource, for federations with fewer sites than shards). NULL for copies.
--
-- erasure_shards: one row per shard a site holds, written only by that site (as a copy's row):
--   object_id, shard_index (0..k+m-1), k, m, chunk (bytes per shard per stripe) and object_size: the
--   layout; object_checksum: the SHA-256 of the object bytes the shard encodes (a shard is served
--   only while it is the object's checksum); size, checksum: the shard file's own length and
--   SHA-256; status: good, or suspect (the scrub found it missing or different; rebuilt by the
--   mover); resource_id, physical_path: where its file is at its site; verified_at, error as copies.
--   A shard row of an older object_checksum is stale: the mover rebuilds it for the new bytes.
--   Replicated like replicas (repl_tables), so every site knows where every shard is.
ALTER TABLE "placement_rules"
  ADD COLUMN "erasure_k" INTEGER,
  ADD COLUMN "erasure_m" INTEGER,
  ADD COLUMN "erasure_domain" TEXT;

CREATE TABLE "erasure_shards" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "object_id" BIGINT NOT NULL,
    "shard_index" INTEGER NOT NULL,
    "site_id" TEXT NOT NULL,
    "resource_id" BIGINT NOT NULL,
    "physical_path" TEXT NOT NULL,
    "k" INTEGER NOT NULL,
    "m" INTEGER NOT NULL,
    "chunk" INTEGER NOT NULL,
    "object_size" BIGINT NOT NULL,
    "object_checksum" TEXT NOT NULL,
    "size" BIGINT NOT NULL,
    "checksum" TEXT NOT NULL,
    "status" TEXT NOT NULL DEFAULT 'good',
    "verified_at" TIMESTAMPTZ(3),
    "error" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "erasure_shards_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "erasure_shards_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "data_objects"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
-- One row per object, shard and site (rows are written only by their own site, so no two sites
-- ever insert the same key).
CREATE UNIQUE INDEX "erasure_shards_object_id_shard_index_site_id_key" ON "erasure_shards" ("object_id", "shard_index", "site_id");
CREATE INDEX "erasure_shards_site_id_status_idx" ON "erasure_shards" ("site_id", "status");

INSERT INTO "repl_tables" ("name", "key_column", "local_columns", "rank") VALUES ('erasure_shards', 'id', '{}', 25);
