-- Saved searches (issue 6): a user's named metadata queries, kept in the catalog so they follow the
-- user to every site and every browser. Ids come from the site's slice of catalog_id_seq like every
-- other replicated row, so two sites never hand out the same id.
--
-- Names are not unique in the table: two sites may each save a search under the same name before they
-- exchange, and a unique index would turn that into a failed injection. The API refuses a duplicate
-- name at the site where it is made (409 NAME_TAKEN); the rare pair from two sites simply lists twice.
CREATE TABLE "saved_searches" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "user_id" BIGINT NOT NULL,
    "name" TEXT NOT NULL,
    "query" TEXT NOT NULL,
    "scope" TEXT NOT NULL DEFAULT '/',
    "kind" TEXT NOT NULL DEFAULT 'object',
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "saved_searches_pkey" PRIMARY KEY ("id")
);

-- A user's list, by name then id (the keyset of GET /api/v1/saved-searches).
CREATE INDEX "saved_searches_user_id_name_id_idx" ON "saved_searches"("user_id", "name", "id");

ALTER TABLE "saved_searches" ADD CONSTRAINT "saved_searches_user_id_fkey" FOREIGN KEY ("user_id") REFERENCES "users"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Replicates like the user's tokens; references only users (rank 4).
INSERT INTO "repl_tables" ("name", "key_column", "local_columns", "rank") VALUES ('saved_searches', 'id', '{}', 14);
SELECT repl_prepare_tables();
