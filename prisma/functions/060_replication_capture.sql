-- Change capture (docs/replication.md, "Capture"): triggers on every replicated table append each
-- local insert, update and delete to repl_changes, stamped with a per-row version (microseconds,
-- monotonic per row) and the version it replaced, and record the row's version in repl_versions.
-- Writes the injector makes on behalf of a peer run with the session setting `tributary.origin` set;
-- capture leaves them out, so they are never extracted and sent on again. `tributary.capture = off`
-- turns capture off for a transaction (a backfill every site computes alike).
--
-- The capture triggers themselves are made per table by repl_prepare_tables
-- (090_replication_tables.sql): a row trigger (repl_capture) on most tables; statement triggers over
-- transition tables (repl_capture_statement) on the tables written in bulk (`statement_capture` in
-- repl_tables: metadata triples), which capture a statement's inserts and updates as batch changes
-- in columns (ops B and V) and its deletes per row. Current definitions, applied after the
-- migrations on every start (prisma/functions/README.md).

-- The site id of this catalog, cached in the session once found.
CREATE OR REPLACE FUNCTION repl_local_site() RETURNS TEXT LANGUAGE plpgsql AS $$
DECLARE
  v_site TEXT := NULLIF(current_setting('tributary.local_site', true), '');
BEGIN
  IF v_site IS NULL THEN
    SELECT "id" INTO v_site FROM "sites" WHERE "is_local";
    IF v_site IS NOT NULL THEN
      PERFORM set_config('tributary.local_site', v_site, false);
    END IF;
  END IF;
  RETURN v_site;
END
$$;

-- repl_local_site() caches the site id in the session (tributary.local_site); called once before a
-- statement's rows are made, so their default finds it in a new session too.
CREATE OR REPLACE FUNCTION repl_note_local_site() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM repl_local_site();
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "repl_note_local_site" ON "metadata_triples";
CREATE TRIGGER "repl_note_local_site" BEFORE INSERT ON "metadata_triples"
  FOR EACH STATEMENT EXECUTE FUNCTION repl_note_local_site();

-- The row trigger: one change per row, based on the version held here. A write applied for a peer
-- is not captured, but a row removed by the cascade of a peer's delete is kept aside (repl_parked)
-- with its held version, the implied one (from its old image) when it has no version row, so it
-- comes back if that delete is overruled later; its tombstone is then written rather than updated.
-- On statement-captured tables it runs only for such deletes (its WHEN clause leaves local ones
-- alone).
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

-- The statement trigger of the tables written in bulk: what the row trigger would capture, with
-- set-based statements over the transition tables (the row trigger cost about 40 µs a row). Inserts
-- and updates run the table's batch_capture_sql and batch_update_sql (built by repl_prepare_tables);
-- a delete writes per row its old image, based on the version held here (the insert the row states
-- when it has no version row), and that base with the tombstone. Each row's held version is found
-- by one index probe (a lateral subquery), never by a join over the whole version table.
-- enable_bitmapscan off: the planner costs the per-row version probe as a bitmap scan, six times
-- slower here than the plain index scan it takes otherwise.
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

-- Absorbed heads (docs/conflicts.md, "Heads"): a local change to a file or folder supersedes every
-- version of it this site knows, including the versions that lost a conflict here and are still
-- heads (repl_heads). The change carries those versions (repl_changes.absorbed), so that every site
-- drops them as heads too, and this site remembers them (repl_absorbed), so that one arriving later
-- is known as superseded rather than taken for a concurrent update.
-- Runs after repl_capture (triggers fire in name order) on the tables whose losing versions are kept
-- as heads: moves the row's heads into the change just captured.
CREATE OR REPLACE FUNCTION repl_capture_absorb() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  v_key TEXT;
  v_absorbed JSONB;
  v_tbl TEXT := TG_TABLE_NAME::TEXT;
BEGIN
  IF current_setting('tributary.capture', true) = 'off'
     OR NULLIF(current_setting('tributary.origin', true), '') IS NOT NULL THEN
    RETURN NULL;
  END IF;
  v_key := OLD."id"::TEXT;
  WITH gone AS (
    DELETE FROM "repl_heads" WHERE "tbl" = v_tbl AND "row_key" = v_key RETURNING "stamp", "site")
  SELECT jsonb_agg(jsonb_build_array("stamp", "site") ORDER BY "stamp", "site") INTO v_absorbed FROM gone;
  IF v_absorbed IS NULL THEN
    RETURN NULL;
  END IF;
  INSERT INTO "repl_absorbed" ("tbl", "row_key", "stamp", "site")
  SELECT v_tbl, v_key, (h ->> 0)::BIGINT, h ->> 1 FROM jsonb_array_elements(v_absorbed) h
  ON CONFLICT DO NOTHING;
  UPDATE "repl_changes" SET "absorbed" = v_absorbed
   WHERE "id" = (SELECT max("id") FROM "repl_changes"
                  WHERE "tbl" = v_tbl AND "row_key" = v_key AND "tx_id" = pg_current_xact_id());
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "repl_capture_absorb" ON "data_objects";
CREATE TRIGGER "repl_capture_absorb" AFTER UPDATE OR DELETE ON "data_objects"
  FOR EACH ROW EXECUTE FUNCTION repl_capture_absorb();

DROP TRIGGER IF EXISTS "repl_capture_absorb" ON "collections";
CREATE TRIGGER "repl_capture_absorb" AFTER UPDATE OR DELETE ON "collections"
  FOR EACH ROW EXECUTE FUNCTION repl_capture_absorb();

-- Each held version remembers the version it was based on (docs/conflicts.md). A version replaces
-- the one held here: for a local change and for a peer's change applied in order, the held version
-- is the one it was based on. (A peer's change that won a conflict was based on another version:
-- the injector writes that base itself.) The trigger runs only for writers that change the version
-- without naming its base; the set-based capture and the injector name it.
CREATE OR REPLACE FUNCTION repl_versions_base() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."stamp" IS DISTINCT FROM OLD."stamp" OR NEW."site" IS DISTINCT FROM OLD."site" THEN
    NEW."base_stamp" := OLD."stamp";
    NEW."base_site" := OLD."site";
  END IF;
  RETURN NEW;
END
$$;

DROP TRIGGER IF EXISTS "repl_versions_base" ON "repl_versions";
CREATE TRIGGER "repl_versions_base" BEFORE UPDATE ON "repl_versions" FOR EACH ROW
  WHEN ((NEW."stamp" IS DISTINCT FROM OLD."stamp" OR NEW."site" IS DISTINCT FROM OLD."site")
        AND NEW."base_stamp" IS NOT DISTINCT FROM OLD."base_stamp"
        AND NEW."base_site" IS NOT DISTINCT FROM OLD."base_site")
  EXECUTE FUNCTION repl_versions_base();
