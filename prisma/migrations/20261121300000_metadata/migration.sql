-- Metadata triples (attribute, value, unit) on data objects and collections (issue 5; docs/metadata.md).
--
-- One row per triple, with its own id from the site's id range: two sites adding triples to one object
-- make different rows (no conflict); changing or removing the same triple at two sites is an update
-- conflict on that row, handled by the replication machinery like any other row.
--
-- Values are typed: `value` always holds the canonical text (for display and text comparison); a number
-- also has `num` and a time `time`, so ranges compare as numbers and instants. `value` uses the "C"
-- collation, so a btree index serves both equality and prefix (LIKE 'abc%') searches.
--
-- The table is SQL-only (like the replication tables): its partial indexes and checks are not
-- expressible in schema.prisma, and every query on it is plain SQL in apps/api/src/metadata.
CREATE TABLE "metadata_triples" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "object_id" BIGINT,
    "collection_id" BIGINT,
    "attribute" TEXT NOT NULL,
    "value_type" TEXT NOT NULL,
    "value" TEXT COLLATE "C" NOT NULL,
    "num" DOUBLE PRECISION,
    "time" TIMESTAMPTZ(3),
    "unit" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,
    CONSTRAINT "metadata_triples_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "metadata_triples_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "data_objects"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "metadata_triples_collection_id_fkey" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE CASCADE ON UPDATE CASCADE,
    CONSTRAINT "metadata_triples_target_check" CHECK (("object_id" IS NULL) <> ("collection_id" IS NULL)),
    CONSTRAINT "metadata_triples_value_check" CHECK (
        ("value_type" = 'text' AND "num" IS NULL AND "time" IS NULL)
        OR ("value_type" = 'number' AND "num" IS NOT NULL AND "time" IS NULL)
        OR ("value_type" = 'time' AND "time" IS NOT NULL AND "num" IS NULL))
);

-- An object's (or collection's) triples: listing, the per-object probes of a conjunction, cascades.
CREATE INDEX "metadata_triples_object_idx" ON "metadata_triples" ("object_id", "attribute") WHERE "object_id" IS NOT NULL;
CREATE INDEX "metadata_triples_collection_idx" ON "metadata_triples" ("collection_id", "attribute") WHERE "collection_id" IS NOT NULL;
-- Conditions on values, one index per type, each ending in the object id so a condition's objects come
-- straight from the index (index-only) and a probe for one object is one descent.
CREATE INDEX "metadata_triples_text_idx" ON "metadata_triples" ("attribute", "value", "object_id") WHERE "value_type" = 'text';
CREATE INDEX "metadata_triples_num_idx" ON "metadata_triples" ("attribute", "num", "object_id") WHERE "num" IS NOT NULL;
CREATE INDEX "metadata_triples_time_idx" ON "metadata_triples" ("attribute", "time", "object_id") WHERE "time" IS NOT NULL;
-- Attribute and value are strongly correlated (a value belongs to an attribute): without these the
-- planner multiplies their selectivities and misjudges which condition of a conjunction to start from.
CREATE STATISTICS "metadata_triples_attr_value_stats" (mcv, ndistinct) ON "attribute", "value" FROM "metadata_triples";

-- The few trashed objects, found fast: a facet over the whole catalog leaves them out by an anti-join.
CREATE INDEX "data_objects_trash_id_idx" ON "data_objects"("trash_id");

-- Triples replicate like every other catalog row; after objects and collections (their parents).
INSERT INTO "repl_tables" ("name", "key_column", "local_columns", "rank") VALUES ('metadata_triples', 'id', '{}', 12);
SELECT repl_prepare_tables();
