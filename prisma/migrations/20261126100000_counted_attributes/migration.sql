-- Value counts are kept for the attributes that whole-catalog facets ask about, not for every
-- attribute (docs/metadata.md, "The derived tables"). Counting every value of every attribute wrote
-- about 28,000 deltas per 100,000 triples of the Table 5 load, most of them for values that occur
-- once (names, sizes, dates: 4.8 million counts at ten million triples) and that nobody facets on,
-- and their fold upserted each into a table of millions of rows: about a tenth of the load's CPU.
--
-- An attribute is counted from the first whole-catalog facet on it at this site
-- (`metadata_count_attribute`): that call counts its triples once, and from then on the triggers
-- append deltas for it as before. Counting is local to the site, like the counts.
CREATE TABLE "metadata_counted_attributes" (
    "attribute" TEXT NOT NULL,
    "counted_since" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    CONSTRAINT "metadata_counted_attributes_pkey" PRIMARY KEY ("attribute")
);

-- Starts counting an attribute (nothing to do when it is counted already). The SHARE lock waits for
-- every transaction writing triples to end and holds new writers back until this one commits, so the
-- count (a snapshot taken after the lock) and the deltas written from then on (by writers that see
-- the attribute registered) neither miss nor repeat a triple. Two first facets on one attribute at
-- once: the second waits on the first's registration and then has nothing to do.
CREATE FUNCTION metadata_count_attribute(p_attribute TEXT) RETURNS VOID LANGUAGE plpgsql AS $$
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

-- Added triples: as in 20261125170000_terms_measures, with deltas for counted attributes only.
CREATE OR REPLACE FUNCTION metadata_derive_added() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  IF EXISTS (SELECT 1 FROM "metadata_counted_attributes") THEN
    INSERT INTO "metadata_value_deltas" ("attribute", "value_type", "value", "n")
    SELECT "attribute", "value_type", "value", count(*) FROM new_rows
     WHERE "object_id" IS NOT NULL AND "attribute" IN (SELECT "attribute" FROM "metadata_counted_attributes")
     GROUP BY 1, 2, 3;
  END IF;
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

-- Changed or removed triples: as in 20261125170000_terms_measures, with deltas for counted attributes
-- only.
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

-- Existing sites: counting starts afresh, attribute by attribute, at each one's first facet.
TRUNCATE "metadata_value_counts", "metadata_value_deltas";
