-- WebDAV dead properties (issue 33; docs/webdav.md, "Properties"): what PROPPATCH sets on a file or
-- folder that is not one of the live properties the catalog computes. One row per entry and
-- property, the property named by its XML namespace and local name; `value` is the property
-- element as sent, serialised (text, or XML with its own namespace declarations).
-- Local: not in repl_tables, so kept at the site where it was set (docs/webdav.md says why). The
-- rows follow their entry through renames and moves (they hang on its id), go to the trash with it
-- (a trashed entry is not reachable) and are removed with it when it is purged (ON DELETE CASCADE).
-- SQL-only, like metadata_triples: one of two owners per row, which Prisma cannot express.
CREATE TABLE "dav_properties" (
    "collection_id" BIGINT REFERENCES "collections"("id") ON DELETE CASCADE,
    "object_id" BIGINT REFERENCES "data_objects"("id") ON DELETE CASCADE,
    "namespace" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "value" TEXT NOT NULL,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    CONSTRAINT "dav_properties_one_owner" CHECK (("collection_id" IS NULL) <> ("object_id" IS NULL)),
    CONSTRAINT "dav_properties_name_length" CHECK (length("name") BETWEEN 1 AND 1024 AND length("namespace") <= 1024)
);

CREATE UNIQUE INDEX "dav_properties_collection_key" ON "dav_properties" ("collection_id", "namespace", "name")
  WHERE "collection_id" IS NOT NULL;
CREATE UNIQUE INDEX "dav_properties_object_key" ON "dav_properties" ("object_id", "namespace", "name")
  WHERE "object_id" IS NOT NULL;
