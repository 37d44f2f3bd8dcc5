-- Copies at several sites (issue 28; docs/placement.md): placement rules, and the state of each copy.
--
-- placement_rules: "keep `copies` copies of everything below this collection (optionally only what
--   matches a metadata condition), at these sites or at any". A catalog row that replicates like the
--   rest; it follows its collection through renames and goes with it when the collection is purged.
--   `condition` is the query text as written (the metadata query language, checked by the API);
--   `sites` NULL means any site. An expired rule no longer counts. `owner_id` has no foreign key (as
--   created_by): a user's deletion must not take rules, and with them copies, away.
--
-- replicas: the copy states grow from good/stale to the mover's whole cycle:
--   pending (wanted here, no bytes yet), copying (bytes arriving), good (verified against the object's
--   checksum), stale (the object's bytes changed since), suspect (the scrub found the file missing or
--   different), failed (the last attempt failed; `error` says why, retried with backoff).
--   A copy is served only when it is good AND its checksum is the object's: a row that says good for
--   older bytes (a peer's late state) is never served.
--   verified_at: when the bytes were last hashed and found equal to the checksum (copy or scrub).
--   error: why the last attempt or check failed (NULL when it did not).
--   attempts, next_attempt_at: the mover's retry schedule at the copy's own site. Local columns
--   (repl_tables.local_columns): never shipped and never overwritten by a peer, so a retry does not
--   become a replicated change.
--
-- No CHECK constraints: schema.prisma cannot state them (the drift check compares them); the API
-- validates every value it writes.

ALTER TYPE "ReplicaStatus" ADD VALUE IF NOT EXISTS 'pending';
ALTER TYPE "ReplicaStatus" ADD VALUE IF NOT EXISTS 'copying';
ALTER TYPE "ReplicaStatus" ADD VALUE IF NOT EXISTS 'suspect';
ALTER TYPE "ReplicaStatus" ADD VALUE IF NOT EXISTS 'failed';

ALTER TABLE "replicas"
  ADD COLUMN "verified_at" TIMESTAMPTZ(3),
  ADD COLUMN "error" TEXT,
  ADD COLUMN "attempts" INTEGER NOT NULL DEFAULT 0,
  ADD COLUMN "next_attempt_at" TIMESTAMPTZ(3);

-- The mover's queue at each site: its copies that are not good, by when they are due.
CREATE INDEX "replicas_site_id_status_idx" ON "replicas" ("site_id", "status");

CREATE TABLE "placement_rules" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "collection_id" BIGINT NOT NULL,
    "condition" TEXT,
    "copies" INTEGER NOT NULL,
    "sites" TEXT[],
    "expires_at" TIMESTAMPTZ(3),
    "owner_id" BIGINT NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "placement_rules_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "placement_rules_collection_id_fkey" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "placement_rules_collection_id_idx" ON "placement_rules" ("collection_id");

UPDATE "repl_tables" SET "local_columns" = '{attempts,next_attempt_at}' WHERE "name" = 'replicas';
INSERT INTO "repl_tables" ("name", "key_column", "local_columns", "rank") VALUES ('placement_rules', 'id', '{}', 15);
