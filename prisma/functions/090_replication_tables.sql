-- Per replicated table (repl_tables): the statements the injector and the statement capture run, and
-- the capture triggers, generated from the table's current columns. This file comes last: its final
-- statement runs repl_prepare_tables() whenever migrations were applied or these files changed, so a
-- migration that adds a replicated column, or a table to repl_tables, needs nothing more. Current
-- definitions (prisma/functions/README.md).
--
-- Batch changes (op B, a statement's inserts; op V, its updates) hold a column whose value is the same
-- for every row of the batch once, as {"=": value}, instead of an array of that value repeated: the
-- creation and change times and users of a bulk write, and the unused target column of triples. The
-- key column is always an array. A peer's collector unfolds either form into the same per-row changes
-- (packages/replication/src/collector.ts).

-- The `'column', value` pairs of a batch's jsonb_build_object, over the rows `n` of one group: a
-- column of a type whose equality is equality of value (integers, text, times) is written once when
-- every row has the same value; any other column, and the key, as an array. (Not floating point or
-- numeric, where equal values can differ: 0 and -0, 1.0 and 1.00.)
CREATE OR REPLACE FUNCTION repl_batch_columns(p_table REGCLASS, p_locals TEXT[], p_key TEXT) RETURNS TEXT
LANGUAGE sql STABLE AS $$
  SELECT string_agg(
           CASE WHEN a.attname <> p_key AND a.atttypid IN ('int2'::regtype, 'int4'::regtype, 'int8'::regtype,
                       'text'::regtype, 'varchar'::regtype, 'timestamptz'::regtype, 'timestamp'::regtype, 'date'::regtype)
                THEN format('%1$L, CASE WHEN count(n.%1$I) = 0 THEN jsonb_build_object(''='', NULL::jsonb)'
                            ' WHEN count(n.%1$I) = count(*) AND min(n.%1$I) = max(n.%1$I) THEN jsonb_build_object(''='', min(n.%1$I))'
                            ' ELSE to_jsonb(array_agg(n.%1$I)) END', a.attname)
                ELSE format('%1$L, to_jsonb(array_agg(n.%1$I))', a.attname) END,
           ', ' ORDER BY a.attnum)
    FROM pg_attribute a
   WHERE a.attrelid = p_table AND a.attnum > 0 AND NOT a.attisdropped AND a.attname <> ALL (p_locals)
$$;

-- Builds, for each replicated table, the statements the injector uses (insert_sql, bulk_insert_sql,
-- update_sql, delete_sql), those of the statement capture (batch_capture_sql, batch_update_sql) and,
-- for tables whose rows state their insert (insert_stamp and insert_site), implied_version_sql; then
-- (re)creates the table's capture triggers. For those tables a statement's inserts write no versions
-- (each batch carries the rows' own stamp), and updates and deletes of rows with an implied version
-- are based on it.
CREATE OR REPLACE FUNCTION repl_prepare_tables() RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  t RECORD;
  v_cols TEXT;
  v_sets TEXT;
  v_keytype TEXT;
  v_args TEXT;
  v_implied BOOLEAN;
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
    v_implied := t."statement_capture" AND (
      SELECT count(*) = 2 FROM pg_attribute a
       WHERE a.attrelid = t."name"::regclass AND NOT a.attisdropped AND a.attname IN ('insert_stamp', 'insert_site')
         AND a.attname <> ALL (t."local_columns"));
    UPDATE "repl_tables" SET
      "insert_sql" = format('INSERT INTO %1$I (%2$s) SELECT %2$s FROM jsonb_populate_record(NULL::%1$I, $1)', t."name", v_cols),
      "bulk_insert_sql" = format('INSERT INTO %1$I (%2$s) SELECT %2$s FROM jsonb_populate_recordset(NULL::%1$I, $1)', t."name", v_cols),
      "update_sql" = format('UPDATE %1$I t SET %2$s FROM jsonb_populate_record(NULL::%1$I, $1) r WHERE t.%3$I = r.%3$I', t."name", v_sets, t."key_column"),
      "delete_sql" = format('DELETE FROM %1$I WHERE %2$I = ($1 ->> %3$L)::%4$s', t."name", t."key_column", t."key_column", v_keytype),
      "implied_version_sql" = CASE WHEN v_implied THEN format(
        'SELECT "insert_stamp", "insert_site" FROM %1$I WHERE %2$I = $1::%3$s AND "insert_stamp" IS NOT NULL AND "insert_site" IS NOT NULL',
        t."name", t."key_column", v_keytype) END
    WHERE "name" = t."name";
    -- A statement's inserts in columns (one array per replicated column, all in the same order), in
    -- batches of at most 10,000 rows (a JSON value is limited to 256 MB, and peers receive about 10,000
    -- changes a request). A key that already has a version here (a tombstone) gets it overwritten, by
    -- one sweep of the key index, with $1 (the stamp) and $2 (this site). Rows that state their insert
    -- (tables with insert_stamp and insert_site: made here, with a stamp) and had no version are captured
    -- in batches stamped with their own insert_stamp and get no version row; the others are stamped $1
    -- and their versions inserted plainly.
    UPDATE "repl_tables" SET "batch_capture_sql" = format(
      'WITH held AS (
         UPDATE "repl_versions" v SET "stamp" = $1, "site" = $2, "deleted" = false
          WHERE v."tbl" = %2$L AND v."row_key" = ANY (ARRAY(SELECT n.%4$I::text FROM new_rows n))
         RETURNING v."row_key"
       ), stamped AS MATERIALIZED (
         SELECT n.*, x.held AS repl_held, (%5$s AND NOT x.held) AS repl_implied, %6$s AS repl_insert_stamp
           FROM new_rows n
          CROSS JOIN LATERAL (SELECT EXISTS (SELECT 1 FROM held h WHERE h."row_key" = n.%4$I::text) AS held) x
       ), b AS (
         SELECT CASE WHEN repl_implied THEN min(repl_insert_stamp) ELSE $1 END AS s,
                count(*)::int AS n, jsonb_build_object(%1$s) AS d
           FROM (SELECT n.*, (row_number() OVER () - 1) / 10000 AS part FROM stamped n) n
          GROUP BY part, repl_implied, CASE WHEN repl_implied THEN repl_insert_stamp END
       ), captured AS (
         INSERT INTO "repl_changes" ("tbl", "op", "row_key", "data", "stamp", "row_count")
         SELECT %2$L, ''B'', %3$L, d, s, n FROM b)
       INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
       SELECT %2$L, n.%4$I::text, $1, $2, false FROM stamped n WHERE NOT n.repl_implied AND NOT n.repl_held',
      repl_batch_columns(t."name"::regclass, t."local_columns", t."key_column"),
      t."name", t."key_column", t."key_column",
      CASE WHEN v_implied THEN 'n."insert_site" IS NOT DISTINCT FROM $2 AND n."insert_stamp" IS NOT NULL' ELSE 'false' END,
      CASE WHEN v_implied THEN 'n."insert_stamp"' ELSE 'NULL::BIGINT' END)
    WHERE "name" = t."name" AND t."statement_capture";
    -- A statement's updates in columns too (op V): `{"rows": {column: [...]}, "s": [...], "b": [...],
    -- "bs": [...]}`, each row stamped later than the version held here and based on it, in batches of
    -- 10,000 rows; an update that changes nothing replicated is not a change. The held versions are
    -- bumped by one UPDATE, whose RETURNING gives each row's new stamp and base (the base columns are
    -- set to the old version, so the version trigger does not run); a row with no version row gets one,
    -- based on the insert its old image states if it states one (keys found by a grouping, which reads
    -- both sides once whatever the estimates; see 20261125100000_triple_target_checks).
    UPDATE "repl_tables" SET "batch_update_sql" = format(
      'WITH changed AS MATERIALIZED (
         SELECT n.*, %6$s AS repl_old_stamp, %7$s AS repl_old_site
           FROM new_rows n JOIN old_rows o ON o.%4$I = n.%4$I WHERE %5$s
       ), bumped AS (
         UPDATE "repl_versions" v SET "stamp" = GREATEST($1, v."stamp" + 1), "site" = $2, "deleted" = false,
                "base_stamp" = v."stamp", "base_site" = v."site"
          WHERE v."tbl" = %2$L AND v."row_key" = ANY (ARRAY(SELECT c.%4$I::text FROM changed c))
         RETURNING v."row_key", v."stamp", v."base_stamp", v."base_site"
       ), fresh AS (
         INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted", "base_stamp", "base_site")
         SELECT %2$L, k, GREATEST($1, COALESCE(max(s), 0) + 1), $2, false, max(s), max(bs)
           FROM (SELECT c.%4$I::text AS k, c.repl_old_stamp AS s, c.repl_old_site AS bs, 1 AS w FROM changed c
                 UNION ALL SELECT "row_key", NULL, NULL, 0 FROM bumped) u
          GROUP BY k HAVING min(w) = 1
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
           ELSE format('to_jsonb(n) - %1$L::text[] IS DISTINCT FROM to_jsonb(o) - %1$L::text[]', t."local_columns") END,
      CASE WHEN v_implied THEN 'CASE WHEN o."insert_site" IS NOT NULL THEN o."insert_stamp" END' ELSE 'NULL::BIGINT' END,
      CASE WHEN v_implied THEN 'CASE WHEN o."insert_stamp" IS NOT NULL THEN o."insert_site" END' ELSE 'NULL::TEXT' END)
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

-- Regenerated on every apply: the columns may have changed since the last one.
SELECT repl_prepare_tables();
