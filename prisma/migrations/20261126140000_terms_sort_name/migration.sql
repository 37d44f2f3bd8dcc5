-- Each object's terms row also carries the object's name, so a page of objects sorted by name whose
-- condition the terms answer (docs/metadata.md, "How a query runs") sorts the terms rows the GIN
-- search has read and looks up only the page's objects, instead of reading every match's object to
-- sort: on a catalog of three million triples, 1,531 matches, 7.4 against 3.0 ms at the median.
--
-- The name is kept in step with the object:
-- - a new terms row takes the name the object has when its first triples are added;
-- - a rename updates the object's terms row (`metadata_terms_follow_name`, below).
-- A rename and a first tag of the same object at once could otherwise each miss the other (the rename
-- updates no terms row yet, the tag writes the name it read before the rename committed). The tag
-- holds the object FOR KEY SHARE (`metadata_require_targets`) before it reads the name; the rename
-- holds it FOR UPDATE, which waits for that lock (and makes a later tag's lock wait for the rename),
-- before it updates the terms row in a snapshot of its own. A rename takes that lock already, since
-- the name is part of a unique key of `data_objects`; the trigger takes it explicitly so that this
-- does not depend on that index.
ALTER TABLE "metadata_terms" ADD COLUMN "name" TEXT;

-- Filled with the GIN index dropped: updating every row would otherwise add an index entry for each
-- new row version (see 20261125170000_terms_measures).
DROP INDEX "metadata_terms_terms_idx";
UPDATE "metadata_terms" m SET "name" = o."name" FROM "data_objects" o WHERE o."id" = m."object_id";
ALTER TABLE "metadata_terms" ALTER COLUMN "name" SET NOT NULL;
CREATE INDEX "metadata_terms_terms_idx" ON "metadata_terms" USING gin ("terms");

-- Added triples: as in 20261126100000_counted_attributes, a new row with its object's name (one
-- probe of the object's primary key per object, which the target check has just locked).
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

-- Changed or removed triples: as in 20261125170000_terms_measures, the row rebuilt with its object's
-- current name.
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

-- A renamed object's terms row follows its name. Per row, and only for renames: other updates of
-- objects (sizes, times, trash) do not fire it.
CREATE FUNCTION metadata_terms_follow_name() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM 1 FROM "data_objects" WHERE "id" = NEW."id" FOR UPDATE;
  UPDATE "metadata_terms" SET "name" = NEW."name" WHERE "object_id" = NEW."id" AND "name" IS DISTINCT FROM NEW."name";
  RETURN NULL;
END
$$;

CREATE TRIGGER "metadata_terms_follow_name" AFTER UPDATE OF "name" ON "data_objects"
  FOR EACH ROW WHEN (OLD."name" IS DISTINCT FROM NEW."name") EXECUTE FUNCTION metadata_terms_follow_name();
