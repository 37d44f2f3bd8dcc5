-- Change capture per statement for updates and deletes too, on the tables written in bulk (metadata
-- triples: bulk tagging changes or removes 100,000 triples in one statement). The row trigger costs
-- about 40 µs a row (PL/pgSQL, a version lookup and two single-row writes): 4.1 s of a 7.3 s update
-- of 100,000 triples and 3.7 s of a 4.4 s delete, measured on a catalog of two million triples
-- (docs/metadata.md). Statement triggers write the same changes and versions with set-based
-- statements over the transition tables.
--
-- What is captured is what the row trigger captures: per row one `U` or `D` change, stamped later than
-- the version this site holds (and at least the statement's clock), based on that version; the row's
-- version in repl_versions. An update that changes nothing replicated is not a change. Each row's held
-- version is found by one index probe (a lateral subquery), never by a join over the whole version
-- table.
--
-- Inserts and updates are captured as batch changes, in columns: `{"id": [...], "object_id": [...],
-- ...}`, one array per replicated column (row_key the key column's name, row_count its rows, at most
-- 10,000). A batch of inserts (op `B`) shares the statement's stamp; a batch of updates (op `V`) holds
-- `{"rows": {columns}, "s": [stamps], "b": [base stamps], "bs": [base sites]}`. Making a JSON image
-- and a change row per inserted row was 1.5 s of a 3.3 s insert of 100,000 triples; the columns take
-- about 0.2 s. The log carries batches as captured (and peers receive them so, about half the bytes);
-- the peer's collector unfolds each into the per-row changes it stands for, so nothing after the
-- collector sees a batch. Each row's version is written here as before.
--
-- Writes the injector makes for a peer are not captured; a row trigger stays on deletes for them only
-- (its WHEN clause leaves local deletes alone), because a row removed by the cascade of a peer's
-- delete is kept aside with its version (repl_parked), as before.
ALTER TABLE "repl_tables" RENAME COLUMN "statement_inserts" TO "statement_capture";
ALTER TABLE "repl_tables" ADD COLUMN "batch_capture_sql" TEXT, ADD COLUMN "batch_update_sql" TEXT;
ALTER TABLE "repl_changes" ADD COLUMN "row_count" INTEGER NOT NULL DEFAULT 1;

-- enable_bitmapscan off: the planner costs the per-row version probe as a bitmap scan, six times
-- slower here than the plain index scan it takes otherwise.
CREATE FUNCTION repl_capture_statement() RETURNS TRIGGER LANGUAGE plpgsql SET enable_bitmapscan = off AS $$
DECLARE
  v_key TEXT := TG_ARGV[0];
  v_locals TEXT[] := TG_ARGV[1:];
  v_tbl TEXT := TG_TABLE_NAME::TEXT;
  v_site TEXT;
  v_stamp BIGINT;
BEGIN
  IF current_setting('tributary.capture', true) = 'off'
     OR NULLIF(current_setting('tributary.origin', true), '') IS NOT NULL THEN
    RETURN NULL;
  END IF;
  v_site := repl_local_site();
  IF v_site IS NULL THEN
    RAISE EXCEPTION 'catalog has no local site yet: register the site before changing replicated tables';
  END IF;
  v_stamp := (extract(epoch FROM clock_timestamp()) * 1000000)::BIGINT;
  IF TG_OP = 'INSERT' THEN
    -- New rows (ids are never reused): no version to build on; one stamp for the statement.
    EXECUTE (SELECT "batch_capture_sql" FROM "repl_tables" WHERE "name" = v_tbl) USING v_stamp, v_site;
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    EXECUTE (SELECT "batch_update_sql" FROM "repl_tables" WHERE "name" = v_tbl) USING v_stamp, v_site;
    RETURN NULL;
  END IF;
  -- A delete: per row its old image, based on the version held here (built here: the key column is
  -- the table's).
  EXECUTE format($sql$
    WITH versioned AS (
      SELECT o.%1$I::text AS k, to_jsonb(o) - $3 AS d, GREATEST($1, COALESCE(h."stamp", 0) + 1) AS stamp,
             h."stamp" AS base_stamp, h."site" AS base_site
        FROM old_rows o LEFT JOIN LATERAL (
          SELECT "stamp", "site" FROM "repl_versions" WHERE "tbl" = $2 AND "row_key" = o.%1$I::text OFFSET 0) h ON true
    ), captured AS (
      INSERT INTO "repl_changes" ("tbl", "op", "row_key", "data", "stamp", "base_stamp", "base_site")
      SELECT $2, 'D', k, d, stamp, base_stamp, base_site FROM versioned
      RETURNING "row_key", "stamp")
    INSERT INTO "repl_versions" AS v ("tbl", "row_key", "stamp", "site", "deleted")
    SELECT $2, "row_key", "stamp", $4, true FROM captured
    ON CONFLICT ("tbl", "row_key") DO UPDATE
      SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = EXCLUDED."deleted",
          "base_stamp" = v."stamp", "base_site" = v."site"
    $sql$, v_key)
  USING v_stamp, v_tbl, v_locals, v_site;
  RETURN NULL;
END
$$;

-- A held version remembers the one it replaced (repl_versions_base, a row trigger in PL/pgSQL). The
-- set-based capture above writes that base itself, so the trigger now runs only for writers that
-- change the version without naming its base: the same result, without a PL/pgSQL call per row for
-- the writers that do.
DROP TRIGGER "repl_versions_base" ON "repl_versions";
CREATE TRIGGER "repl_versions_base" BEFORE UPDATE ON "repl_versions" FOR EACH ROW
  WHEN ((NEW."stamp" IS DISTINCT FROM OLD."stamp" OR NEW."site" IS DISTINCT FROM OLD."site")
        AND NEW."base_stamp" IS NOT DISTINCT FROM OLD."base_stamp"
        AND NEW."base_site" IS NOT DISTINCT FROM OLD."base_site")
  EXECUTE FUNCTION repl_versions_base();

CREATE OR REPLACE FUNCTION repl_prepare_tables() RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  t RECORD;
  v_cols TEXT;
  v_sets TEXT;
  v_keytype TEXT;
  v_args TEXT;
BEGIN
  FOR t IN SELECT * FROM "repl_tables" LOOP
    SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum),
           string_agg(format('%1$I = r.%1$I', a.attname), ', ' ORDER BY a.attnum)
             FILTER (WHERE a.attname <> t."key_column")
      INTO v_cols, v_sets
      FROM pg_attribute a
     WHERE a.attrelid = t."name"::regclass AND a.attnum > 0 AND NOT a.attisdropped
       AND a.attname <> ALL (t."local_columns");
    SELECT format_type(a.atttypid, a.atttypmod) INTO v_keytype
      FROM pg_attribute a WHERE a.attrelid = t."name"::regclass AND a.attname = t."key_column";
    UPDATE "repl_tables" SET
      "insert_sql" = format('INSERT INTO %1$I (%2$s) SELECT %2$s FROM jsonb_populate_record(NULL::%1$I, $1)', t."name", v_cols),
      "bulk_insert_sql" = format('INSERT INTO %1$I (%2$s) SELECT %2$s FROM jsonb_populate_recordset(NULL::%1$I, $1)', t."name", v_cols),
      "update_sql" = format('UPDATE %1$I t SET %2$s FROM jsonb_populate_record(NULL::%1$I, $1) r WHERE t.%3$I = r.%3$I', t."name", v_sets, t."key_column"),
      "delete_sql" = format('DELETE FROM %1$I WHERE %2$I = ($1 ->> %3$L)::%4$s', t."name", t."key_column", t."key_column", v_keytype)
    WHERE "name" = t."name";
    -- A statement's inserts in columns (one array per replicated column, all in the same order), in
    -- batches of 10,000 rows (a JSON value is limited to 256 MB, and peers receive about 10,000 changes
    -- a request), and each row's version ($1 the stamp, $2 this site).
    UPDATE "repl_tables" SET "batch_capture_sql" = format(
      'WITH b AS (
         SELECT count(*)::int AS n, jsonb_build_object(%1$s) AS d
           FROM (SELECT n.*, (row_number() OVER () - 1) / 10000 AS part FROM new_rows n) n GROUP BY part),
       captured AS (
         INSERT INTO "repl_changes" ("tbl", "op", "row_key", "data", "stamp", "row_count")
         SELECT %2$L, ''B'', %3$L, d, $1, n FROM b)
       INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
       SELECT %2$L, n.%4$I::text, $1, $2, false FROM new_rows n
       ON CONFLICT ("tbl", "row_key") DO UPDATE
         SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = EXCLUDED."deleted"',
      (SELECT string_agg(format('%1$L, array_agg(n.%1$I)', a.attname), ', ' ORDER BY a.attnum)
         FROM pg_attribute a
        WHERE a.attrelid = t."name"::regclass AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attname <> ALL (t."local_columns")),
      t."name", t."key_column", t."key_column")
    WHERE "name" = t."name" AND t."statement_capture";
    -- A statement's updates in columns too (op V): `{"rows": {column: [...]}, "s": [...], "b": [...],
    -- "bs": [...]}`, each row stamped later than the version held here and based on it, in batches of
    -- 10,000 rows; an update that changes nothing replicated is not a change. Each row's version
    -- names its base itself (the version trigger then does not run).
    UPDATE "repl_tables" SET "batch_update_sql" = format(
      'WITH changed AS MATERIALIZED (
         SELECT n.* FROM new_rows n JOIN old_rows o ON o.%4$I = n.%4$I WHERE %5$s
       ), versioned AS (
         SELECT c.*, GREATEST($1, COALESCE(h."stamp", 0) + 1) AS repl_stamp, h."stamp" AS repl_base_stamp,
                h."site" AS repl_base_site, (row_number() OVER () - 1) / 10000 AS repl_part
           FROM changed c LEFT JOIN LATERAL (
             SELECT "stamp", "site" FROM "repl_versions" WHERE "tbl" = %2$L AND "row_key" = c.%4$I::text OFFSET 0) h ON true
       ), captured AS (
         INSERT INTO "repl_changes" ("tbl", "op", "row_key", "data", "stamp", "row_count")
         SELECT %2$L, ''V'', %3$L,
                jsonb_build_object(''rows'', jsonb_build_object(%1$s), ''s'', array_agg(repl_stamp),
                                   ''b'', array_agg(repl_base_stamp), ''bs'', array_agg(repl_base_site)),
                max(repl_stamp), count(*)::int
           FROM versioned n GROUP BY repl_part)
       INSERT INTO "repl_versions" AS v ("tbl", "row_key", "stamp", "site", "deleted")
       SELECT %2$L, n.%4$I::text, n.repl_stamp, $2, false FROM versioned n
       ON CONFLICT ("tbl", "row_key") DO UPDATE
         SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = EXCLUDED."deleted",
             "base_stamp" = v."stamp", "base_site" = v."site"',
      (SELECT string_agg(format('%1$L, array_agg(n.%1$I)', a.attname), ', ' ORDER BY a.attnum)
         FROM pg_attribute a
        WHERE a.attrelid = t."name"::regclass AND a.attnum > 0 AND NOT a.attisdropped
          AND a.attname <> ALL (t."local_columns")),
      t."name", t."key_column", t."key_column",
      CASE WHEN cardinality(t."local_columns") = 0 THEN 'n IS DISTINCT FROM o'
           ELSE format('to_jsonb(n) - %1$L::text[] IS DISTINCT FROM to_jsonb(o) - %1$L::text[]', t."local_columns") END)
    WHERE "name" = t."name" AND t."statement_capture";
    v_args := array_to_string(array_prepend(quote_literal(t."key_column"), ARRAY(SELECT quote_literal(c) FROM unnest(t."local_columns") c)), ', ');
    EXECUTE format('DROP TRIGGER IF EXISTS repl_capture ON %I', t."name");
    EXECUTE format('DROP TRIGGER IF EXISTS repl_capture_inserts ON %I', t."name");
    EXECUTE format('DROP TRIGGER IF EXISTS repl_capture_updates ON %I', t."name");
    EXECUTE format('DROP TRIGGER IF EXISTS repl_capture_deletes ON %I', t."name");
    IF t."statement_capture" THEN
      EXECUTE format('CREATE TRIGGER repl_capture AFTER DELETE ON %I FOR EACH ROW'
                     ' WHEN (NULLIF(current_setting(''tributary.origin'', true), '''') IS NOT NULL)'
                     ' EXECUTE FUNCTION repl_capture(%s)', t."name", v_args);
      EXECUTE format('CREATE TRIGGER repl_capture_inserts AFTER INSERT ON %I REFERENCING NEW TABLE AS new_rows'
                     ' FOR EACH STATEMENT EXECUTE FUNCTION repl_capture_statement(%s)', t."name", v_args);
      EXECUTE format('CREATE TRIGGER repl_capture_updates AFTER UPDATE ON %I REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows'
                     ' FOR EACH STATEMENT EXECUTE FUNCTION repl_capture_statement(%s)', t."name", v_args);
      EXECUTE format('CREATE TRIGGER repl_capture_deletes AFTER DELETE ON %I REFERENCING OLD TABLE AS old_rows'
                     ' FOR EACH STATEMENT EXECUTE FUNCTION repl_capture_statement(%s)', t."name", v_args);
    ELSE
      EXECUTE format('CREATE TRIGGER repl_capture AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW EXECUTE FUNCTION repl_capture(%s)', t."name", v_args);
    END IF;
  END LOOP;
END
$$;

SELECT repl_prepare_tables();
DROP FUNCTION repl_capture_inserts();

-- The derived tables' trigger for changed and removed triples recomputes the terms of the objects
-- concerned. Its statements named `value_type = 'text'` in their WHERE clause, which made the partial
-- index (attribute, value, object_id) WHERE value_type = 'text' applicable to a probe by object id;
-- with PostgreSQL 18's skip scan the planner sometimes took it, scanning every (attribute, value) for
-- each object: a bulk removal of 100,000 triples through the API ran for over 100 s (0.2 s with the
-- (object_id, attribute) index). Now each object's triples are read by one probe of that index (the
-- WHERE names only the object; the value type is an aggregate FILTER), and the removal of terms rows
-- left empty and the rewrite of the others are one statement. The terms rows are locked first, as
-- before, so the recount (a new snapshot) sees every transaction that changed these objects before.
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
  WITH now AS (
    SELECT i.id AS object_id,
           array_agg(DISTINCT metadata_term(t."attribute", t."value")) FILTER (WHERE t."value_type" = 'text') AS terms
      FROM unnest(v_ids) AS i(id) LEFT JOIN LATERAL (
        SELECT t."attribute", t."value", t."value_type" FROM "metadata_triples" t WHERE t."object_id" = i.id OFFSET 0) t ON true
     GROUP BY i.id
  ), emptied AS (
    DELETE FROM "metadata_terms" m USING now WHERE m."object_id" = now.object_id AND now.terms IS NULL)
  INSERT INTO "metadata_terms" AS m ("object_id", "terms")
  SELECT now.object_id, now.terms FROM now JOIN "data_objects" o ON o."id" = now.object_id
   WHERE now.terms IS NOT NULL ORDER BY now.object_id
  ON CONFLICT ("object_id") DO UPDATE SET "terms" = EXCLUDED."terms";
  RETURN NULL;
END
$$;
