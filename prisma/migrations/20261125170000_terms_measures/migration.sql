-- Each object's terms row also carries its numbers and times ("measures"), so a conjunction that
-- starts from the terms (two or more text equalities) checks its ranges on the row it has already
-- read instead of probing the triples once per candidate (docs/metadata.md, "Storage"). At ten
-- million triples the conjunctive query of the benchmark read 4,495 buffers, 2,040 of them in those
-- probes (four per candidate).
--
-- A measure is a key, `n:attribute` for a number or `t:attribute` for a time, and a value: the
-- number, or the time in milliseconds since 1970 (times have millisecond precision, so the value is
-- an exact integer). The keys and values are two arrays in the same order. A row now exists for
-- every object with any triple (its terms may be empty); it goes when the object's last triple goes.
ALTER TABLE "metadata_terms"
  ADD COLUMN "measure_keys" TEXT[] COLLATE "C" NOT NULL DEFAULT '{}',
  ADD COLUMN "measures" DOUBLE PRECISION[] NOT NULL DEFAULT '{}';

CREATE FUNCTION metadata_measure_key(p_type TEXT, p_attribute TEXT) RETURNS TEXT
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN CASE p_type WHEN 'number' THEN ('n:' || p_attribute) COLLATE "C"
                     WHEN 'time' THEN ('t:' || p_attribute) COLLATE "C" END;

CREATE FUNCTION metadata_time_measure(p_time TIMESTAMPTZ) RETURNS DOUBLE PRECISION
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  RETURN (extract(epoch FROM p_time) * 1000)::DOUBLE PRECISION;

-- Added triples: as in 20261122200000_metadata_terms, with the measures appended to the row.
CREATE OR REPLACE FUNCTION metadata_derive_added() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "metadata_value_deltas" ("attribute", "value_type", "value", "n")
  SELECT "attribute", "value_type", "value", count(*) FROM new_rows WHERE "object_id" IS NOT NULL GROUP BY 1, 2, 3;
  INSERT INTO "metadata_terms" AS m ("object_id", "terms", "measure_keys", "measures")
  SELECT "object_id",
         COALESCE(array_agg(DISTINCT metadata_term("attribute", "value")) FILTER (WHERE "value_type" = 'text'), '{}'),
         COALESCE(array_agg(metadata_measure_key("value_type", "attribute") ORDER BY "id") FILTER (WHERE "value_type" <> 'text'), '{}'),
         COALESCE(array_agg(COALESCE("num", metadata_time_measure("time")) ORDER BY "id") FILTER (WHERE "value_type" <> 'text'), '{}')
    FROM new_rows WHERE "object_id" IS NOT NULL
   GROUP BY "object_id" ORDER BY "object_id"
  ON CONFLICT ("object_id") DO UPDATE
    SET "terms" = CASE WHEN EXCLUDED."terms" = '{}' THEN m."terms"
                       ELSE ARRAY(SELECT DISTINCT x FROM unnest(m."terms" || EXCLUDED."terms") AS x) END,
        "measure_keys" = m."measure_keys" || EXCLUDED."measure_keys",
        "measures" = m."measures" || EXCLUDED."measures";
  RETURN NULL;
END
$$;

-- The terms rows of the objects `p_ids` recomputed from their triples: the rows are locked first, so
-- the recount (a new snapshot) sees every transaction that changed these objects before; an object
-- with no triple left loses its row. Used by the trigger below and to fill the new columns.
CREATE FUNCTION metadata_rederive_terms(p_ids BIGINT[]) RETURNS VOID LANGUAGE plpgsql AS $$
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
  INSERT INTO "metadata_terms" AS m ("object_id", "terms", "measure_keys", "measures")
  SELECT now.object_id, now.terms, now.measure_keys, now.measures FROM now JOIN "data_objects" o ON o."id" = now.object_id
   WHERE now.triples > 0 ORDER BY now.object_id
  ON CONFLICT ("object_id") DO UPDATE
    SET "terms" = EXCLUDED."terms", "measure_keys" = EXCLUDED."measure_keys", "measures" = EXCLUDED."measures";
END
$$;

-- Changed or removed triples: as in 20261125000000_statement_capture, for triples of every type (a
-- changed number changes the measures), and the row removed when the object has no triple left.
CREATE OR REPLACE FUNCTION metadata_derive_changed() RETURNS TRIGGER LANGUAGE plpgsql AS $$
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
      SELECT "object_id" FROM old_rows UNION ALL SELECT "object_id" FROM new_rows) c
     WHERE "object_id" IS NOT NULL;
  ELSE
    INSERT INTO "metadata_value_deltas" ("attribute", "value_type", "value", "n")
    SELECT "attribute", "value_type", "value", -count(*) FROM old_rows WHERE "object_id" IS NOT NULL GROUP BY 1, 2, 3;
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

-- The rows of the triples already there, rebuilt with their measures.
SELECT metadata_rederive_terms(ARRAY(SELECT DISTINCT "object_id" FROM "metadata_triples" WHERE "object_id" IS NOT NULL ORDER BY 1));

-- Rewriting every row left the GIN index with an entry for each old and new row version: at ten million
-- triples a conjunction's search took 5 ms instead of 1.1 ms until the index was rebuilt (7 s).
REINDEX INDEX "metadata_terms_terms_idx";
