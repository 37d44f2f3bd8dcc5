-- The tables derived from metadata_triples for queries (docs/metadata.md, "Storage" and "The derived
-- tables"), kept in step by the statement triggers below, in the same transaction as the triples.
-- Both are local to this site (not replicated: every site derives its own from the triples it holds).
-- Current definitions, applied after the migrations on every start (prisma/functions/README.md).
--
-- 1. metadata_terms: one row per data object with any triple, for conjunctions and sorted pages.
--    - terms: `attribute=value` for each text triple (an attribute name cannot contain `=`, so the
--      two parts are never ambiguous). A GIN index over the terms intersects the posting lists of
--      several equalities before any row is read, which a row per triple cannot do: there each
--      further condition is one index probe per candidate object.
--    - measure_keys, measures: the object's numbers and times, so a conjunction that starts from the
--      terms checks its ranges on the row it has already read. A measure is a key, `n:attribute` for
--      a number or `t:attribute` for a time, and a value: the number, or the time in milliseconds
--      since 1970 (times have millisecond precision, so the value is an exact integer); two arrays in
--      the same order.
--    - name: the object's name, so a page sorted by name sorts the terms rows the GIN search has read.
--      A new row takes the name the object has when its first triples are added; a rename updates it
--      (metadata_terms_follow_name). A rename and a first tag of the same object at once could
--      otherwise each miss the other: the tag holds the object FOR KEY SHARE
--      (metadata_require_targets) before it reads the name; the rename holds it FOR UPDATE, which
--      waits for that lock (and makes a later tag's lock wait for the rename), before it updates the
--      terms row in a snapshot of its own.
--    The row goes when the object's last triple goes.
-- 2. metadata_value_counts (+ metadata_value_deltas): how many triples of data objects carry each
--    value, for facets over the whole catalog, kept only for the attributes a whole-catalog facet has
--    asked about at this site (metadata_counted_attributes, metadata_count_attribute). Writers only
--    append signed deltas (no row is updated, so concurrent writers never wait for each other);
--    metadata_fold_counts() folds them into one row per value, and a facet adds the two.

-- A text triple's term. Queries call it too (apps/api/src/metadata/query-compiler.ts), as they call
-- the two measure functions below; the rows already stored were made with it, so a change of its
-- form needs them rebuilt (metadata_rederive_terms).
CREATE OR REPLACE FUNCTION metadata_term(p_attribute TEXT, p_value TEXT) RETURNS TEXT
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (p_attribute || '=' || p_value) COLLATE "C";

-- A number's or a time's measure key; NULL for a text triple.
CREATE OR REPLACE FUNCTION metadata_measure_key(p_type TEXT, p_attribute TEXT) RETURNS TEXT
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE p_type WHEN 'number' THEN ('n:' || p_attribute) COLLATE "C"
                     WHEN 'time' THEN ('t:' || p_attribute) COLLATE "C" END;

-- A time as a measure: milliseconds since 1970.
CREATE OR REPLACE FUNCTION metadata_time_measure(p_time TIMESTAMPTZ) RETURNS DOUBLE PRECISION
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (extract(epoch FROM p_time) * 1000)::DOUBLE PRECISION;

-- Folds the deltas into the counts; returns how many deltas it folded. One caller at a time (the
-- others return 0 at once). A delta written by a transaction still open is not visible to the
-- DELETE and stays for the next fold. Only the values this fold changed can have reached zero, so
-- only those are looked up (by the primary key) and removed, not found by a scan of every count.
CREATE OR REPLACE FUNCTION metadata_fold_counts() RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
  v_folded BIGINT;
  v_attributes TEXT[];
  v_types TEXT[];
  v_values TEXT[];
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
    ON CONFLICT ("attribute", "value_type", "value") DO UPDATE SET "n" = c."n" + EXCLUDED."n"
    RETURNING c."attribute", c."value_type", c."value", c."n")
  SELECT s.folded, z.attributes, z.types, z.vals INTO v_folded, v_attributes, v_types, v_values
    FROM (SELECT COALESCE(sum(deltas), 0) AS folded FROM sums) s,
         (SELECT array_agg("attribute") AS attributes, array_agg("value_type") AS types, array_agg("value") AS vals
            FROM merged WHERE "n" = 0) z;
  IF v_attributes IS NOT NULL THEN
    DELETE FROM "metadata_value_counts" c
     USING unnest(v_attributes, v_types, v_values) AS z("attribute", "value_type", "value")
     WHERE c."attribute" = z."attribute" AND c."value_type" = z."value_type" AND c."value" = z."value"
       AND c."n" = 0;
  END IF;
  RETURN v_folded;
END
$$;

-- Starts counting an attribute (nothing to do when it is counted already). The SHARE lock waits for
-- every transaction writing triples to end and holds new writers back until this one commits, so the
-- count (a snapshot taken after the lock) and the deltas written from then on (by writers that see
-- the attribute registered) neither miss nor repeat a triple. Two first facets on one attribute at
-- once: the second waits on the first's registration and then has nothing to do.
CREATE OR REPLACE FUNCTION metadata_count_attribute(p_attribute TEXT) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM "metadata_counted_attributes" WHERE "attribute" = p_attribute) THEN
    RETURN;
  END IF;
  LOCK TABLE "metadata_triples" IN SHARE MODE;
  INSERT INTO "metadata_counted_attributes" ("attribute") VALUES (p_attribute) ON CONFLICT DO NOTHING;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  -- One branch per value type, each an index range of that type's (attribute, value, object_id) index.
  INSERT INTO "metadata_value_counts" ("attribute", "value_type", "value", "n")
  SELECT "attribute", "value_type", "value", count(*) FROM (
    SELECT "attribute", "value_type", "value" FROM "metadata_triples"
     WHERE "value_type" = 'text' AND "attribute" = p_attribute AND "object_id" IS NOT NULL
    UNION ALL
    SELECT "attribute", "value_type", "value" FROM "metadata_triples"
     WHERE "num" IS NOT NULL AND "attribute" = p_attribute AND "object_id" IS NOT NULL
    UNION ALL
    SELECT "attribute", "value_type", "value" FROM "metadata_triples"
     WHERE "time" IS NOT NULL AND "attribute" = p_attribute AND "object_id" IS NOT NULL) t
   GROUP BY 1, 2, 3;
