-- A metadata triple carries the version of the insert that made it (docs/replication.md, "Versions";
-- docs/metadata.md). Every row of a replicated table has a version (the stamp and site of the change
-- that produced it) for conflict detection, and until now each inserted triple wrote one into
-- repl_versions: 12 million rows (2 GB with their index, and their WAL) at ten million triples,
-- about a sixth of a bulk load's work, at the origin and again at every peer. A triple never changed
-- since its insert has the same version at every site, so the row now holds it in two replicated
-- columns, `insert_stamp` and `insert_site`, written with the row (defaults: the statement's time and
-- this site) and shipped with it to peers. repl_versions keeps a row only once the version differs
-- from that: after an update or a delete (a tombstone), or for a row whose columns do not state its
-- insert (written before this migration, by another site's image, or over a tombstone).
--
-- The held version of a row is therefore: its repl_versions row if it has one, else, if the row
-- exists and states its insert, that insert (base none, not deleted): `repl_held_version`. Every
-- reader of versions that can meet a triple uses it; every writer of a version for a row that had
-- only the implied one writes the implied one as the base, as the version trigger does for a held row.

ALTER TABLE "metadata_triples" ADD COLUMN "insert_stamp" BIGINT, ADD COLUMN "insert_site" TEXT;
-- Existing rows keep NULL (their versions are in repl_versions). New rows: microseconds, like every
-- stamp; the site from the session, which the statement trigger below makes sure is known.
ALTER TABLE "metadata_triples"
  ALTER COLUMN "insert_stamp" SET DEFAULT (extract(epoch FROM statement_timestamp()) * 1000000)::BIGINT,
  ALTER COLUMN "insert_site" SET DEFAULT NULLIF(current_setting('tributary.local_site', true), '');

-- repl_local_site() caches the site id in the session (tributary.local_site); called once before a
-- statement's rows are made, so their default finds it in a new session too.
CREATE FUNCTION repl_note_local_site() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM repl_local_site();
  RETURN NULL;
END
$$;
CREATE TRIGGER "repl_note_local_site" BEFORE INSERT ON "metadata_triples"
  FOR EACH STATEMENT EXECUTE FUNCTION repl_note_local_site();

-- Per table: how to read the version a row states (NULL for tables whose rows do not).
ALTER TABLE "repl_tables" ADD COLUMN "implied_version_sql" TEXT;

-- Whether an incoming insert's row states the version the change carries: then no repl_versions row
-- is written for it (the origin wrote none either).
CREATE FUNCTION repl_implies_version(p_change JSONB, p_origin TEXT) RETURNS BOOLEAN
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN COALESCE((p_change -> 'd' ->> 'insert_site') = p_origin
                  AND (p_change -> 'd' ->> 'insert_stamp')::BIGINT = (p_change ->> 's')::BIGINT, false);

-- The version held here for a row: its repl_versions row, else the insert the row states (implied),
-- else nothing (all NULL).
CREATE FUNCTION repl_held_version(p_tbl TEXT, p_key TEXT, OUT "stamp" BIGINT, OUT "site" TEXT,
                                  OUT "deleted" BOOLEAN, OUT "implied" BOOLEAN)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_sql TEXT;
BEGIN
  SELECT v."stamp", v."site", v."deleted", false INTO "stamp", "site", "deleted", "implied"
    FROM "repl_versions" v WHERE v."tbl" = p_tbl AND v."row_key" = p_key;
  IF FOUND THEN
    RETURN;
  END IF;
  SELECT r."implied_version_sql" INTO v_sql FROM "repl_tables" r WHERE r."name" = p_tbl;
  IF v_sql IS NOT NULL THEN
    EXECUTE v_sql INTO "stamp", "site" USING p_key;
    IF "stamp" IS NOT NULL THEN
      "deleted" := false;
      "implied" := true;
    END IF;
  END IF;
END
$$;

-- As in 20261125160000_plain_version_inserts; for tables whose rows state their insert, a statement's
-- inserts write no versions (each batch carries the rows' own stamp), updates and deletes of rows with
-- an implied version are based on it, and implied_version_sql is set.
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

SELECT repl_prepare_tables();

-- As in 20261125000000_statement_capture, with a delete of a row that has no version row based on the
-- insert the row states, and that base written with the tombstone.
CREATE OR REPLACE FUNCTION repl_capture_statement() RETURNS TRIGGER LANGUAGE plpgsql SET enable_bitmapscan = off AS $$
DECLARE
  v_key TEXT := TG_ARGV[0];
  v_locals TEXT[] := TG_ARGV[1:];
  v_tbl TEXT := TG_TABLE_NAME::TEXT;
  v_site TEXT;
  v_stamp BIGINT;
  v_implied BOOLEAN;
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
    EXECUTE (SELECT "batch_capture_sql" FROM "repl_tables" WHERE "name" = v_tbl) USING v_stamp, v_site;
    RETURN NULL;
  END IF;
  IF TG_OP = 'UPDATE' THEN
    EXECUTE (SELECT "batch_update_sql" FROM "repl_tables" WHERE "name" = v_tbl) USING v_stamp, v_site;
    RETURN NULL;
  END IF;
  -- A delete: per row its old image, based on the version held here (built here: the key column is
  -- the table's).
  v_implied := (SELECT "implied_version_sql" IS NOT NULL FROM "repl_tables" WHERE "name" = v_tbl);
  EXECUTE format($sql$
    WITH versioned AS (
      SELECT o.%1$I::text AS k, to_jsonb(o) - $3 AS d, GREATEST($1, COALESCE(h."stamp", %2$s, 0) + 1) AS stamp,
             COALESCE(h."stamp", %2$s) AS base_stamp,
             CASE WHEN h."stamp" IS NOT NULL THEN h."site" ELSE %3$s END AS base_site
        FROM old_rows o LEFT JOIN LATERAL (
          SELECT "stamp", "site" FROM "repl_versions" WHERE "tbl" = $2 AND "row_key" = o.%1$I::text OFFSET 0) h ON true
    ), captured AS (
      INSERT INTO "repl_changes" ("tbl", "op", "row_key", "data", "stamp", "base_stamp", "base_site")
      SELECT $2, 'D', k, d, stamp, base_stamp, base_site FROM versioned
      RETURNING "row_key", "stamp", "base_stamp", "base_site")
    INSERT INTO "repl_versions" AS v ("tbl", "row_key", "stamp", "site", "deleted", "base_stamp", "base_site")
    SELECT $2, "row_key", "stamp", $4, true, "base_stamp", "base_site" FROM captured
    ON CONFLICT ("tbl", "row_key") DO UPDATE
      SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = EXCLUDED."deleted",
          "base_stamp" = v."stamp", "base_site" = v."site"
    $sql$, v_key,
    CASE WHEN v_implied THEN 'CASE WHEN o."insert_site" IS NOT NULL THEN o."insert_stamp" END' ELSE 'NULL::BIGINT' END,
    CASE WHEN v_implied THEN 'CASE WHEN o."insert_stamp" IS NOT NULL THEN o."insert_site" END' ELSE 'NULL::TEXT' END)
  USING v_stamp, v_tbl, v_locals, v_site;
  RETURN NULL;
END
$$;

-- As in 20261121100000_replication: a row removed by the cascade of a peer's delete is kept aside with
-- its held version, the implied one (from its old image) when it has no version row; its tombstone is
-- then written rather than updated.
CREATE OR REPLACE FUNCTION repl_capture() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  v_locals TEXT[] := TG_ARGV[1:];
  v_data JSONB;
  v_key TEXT;
  v_site TEXT;
  v_cur RECORD;
  v_stamp BIGINT;
  -- TG_TABLE_NAME is of type name: compared with a text column it would defeat the index.
  v_tbl TEXT := TG_TABLE_NAME::TEXT;
BEGIN
  IF current_setting('tributary.capture', true) = 'off' THEN
    RETURN NULL;
  END IF;
  IF NULLIF(current_setting('tributary.origin', true), '') IS NOT NULL THEN
    -- Applied for a peer: not captured. But a row removed by the cascade of a peer's delete is kept
    -- aside (with its version), so it comes back if that delete is overruled later.
    IF TG_OP = 'DELETE' AND NULLIF(current_setting('tributary.deleting', true), '') IS NOT NULL THEN
      v_data := to_jsonb(OLD) - v_locals;
      v_key := v_data ->> TG_ARGV[0];
      IF v_tbl || ':' || v_key <> current_setting('tributary.deleting', true) THEN
        SELECT "stamp", "site" INTO v_cur FROM "repl_versions" WHERE "tbl" = v_tbl AND "row_key" = v_key;
        IF NOT FOUND AND (v_data ->> 'insert_stamp') IS NOT NULL AND (v_data ->> 'insert_site') IS NOT NULL THEN
          SELECT (v_data ->> 'insert_stamp')::BIGINT AS "stamp", v_data ->> 'insert_site' AS "site" INTO v_cur;
        END IF;
        IF v_cur."stamp" IS NOT NULL THEN
          INSERT INTO "repl_parked" ("origin", "tbl", "row_key", "change", "waiting_tbl", "waiting_key")
          VALUES (v_cur."site", v_tbl, v_key,
                  jsonb_build_object('t', v_tbl, 'o', 'I', 'k', v_key, 'd', v_data, 's', v_cur."stamp", 'b', NULL, 'bs', NULL),
                  split_part(current_setting('tributary.deleting', true), ':', 1),
                  split_part(current_setting('tributary.deleting', true), ':', 2));
          INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
          VALUES (v_tbl, v_key, v_cur."stamp", v_cur."site", true)
          ON CONFLICT ("tbl", "row_key") DO UPDATE SET "deleted" = true;
        END IF;
      END IF;
    END IF;
    RETURN NULL;
  END IF;
  IF TG_OP = 'DELETE' THEN
    v_data := to_jsonb(OLD) - v_locals;
  ELSE
    v_data := to_jsonb(NEW) - v_locals;
    -- An update that changed only local columns (a token's last use) is not a catalog change.
    IF TG_OP = 'UPDATE' AND v_data = to_jsonb(OLD) - v_locals THEN
      RETURN NULL;
    END IF;
  END IF;
  v_key := v_data ->> TG_ARGV[0];
  v_site := repl_local_site();
  IF v_site IS NULL THEN
    IF v_tbl = 'sites' AND TG_OP = 'INSERT' AND NEW."is_local" THEN
      v_site := NEW."id";
    ELSE
      RAISE EXCEPTION 'catalog has no local site yet: register the site before changing replicated tables';
    END IF;
  END IF;
  v_stamp := (extract(epoch FROM clock_timestamp()) * 1000000)::BIGINT;
  IF TG_OP = 'INSERT' THEN
    -- A new row (ids are never reused): no version to build on.
    INSERT INTO "repl_changes" ("tbl", "op", "row_key", "data", "stamp")
    VALUES (v_tbl, 'I', v_key, v_data, v_stamp);
  ELSE
    SELECT "stamp", "site" INTO v_cur FROM "repl_versions" WHERE "tbl" = v_tbl AND "row_key" = v_key;
    v_stamp := GREATEST(v_stamp, COALESCE(v_cur."stamp", 0) + 1);
    INSERT INTO "repl_changes" ("tbl", "op", "row_key", "data", "stamp", "base_stamp", "base_site")
    VALUES (v_tbl, left(TG_OP, 1), v_key, v_data, v_stamp, v_cur."stamp", v_cur."site");
  END IF;
  INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
  VALUES (v_tbl, v_key, v_stamp, v_site, TG_OP = 'DELETE')
  ON CONFLICT ("tbl", "row_key") DO UPDATE
    SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = EXCLUDED."deleted";
  RETURN NULL;
END
$$;

-- As in 20261121100000_replication, with the held version from repl_held_version: an insert whose row
-- states the version the change carries writes no version row, and a version written over an implied
-- one is based on it.
CREATE OR REPLACE FUNCTION repl_apply(p_origin TEXT, p_changes JSONB, p_from INTEGER, p_count INTEGER)
RETURNS TABLE ("idx" INTEGER, "reason" TEXT, "cur_stamp" BIGINT, "cur_site" TEXT, "cur_deleted" BOOLEAN)
LANGUAGE plpgsql AS $$
DECLARE
  -- Element access on a large jsonb value would decompress it again each time: unpack it once.
  v_items JSONB[] := ARRAY(SELECT e FROM jsonb_array_elements(p_changes) e);
  v_last INTEGER;
  i INTEGER;
  v_end INTEGER;
  v_seg JSONB;
  c JSONB;
  v_op TEXT;
  v_tbl TEXT;
  v_key TEXT;
  v_stamp BIGINT;
  v_cur RECORD;
  v_held BOOLEAN;
  v_sql RECORD;
BEGIN
  PERFORM set_config('tributary.origin', p_origin, true);
  v_last := LEAST(cardinality(v_items), p_from + COALESCE(p_count, cardinality(v_items))) - 1;
  i := p_from;
  WHILE i <= v_last LOOP
    c := v_items[i + 1];
    v_op := c ->> 'o';
    IF v_op = 'I' THEN
      v_end := i;
      WHILE v_end < v_last AND v_items[v_end + 2] ->> 'o' = 'I' LOOP
        v_end := v_end + 1;
      END LOOP;
      IF v_end > i THEN
        v_seg := to_jsonb(v_items[i + 1 : v_end + 1]);
        -- (A row already here with only an implied version makes the insert fail on its key; the
        -- injector then applies change by change, below.)
        IF NOT EXISTS (SELECT 1 FROM jsonb_array_elements(v_seg) x
                         JOIN "repl_versions" v ON v."tbl" = x ->> 't' AND v."row_key" = x ->> 'k') THEN
          FOR v_sql IN SELECT r."name", r."bulk_insert_sql" FROM "repl_tables" r
                        WHERE r."name" IN (SELECT x ->> 't' FROM jsonb_array_elements(v_seg) x) ORDER BY r."rank" LOOP
            EXECUTE v_sql."bulk_insert_sql" USING (
              SELECT jsonb_agg(x -> 'd' ORDER BY n) FROM jsonb_array_elements(v_seg) WITH ORDINALITY e(x, n)
               WHERE x ->> 't' = v_sql."name");
            IF v_sql."name" = 'collections' THEN
              PERFORM repl_fix_collection_path((x ->> 'k')::BIGINT)
                 FROM jsonb_array_elements(v_seg) WITH ORDINALITY e(x, n) WHERE x ->> 't' = 'collections' ORDER BY n;
            END IF;
          END LOOP;
          INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
          SELECT x ->> 't', x ->> 'k', (x ->> 's')::BIGINT, p_origin, false FROM jsonb_array_elements(v_seg) x
           WHERE NOT repl_implies_version(x, p_origin)
          ON CONFLICT ("tbl", "row_key") DO UPDATE
            SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = false;
          i := v_end + 1;
          CONTINUE;
        END IF;
      END IF;
    END IF;
    v_tbl := c ->> 't';
    v_key := c ->> 'k';
    v_stamp := (c ->> 's')::BIGINT;
    SELECT * INTO v_cur FROM repl_held_version(v_tbl, v_key);
    v_held := v_cur."stamp" IS NOT NULL;
    IF v_held AND v_cur."stamp" = v_stamp AND v_cur."site" = p_origin THEN
      i := i + 1;
      CONTINUE; -- this very version is already here
    END IF;
    IF v_op = 'I' THEN
      IF v_held THEN
        RETURN QUERY SELECT i, 'exists', v_cur."stamp", v_cur."site", v_cur."deleted";
        RETURN;
      END IF;
    ELSIF NOT v_held THEN
      -- Changed at another site before it reached here: wait for its insert; unless its insert was
      -- kept aside here (it joins it), or this origin made it (then the resolver decides).
      RETURN QUERY SELECT i,
        CASE WHEN EXISTS (SELECT 1 FROM "repl_parked" p WHERE p."tbl" = v_tbl AND p."row_key" = v_key) THEN 'parked'
             WHEN (c ->> 'bs') = p_origin THEN 'orphan' ELSE 'missing' END,
        NULL::BIGINT, NULL::TEXT, NULL::BOOLEAN;
      RETURN;
    ELSIF v_cur."stamp" IS DISTINCT FROM (c ->> 'b')::BIGINT OR v_cur."site" IS DISTINCT FROM (c ->> 'bs') THEN
      -- Held version older than the one this change was based on: that version is still on its way.
      -- (A version this origin itself made cannot still be on its way: that is a real conflict.)
      IF v_cur."stamp" < (c ->> 'b')::BIGINT AND NOT v_cur."deleted" AND (c ->> 'bs') IS DISTINCT FROM p_origin THEN
        RETURN QUERY SELECT i, 'behind', v_cur."stamp", v_cur."site", v_cur."deleted";
      ELSE
        RETURN QUERY SELECT i, 'concurrent', v_cur."stamp", v_cur."site", v_cur."deleted";
      END IF;
      RETURN;
    END IF;
    SELECT * INTO v_sql FROM "repl_tables" WHERE "name" = v_tbl;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'replicated change for unknown table %', v_tbl;
    END IF;
    IF v_op = 'I' THEN
      EXECUTE v_sql."insert_sql" USING c -> 'd';
    ELSIF v_op = 'U' THEN
      EXECUTE v_sql."update_sql" USING c -> 'd';
    ELSE
      PERFORM set_config('tributary.deleting', v_tbl || ':' || v_key, true);
      EXECUTE v_sql."delete_sql" USING c -> 'd';
      PERFORM set_config('tributary.deleting', '', true);
    END IF;
    IF v_tbl = 'collections' AND v_op <> 'D' THEN
      PERFORM repl_fix_collection_path(v_key::BIGINT);
    END IF;
    IF NOT (v_op = 'I' AND repl_implies_version(c, p_origin)) THEN
      INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted", "base_stamp", "base_site")
      VALUES (v_tbl, v_key, v_stamp, p_origin, v_op = 'D',
              CASE WHEN v_cur."implied" THEN v_cur."stamp" END, CASE WHEN v_cur."implied" THEN v_cur."site" END)
      ON CONFLICT ("tbl", "row_key") DO UPDATE
        SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = EXCLUDED."deleted";
    END IF;
    -- What was kept aside for this row and is older than this change is superseded by it.
    DELETE FROM "repl_parked" WHERE "tbl" = v_tbl AND "row_key" = v_key AND ("change" ->> 's')::BIGINT < v_stamp;
    i := i + 1;
  END LOOP;
END
$$;

-- As in 20261121100000_replication, with a version written over an implied one based on it.
CREATE OR REPLACE FUNCTION repl_apply_forced(p_origin TEXT, p_change JSONB) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  v_sql RECORD;
  v_tbl TEXT := p_change ->> 't';
  v_key TEXT := p_change ->> 'k';
  v_op TEXT := p_change ->> 'o';
  v_rows INTEGER;
  v_cur RECORD;
  v_over_implied BOOLEAN;
BEGIN
  PERFORM set_config('tributary.origin', p_origin, true);
  SELECT * INTO v_cur FROM repl_held_version(v_tbl, v_key);
  SELECT * INTO v_sql FROM "repl_tables" WHERE "name" = v_tbl;
  IF v_op = 'D' THEN
    PERFORM set_config('tributary.deleting', v_tbl || ':' || v_key, true);
    EXECUTE v_sql."delete_sql" USING p_change -> 'd';
    PERFORM set_config('tributary.deleting', '', true);
  ELSE
    EXECUTE v_sql."update_sql" USING p_change -> 'd';
    GET DIAGNOSTICS v_rows = ROW_COUNT;
    IF v_rows = 0 THEN
      EXECUTE v_sql."insert_sql" USING p_change -> 'd';
    END IF;
    IF v_tbl = 'collections' THEN
      PERFORM repl_fix_collection_path(v_key::BIGINT);
    END IF;
  END IF;
  -- (Over an implied version that is this very one, nothing to base on: as the version trigger, which
  -- leaves the base alone when the version does not change.)
  v_over_implied := v_cur."implied" AND NOT (v_cur."stamp" = (p_change ->> 's')::BIGINT AND v_cur."site" = p_origin);
  INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted", "base_stamp", "base_site")
  VALUES (v_tbl, v_key, (p_change ->> 's')::BIGINT, p_origin, v_op = 'D',
          CASE WHEN v_over_implied THEN v_cur."stamp" END, CASE WHEN v_over_implied THEN v_cur."site" END)
  ON CONFLICT ("tbl", "row_key") DO UPDATE
    SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = EXCLUDED."deleted";
  DELETE FROM "repl_parked" WHERE "tbl" = v_tbl AND "row_key" = v_key AND ("change" ->> 's')::BIGINT < (p_change ->> 's')::BIGINT;
END
$$;
