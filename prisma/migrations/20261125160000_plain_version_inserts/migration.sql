-- A statement's inserts wrote each row's version with INSERT ... ON CONFLICT DO UPDATE: a speculative
-- insertion per row (an extra index check and WAL record), 0.51 s for 100,000 rows at ten million
-- triples. A new row's key (never reused) almost never has a version already; the few that do (a
-- tombstone) are now updated first, by one sweep of the key index over the sorted keys (28 ms for
-- 100,000), and the rest inserted plainly: 0.36 s. Same versions as before.

-- As in 20261125140000_batch_constant_columns, with the versions written as above.
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
    -- a request), and each row's version ($1 the stamp, $2 this site): a plain insert, after one sweep
    -- of the key index updates the versions a key already has (a tombstone).
    UPDATE "repl_tables" SET "batch_capture_sql" = format(
      'WITH b AS (
         SELECT count(*)::int AS n, jsonb_build_object(%1$s) AS d
           FROM (SELECT n.*, (row_number() OVER () - 1) / 10000 AS part FROM new_rows n) n GROUP BY part),
       captured AS (
         INSERT INTO "repl_changes" ("tbl", "op", "row_key", "data", "stamp", "row_count")
         SELECT %2$L, ''B'', %3$L, d, $1, n FROM b),
       held AS (
         UPDATE "repl_versions" v SET "stamp" = $1, "site" = $2, "deleted" = false
          WHERE v."tbl" = %2$L AND v."row_key" = ANY (ARRAY(SELECT n.%4$I::text FROM new_rows n))
         RETURNING v."row_key")
       INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
       SELECT %2$L, n.%4$I::text, $1, $2, false FROM new_rows n
        WHERE NOT EXISTS (SELECT 1 FROM held h WHERE h."row_key" = n.%4$I::text)',
      repl_batch_columns(t."name"::regclass, t."local_columns", t."key_column"),
      t."name", t."key_column", t."key_column")
    WHERE "name" = t."name" AND t."statement_capture";
    -- A statement's updates in columns too (op V): `{"rows": {column: [...]}, "s": [...], "b": [...],
    -- "bs": [...]}`, each row stamped later than the version held here and based on it, in batches of
    -- 10,000 rows; an update that changes nothing replicated is not a change. The held versions are
    -- bumped by one UPDATE, whose RETURNING gives each row's new stamp and base (the base columns are
    -- set to the old version, so the version trigger does not run); a row with no version yet gets one
    -- (found with EXCEPT, which reads both sides once whatever the estimates; see
    -- 20261125100000_triple_target_checks).
    UPDATE "repl_tables" SET "batch_update_sql" = format(
      'WITH changed AS MATERIALIZED (
         SELECT n.* FROM new_rows n JOIN old_rows o ON o.%4$I = n.%4$I WHERE %5$s
       ), bumped AS (
         UPDATE "repl_versions" v SET "stamp" = GREATEST($1, v."stamp" + 1), "site" = $2, "deleted" = false,
                "base_stamp" = v."stamp", "base_site" = v."site"
          WHERE v."tbl" = %2$L AND v."row_key" = ANY (ARRAY(SELECT c.%4$I::text FROM changed c))
         RETURNING v."row_key", v."stamp", v."base_stamp", v."base_site"
       ), fresh AS (
         INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
         SELECT %2$L, k, $1, $2, false FROM (SELECT c.%4$I::text AS k FROM changed c EXCEPT SELECT "row_key" FROM bumped) k
         RETURNING "row_key", "stamp", "base_stamp", "base_site"
       ), versioned AS (
         SELECT c.*, x."stamp" AS repl_stamp, x."base_stamp" AS repl_base_stamp, x."base_site" AS repl_base_site,
                (row_number() OVER () - 1) / 10000 AS repl_part
           FROM changed c JOIN (SELECT * FROM bumped UNION ALL SELECT * FROM fresh) x ON x."row_key" = c.%4$I::text)
       INSERT INTO "repl_changes" ("tbl", "op", "row_key", "data", "stamp", "row_count")
       SELECT %2$L, ''V'', %3$L,
              jsonb_build_object(''rows'', jsonb_build_object(%1$s), ''s'', array_agg(repl_stamp),
                                 ''b'', array_agg(repl_base_stamp), ''bs'', array_agg(repl_base_site)),
              max(repl_stamp), count(*)::int
         FROM versioned n GROUP BY repl_part',
      repl_batch_columns(t."name"::regclass, t."local_columns", t."key_column"),
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
