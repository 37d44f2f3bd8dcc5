-- Two tables derived from metadata_triples for queries (issue 5; docs/metadata.md, "Storage"), kept in
-- step by the statement triggers below, in the same transaction as the triples. Both are local to this
-- site (not replicated: every site derives its own from the triples it holds).
--
-- 1. The text terms of each data object, for conjunctions of equalities.
--
-- A term is `attribute=value` for each text triple (an attribute name cannot contain `=`, so the
-- two parts are never ambiguous). A GIN index over the terms intersects the posting lists of several
-- equalities before any row is read, which a row per triple cannot do: there each further condition
-- is one index probe per candidate object (measured in docs/metadata.md).
CREATE FUNCTION metadata_term(p_attribute TEXT, p_value TEXT) RETURNS TEXT
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (p_attribute || '=' || p_value) COLLATE "C";

CREATE TABLE "metadata_terms" (
    "object_id" BIGINT NOT NULL,
    "terms" TEXT[] COLLATE "C" NOT NULL,
    CONSTRAINT "metadata_terms_pkey" PRIMARY KEY ("object_id"),
    CONSTRAINT "metadata_terms_object_id_fkey" FOREIGN KEY ("object_id") REFERENCES "data_objects"("id") ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE INDEX "metadata_terms_terms_idx" ON "metadata_terms" USING gin ("terms");

-- 2. How many triples of data objects carry each value, for facets over the whole catalog (a count
-- at request time reads every triple of the attribute: 450 ms for a million). Writers only append
-- signed deltas (no row is updated, so concurrent writers never wait for each other);
-- metadata_fold_counts() folds them into one row per value, and a facet adds the two.
CREATE TABLE "metadata_value_counts" (
    "attribute" TEXT NOT NULL,
    "value_type" TEXT NOT NULL,
    "value" TEXT COLLATE "C" NOT NULL,
    "n" BIGINT NOT NULL,
    CONSTRAINT "metadata_value_counts_pkey" PRIMARY KEY ("attribute", "value_type", "value")
);
CREATE TABLE "metadata_value_deltas" (
    "attribute" TEXT NOT NULL,
    "value_type" TEXT NOT NULL,
    "value" TEXT COLLATE "C" NOT NULL,
    "n" BIGINT NOT NULL
);
CREATE INDEX "metadata_value_deltas_attribute_idx" ON "metadata_value_deltas" ("attribute");

-- Folds the deltas into the counts; returns how many deltas it folded. One caller at a time (the
-- others return 0 at once). A delta written by a transaction still open is not visible to the
-- DELETE and stays for the next fold.
CREATE FUNCTION metadata_fold_counts() RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
  v_folded BIGINT;
BEGIN
  IF NOT pg_try_advisory_xact_lock(72616002) THEN
    RETURN 0;
  END IF;
  WITH gone AS (DELETE FROM "metadata_value_deltas" RETURNING *),
  sums AS (SELECT "attribute", "value_type", "value", sum("n") AS n, count(*) AS deltas
             FROM gone GROUP BY 1, 2, 3),
  merged AS (
    INSERT INTO "metadata_value_counts" AS c ("attribute", "value_type", "value", "n")
    SELECT "attribute", "value_type", "value", n FROM sums ORDER BY 1, 2, 3
    ON CONFLICT ("attribute", "value_type", "value") DO UPDATE SET "n" = c."n" + EXCLUDED."n")
  SELECT COALESCE(sum(deltas), 0) INTO v_folded FROM sums;
  DELETE FROM "metadata_value_counts" WHERE "n" = 0;
  RETURN v_folded;
END
$$;

-- Added triples: a delta per value, and their terms merged into the objects' rows. ON CONFLICT DO
-- UPDATE works on the latest committed row, so concurrent writers to one object each add theirs.
CREATE FUNCTION metadata_derive_added() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "metadata_value_deltas" ("attribute", "value_type", "value", "n")
  SELECT "attribute", "value_type", "value", count(*) FROM new_rows WHERE "object_id" IS NOT NULL GROUP BY 1, 2, 3;
  INSERT INTO "metadata_terms" AS m ("object_id", "terms")
  SELECT "object_id", array_agg(DISTINCT metadata_term("attribute", "value"))
    FROM new_rows WHERE "object_id" IS NOT NULL AND "value_type" = 'text'
   GROUP BY "object_id" ORDER BY "object_id"
  ON CONFLICT ("object_id") DO UPDATE
    SET "terms" = ARRAY(SELECT DISTINCT x FROM unnest(m."terms" || EXCLUDED."terms") AS x);
  RETURN NULL;
END
$$;

-- Changed or removed triples: deltas for the values gone and come, and the objects' terms recomputed
-- from their triples. The terms rows are
-- locked first, so the recount (a new snapshot) sees every transaction that changed these objects
-- before; one that changes them later adds its own terms after this one commits.
CREATE FUNCTION metadata_derive_changed() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  v_ids BIGINT[];
BEGIN
  IF TG_OP = 'UPDATE' THEN
    INSERT INTO "metadata_value_deltas" ("attribute", "value_type", "value", "n")
    SELECT "attribute", "value_type", "value", sum(n) FROM (
      SELECT "attribute", "value_type", "value", -1 AS n FROM old_rows WHERE "object_id" IS NOT NULL
      UNION ALL SELECT "attribute", "value_type", "value", 1 FROM new_rows WHERE "object_id" IS NOT NULL) d
     GROUP BY 1, 2, 3 HAVING sum(n) <> 0;
    SELECT array_agg(DISTINCT "object_id" ORDER BY "object_id") INTO v_ids FROM (
      SELECT "object_id" FROM old_rows WHERE "value_type" = 'text'
      UNION ALL SELECT "object_id" FROM new_rows WHERE "value_type" = 'text') c
     WHERE "object_id" IS NOT NULL;
  ELSE
    INSERT INTO "metadata_value_deltas" ("attribute", "value_type", "value", "n")
    SELECT "attribute", "value_type", "value", -count(*) FROM old_rows WHERE "object_id" IS NOT NULL GROUP BY 1, 2, 3;
    SELECT array_agg(DISTINCT "object_id" ORDER BY "object_id") INTO v_ids
      FROM old_rows WHERE "object_id" IS NOT NULL AND "value_type" = 'text';
  END IF;
  IF v_ids IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM 1 FROM "metadata_terms" WHERE "object_id" = ANY (v_ids) ORDER BY "object_id" FOR UPDATE;
  DELETE FROM "metadata_terms" m WHERE m."object_id" = ANY (v_ids) AND NOT EXISTS (
    SELECT 1 FROM "metadata_triples" t WHERE t."object_id" = m."object_id" AND t."value_type" = 'text');
  INSERT INTO "metadata_terms" AS m ("object_id", "terms")
  SELECT t."object_id", array_agg(DISTINCT metadata_term(t."attribute", t."value"))
    FROM "metadata_triples" t JOIN "data_objects" o ON o."id" = t."object_id"
   WHERE t."object_id" = ANY (v_ids) AND t."value_type" = 'text'
   GROUP BY t."object_id" ORDER BY t."object_id"
  ON CONFLICT ("object_id") DO UPDATE SET "terms" = EXCLUDED."terms";
  RETURN NULL;
END
$$;

CREATE TRIGGER "metadata_derive_insert" AFTER INSERT ON "metadata_triples"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metadata_derive_added();
CREATE TRIGGER "metadata_derive_update" AFTER UPDATE ON "metadata_triples"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metadata_derive_changed();
CREATE TRIGGER "metadata_derive_delete" AFTER DELETE ON "metadata_triples"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION metadata_derive_changed();

-- The terms and counts of the triples already there.
INSERT INTO "metadata_terms" ("object_id", "terms")
SELECT "object_id", array_agg(DISTINCT metadata_term("attribute", "value"))
  FROM "metadata_triples" WHERE "object_id" IS NOT NULL AND "value_type" = 'text'
 GROUP BY "object_id";
INSERT INTO "metadata_value_counts" ("attribute", "value_type", "value", "n")
SELECT "attribute", "value_type", "value", count(*) FROM "metadata_triples" WHERE "object_id" IS NOT NULL
 GROUP BY 1, 2, 3;