END
$$;

-- The terms rows of the objects `p_ids` recomputed from their triples, with each object's current
-- name: the rows are locked first, so the recount (a new snapshot) sees every transaction that
-- changed these objects before; an object with no triple left loses its row. Each object's triples
-- are read by one probe of the (object_id, attribute) index (the value type is an aggregate FILTER,
-- not a WHERE, which let the planner take the partial text index with a skip scan, far slower).
CREATE OR REPLACE FUNCTION metadata_rederive_terms(p_ids BIGINT[]) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM "metadata_terms" WHERE "object_id" = ANY (p_ids) ORDER BY "object_id" FOR UPDATE;
  WITH now AS (
    SELECT i.id AS object_id, count(t."id") AS triples,
           COALESCE(array_agg(DISTINCT metadata_term(t."attribute", t."value")) FILTER (WHERE t."value_type" = 'text'), '{}') AS terms,
           COALESCE(array_agg(metadata_measure_key(t."value_type", t."attribute") ORDER BY t."id") FILTER (WHERE t."value_type" <> 'text'), '{}') AS measure_keys,
           COALESCE(array_agg(COALESCE(t."num", metadata_time_measure(t."time")) ORDER BY t."id") FILTER (WHERE t."value_type" <> 'text'), '{}') AS measures
      FROM unnest(p_ids) AS i(id) LEFT JOIN LATERAL (
        SELECT t."id", t."attribute", t."value", t."value_type", t."num", t."time"
          FROM "metadata_triples" t WHERE t."object_id" = i.id OFFSET 0) t ON true
     GROUP BY i.id
  ), emptied AS (
    DELETE FROM "metadata_terms" m USING now WHERE m."object_id" = now.object_id AND now.triples = 0)
  INSERT INTO "metadata_terms" AS m ("object_id", "terms", "measure_keys", "measures", "name")
  SELECT now.object_id, now.terms, now.measure_keys, now.measures, o."name" FROM now JOIN "data_objects" o ON o."id" = now.object_id
   WHERE now.triples > 0 ORDER BY now.object_id
  ON CONFLICT ("object_id") DO UPDATE
    SET "terms" = EXCLUDED."terms", "measure_keys" = EXCLUDED."measure_keys", "measures" = EXCLUDED."measures",
        "name" = EXCLUDED."name";
END
$$;

