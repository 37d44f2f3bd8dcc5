-- Conflict negotiation (docs/conflicts.md): the records people decide on, default policies per
-- collection, purge only once a delete is applied everywhere.
--
-- Like the replication tables these two are read and written with SQL (apps/api/src/conflicts and
-- packages/replication), so schema.prisma does not model them.

-- One conflict: the concurrent versions of a record (or, for `same-name`, the two records that took
-- one name), which one stands provisionally, until when people may decide, and the decision.
-- Replicated: every site that detects a conflict writes it under an id every site computes alike
-- (from the record and the version the concurrent changes were based on); copies of one conflict
-- merge (the union of their versions), and a decision replicates like any change. Every column is
-- derived from replicated data, so the copies are equal everywhere.
CREATE TABLE "conflicts" (
    "id" TEXT NOT NULL,
    -- update | delete | same-name
    "kind" TEXT NOT NULL,
    "tbl" TEXT NOT NULL,
    "row_key" TEXT NOT NULL,
    -- [{ "site", "stamp", "deleted", "by", "data" }], ordered by (stamp, site)
    "versions" JSONB NOT NULL,
    "winner_site" TEXT NOT NULL,
    "winner_stamp" BIGINT NOT NULL,
    -- kind-specific facts, e.g. for same-name { "name", "renamedTo", "other" }
    "detail" JSONB NOT NULL DEFAULT '{}',
    -- the collection the record belongs to (permissions, policies); no reference: it may be gone
    "collection_id" BIGINT,
    "opened_at" TIMESTAMPTZ(3) NOT NULL,
    "deadline" TIMESTAMPTZ(3) NOT NULL,
    -- open | decided (an open conflict past its deadline is final: its provisional winner stands)
    "status" TEXT NOT NULL DEFAULT 'open',
    -- keep | choose | merge | rename, and by whom (a user, or a collection's policy)
    "decision" TEXT,
    "decided_value" JSONB,
    "decided_by" BIGINT,
    "decided_by_name" TEXT,
    "decided_policy" TEXT,
    "decided_at" TIMESTAMPTZ(3),
    "decided_at_site" TEXT,

    CONSTRAINT "conflicts_pkey" PRIMARY KEY ("id")
);
CREATE INDEX "conflicts_opened_at_idx" ON "conflicts" ("opened_at" DESC, "id" DESC);
CREATE INDEX "conflicts_record_idx" ON "conflicts" ("tbl", "row_key");
CREATE INDEX "conflicts_status_deadline_idx" ON "conflicts" ("status", "deadline");

-- A collection owner's default decision for one kind of conflict on what lies below the collection:
-- keep (the provisional winner stands at once), prefer-site (that site's version), newest.
CREATE TABLE "conflict_policies" (
    "id" BIGINT NOT NULL DEFAULT nextval('catalog_id_seq'::regclass),
    "collection_id" BIGINT NOT NULL,
    "kind" TEXT NOT NULL,
    "policy" TEXT NOT NULL,
    "site" TEXT,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "created_by" BIGINT,
    "updated_by" BIGINT,

    CONSTRAINT "conflict_policies_pkey" PRIMARY KEY ("id"),
    CONSTRAINT "conflict_policies_collection_id_fkey" FOREIGN KEY ("collection_id") REFERENCES "collections"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE UNIQUE INDEX "conflict_policies_collection_id_kind_key" ON "conflict_policies" ("collection_id", "kind");

-- Set by the deleting site once every peer has applied the delete: from then on it may be purged.
ALTER TABLE "trash_entries" ADD COLUMN "settled_at" TIMESTAMPTZ(3);

-- What each peer has applied of this site's transactions (reported with its acknowledgements).
ALTER TABLE "repl_peers" ADD COLUMN "peer_applied_seq" BIGINT NOT NULL DEFAULT 0;

INSERT INTO "repl_tables" ("name", "key_column", "local_columns", "rank") VALUES
    ('conflicts', 'id', '{}', 12),
    ('conflict_policies', 'id', '{}', 13);

SELECT repl_prepare_tables();