-- Added triples: a delta per value of a counted attribute, and their terms and measures merged into
-- the objects' rows; a new row gets its object's name (one probe of the object's primary key per
-- object, which the target check has just locked). ON CONFLICT DO UPDATE works on the latest
-- committed row, so concurrent writers to one object each add theirs.
CREATE OR REPLACE FUNCTION metadata_derive_added() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM "metadata_counted_attributes") THEN
    INSERT INTO "metadata_value_deltas" ("attribute", "value_type", "value", "n")
    SELECT "attribute", "value_type", "value", count(*) FROM new_rows
     WHERE "object_id" IS NOT NULL AND "attribute" IN (SELECT "attribute" FROM "metadata_counted_attributes")
     GROUP BY 1, 2, 3;
  END IF;
  INSERT INTO "metadata_terms" AS m ("object_id", "terms", "measure_keys", "measures", "name")
  SELECT g."object_id", g."terms", g."measure_keys", g."measures",
         (SELECT o."name" FROM "data_objects" o WHERE o."id" = g."object_id")
    FROM (SELECT "object_id",
                 COALESCE(array_agg(DISTINCT metadata_term("attribute", "value")) FILTER (WHERE "value_type" = 'text'), '{}') AS "terms",
                 COALESCE(array_agg(metadata_measure_key("value_type", "attribute") ORDER BY "id") FILTER (WHERE "value_type" <> 'text'), '{}') AS "measure_keys",
                 COALESCE(array_agg(COALESCE("num", metadata_time_measure("time")) ORDER BY "id") FILTER (WHERE "value_type" <> 'text'), '{}') AS "measures"
            FROM new_rows WHERE "object_id" IS NOT NULL
           GROUP BY "object_id") g
   ORDER BY g."object_id"
  ON CONFLICT ("object_id") DO UPDATE
    SET "terms" = CASE WHEN EXCLUDED."terms" = '{}' THEN m."terms"
                       ELSE ARRAY(SELECT DISTINCT x FROM unnest(m."terms" || EXCLUDED."terms") AS x) END,
        "measure_keys" = m."measure_keys" || EXCLUDED."measure_keys",
        "measures" = m."measures" || EXCLUDED."measures";
  RETURN NULL;
END
$$;

-- Changed or removed triples (of every type: a changed number changes the measures): deltas for the
-- values of counted attributes gone and come, and the objects' rows recomputed.
CREATE OR REPLACE FUNCTION metadata_derive_changed() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  v_ids BIGINT[];
  v_counting BOOLEAN := EXISTS (SELECT 1 FROM "metadata_counted_attributes");
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF v_counting THEN
      INSERT INTO "metadata_value_deltas" ("attribute", "value_type", "value", "n")
      SELECT "attribute", "value_type", "value", sum(n) FROM (
        SELECT "attribute", "value_type", "value", -1 AS n FROM old_rows WHERE "object_id" IS NOT NULL
        UNION ALL SELECT "attribute", "value_type", "value", 1 FROM new_rows WHERE "object_id" IS NOT NULL) d
       WHERE "attribute" IN (SELECT "attribute" FROM "metadata_counted_attributes")
       GROUP BY 1, 2, 3 HAVING sum(n) <> 0;
    END IF;
    SELECT array_agg(DISTINCT "object_id" ORDER BY "object_id") INTO v_ids FROM (
      SELECT "object_id" FROM old_rows UNION ALL SELECT "object_id" FROM new_rows) c
     WHERE "object_id" IS NOT NULL;
  ELSE
    IF v_counting THEN
      INSERT INTO "metadata_value_deltas" ("attribute", "value_type", "value", "n")
      SELECT "attribute", "value_type", "value", -count(*) FROM old_rows
       WHERE "object_id" IS NOT NULL AND "attribute" IN (SELECT "attribute" FROM "metadata_counted_attributes")
       GROUP BY 1, 2, 3;
    END IF;
    SELECT array_agg(DISTINCT "object_id" ORDER BY "object_id") INTO v_ids
      FROM old_rows WHERE "object_id" IS NOT NULL;
  END IF;
  IF v_ids IS NULL THEN
    RETURN NULL;
  END IF;
  PERFORM metadata_rederive_terms(v_ids);
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "metadata_derive_insert" ON "metadata_triples";
CREATE TRIGGER "metadata_derive_insert" AFTER INSERT ON "metadata_triples"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metadata_derive_added();

DROP TRIGGER IF EXISTS "metadata_derive_update" ON "metadata_triples";
CREATE TRIGGER "metadata_derive_update" AFTER UPDATE ON "metadata_triples"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metadata_derive_changed();

DROP TRIGGER IF EXISTS "metadata_derive_delete" ON "metadata_triples";
CREATE TRIGGER "metadata_derive_delete" AFTER DELETE ON "metadata_triples"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION metadata_derive_changed();

-- A renamed object's terms row follows its name. Per row, and only for renames: other updates of
-- objects (sizes, times, trash) do not fire it.
CREATE OR REPLACE FUNCTION metadata_terms_follow_name() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM "data_objects" WHERE "id" = NEW."id" FOR UPDATE;
  UPDATE "metadata_terms" SET "name" = NEW."name" WHERE "object_id" = NEW."id" AND "name" IS DISTINCT FROM NEW."name";
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "metadata_terms_follow_name" ON "data_objects";
CREATE TRIGGER "metadata_terms_follow_name" AFTER UPDATE OF "name" ON "data_objects"
  FOR EACH ROW WHEN (OLD."name" IS DISTINCT FROM NEW."name") EXECUTE FUNCTION metadata_terms_follow_name();
