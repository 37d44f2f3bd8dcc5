-- Applying peers' changes (docs/replication.md, "Injection"): the injector's functions. Writes made
-- here for a peer run with `tributary.origin` set to that peer, so capture leaves them out. A
-- version is a row's (stamp, site); the version held here for a row is its repl_versions row or, for
-- a row that states its own insert (metadata triples' insert_stamp and insert_site), that insert
-- (implied). Current definitions, applied after the migrations on every start
-- (prisma/functions/README.md).

-- Whether an incoming insert's row states the version the change carries: then no repl_versions row
-- is written for it (the origin wrote none either).
CREATE OR REPLACE FUNCTION repl_implies_version(p_change JSONB, p_origin TEXT) RETURNS BOOLEAN
  LANGUAGE sql IMMUTABLE PARALLEL SAFE
  RETURN COALESCE((p_change -> 'd' ->> 'insert_site') = p_origin
                  AND (p_change -> 'd' ->> 'insert_stamp')::BIGINT = (p_change ->> 's')::BIGINT, false);

-- The version held here for a row: its repl_versions row, else the insert the row states (implied),
-- else nothing (all NULL).
CREATE OR REPLACE FUNCTION repl_held_version(p_tbl TEXT, p_key TEXT, OUT "stamp" BIGINT, OUT "site" TEXT,
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

-- A collection's path is derived from its parent's path and its name. After a peer's change to a
-- collection is applied, the path is recomputed here and the subtree follows, so a rename at one site
-- and a new subcollection at another agree everywhere. (A rule of the catalog inside the engine:
-- repl_apply and repl_apply_forced call it by table name.)
CREATE OR REPLACE FUNCTION repl_fix_collection_path(p_id BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  v_row RECORD;
  v_expected TEXT;
BEGIN
  SELECT c."path", c."name", p."path" AS parent_path INTO v_row
    FROM "collections" c LEFT JOIN "collections" p ON p."id" = c."parent_id" WHERE c."id" = p_id;
  IF NOT FOUND OR v_row.parent_path IS NULL THEN
    RETURN;
  END IF;
  v_expected := CASE WHEN v_row.parent_path = '/' THEN '/' || v_row."name" ELSE v_row.parent_path || '/' || v_row."name" END;
  IF v_expected = v_row."path" THEN
    -- The row came with its new path (a rename or move applied as a row update), so its old path is
    -- gone; subfolders applied before it (the origin captures them first) were set back under the old
    -- one. One probe of the direct subfolders finds that; then the subtree's paths are recomputed.
    IF EXISTS (SELECT 1 FROM "collections" ch WHERE ch."parent_id" = p_id
                AND ch."path" <> (CASE WHEN v_expected = '/' THEN '/' ELSE v_expected || '/' END) || ch."name") THEN
      WITH RECURSIVE t("id", "path") AS (
        SELECT ch."id", (CASE WHEN v_expected = '/' THEN '/' ELSE v_expected || '/' END) || ch."name"
          FROM "collections" ch WHERE ch."parent_id" = p_id
        UNION ALL
        SELECT ch."id", t."path" || '/' || ch."name" FROM "collections" ch JOIN t ON ch."parent_id" = t."id"
      )
      UPDATE "collections" c SET "path" = t."path" FROM t WHERE c."id" = t."id" AND c."path" <> t."path";
    END IF;
    RETURN;
  END IF;
  UPDATE "collections" SET "path" = v_expected || substr("path", length(v_row."path") + 1)
   WHERE "path" LIKE replace(replace(replace(v_row."path", '\', '\\'), '%', '\%'), '_', '\_') || '/%';
  UPDATE "collections" SET "path" = v_expected WHERE "id" = p_id;
END
$$;

-- Applies one origin transaction's changes (a JSON array) from index p_from (at most p_count of them),
-- in order, as long as each is based on the version held here (repl_held_version). Stops at the
-- first change that needs the conflict resolver or is waiting for a change from another origin, and
-- returns why; returns nothing when all were applied.
-- Change fields: t table, o op (I/U/D), k row key, d row, s stamp, b base stamp, bs base site.
--
-- A run of inserts of rows unknown here (an upload of many files, a new subtree) is applied with one
-- statement per table, tables in rank order, so references still point to rows already there. An
-- insert whose row states the version the change carries writes no version row, and a version
-- written over an implied one is based on it.
CREATE OR REPLACE FUNCTION repl_apply(p_origin TEXT, p_changes JSONB, p_from INTEGER, p_count INTEGER)
RETURNS TABLE ("idx" INTEGER, "reason" TEXT, "cur_stamp" BIGINT, "cur_site" TEXT, "cur_deleted" BOOLEAN)
LANGUAGE plpgsql AS $$
DECLARE
  -- Element access on a large jsonb value would decompress it again each time: unpack it once.
  v_items JSONB[] := ARRAY(SELECT e FROM jsonb_array_elements(p_changes) e);
  v_last INTEGER;
  i INTEGER;
  v_end INTEGER;
  v_run JSONB[];
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
        -- The run stays an array of its changes: turning it into one jsonb value, and each table's
        -- rows into another with jsonb_agg, re-encoded every row twice.
        v_run := v_items[i + 1 : v_end + 1];
        -- (A row already here with only an implied version makes the insert fail on its key; the
        -- injector then applies change by change, below.) One index probe per change (OFFSET 0 keeps
        -- the subquery from becoming a join): a hash join read the whole version table for every run.
        IF NOT EXISTS (SELECT 1 FROM unnest(v_run) x
                        WHERE EXISTS (SELECT 1 FROM "repl_versions" v
                                       WHERE v."tbl" = x ->> 't' AND v."row_key" = x ->> 'k' OFFSET 0)) THEN
          FOR v_sql IN SELECT r."name", r."bulk_insert_sql" FROM "repl_tables" r
                        WHERE r."name" IN (SELECT x ->> 't' FROM unnest(v_run) x) ORDER BY r."rank" LOOP
            EXECUTE v_sql."bulk_insert_sql" USING to_jsonb(ARRAY(
              SELECT x -> 'd' FROM unnest(v_run) WITH ORDINALITY e(x, n) WHERE x ->> 't' = v_sql."name" ORDER BY n));
            IF v_sql."name" = 'collections' THEN
              PERFORM repl_fix_collection_path((x ->> 'k')::BIGINT)
                 FROM unnest(v_run) WITH ORDINALITY e(x, n) WHERE x ->> 't' = 'collections' ORDER BY n;
            END IF;
          END LOOP;
          -- No version is held for any of these rows (checked above), so a plain insert (a key met
          -- twice would already have failed the table's insert; an error here sends the transaction
          -- to the change-by-change path, as any other).
          INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
          SELECT x ->> 't', x ->> 'k', (x ->> 's')::BIGINT, p_origin, false FROM unnest(v_run) x
           WHERE NOT repl_implies_version(x, p_origin);
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

-- Applies one change whatever version is held here (the resolver decided the incoming version wins):
-- the row is written as the change has it (inserted, overwritten or deleted) and its version
-- recorded, based on the held version when that was an implied one.
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

-- The injector's fast path: applies one origin's queued transactions after p_after, in order and each
-- atomically (a subtransaction), archives them and advances the origin's applied seq, until the
-- queue has a gap, p_max_changes is reached, or a transaction needs attention (a conflict, a missing
-- dependency or an error): that one is rolled back and returned in "stopped_at" for the engine to
-- handle change by change.
CREATE OR REPLACE FUNCTION repl_inject(p_origin TEXT, p_after BIGINT, p_max_changes INTEGER)
RETURNS TABLE ("applied_seq" BIGINT, "txs" INTEGER, "changes" INTEGER, "stopped_at" BIGINT)
LANGUAGE plpgsql AS $$
DECLARE
  r RECORD;
  v_seq BIGINT := p_after;
  v_txs INTEGER := 0;
  v_changes INTEGER := 0;
  v_stop BIGINT;
BEGIN
  DELETE FROM "repl_incoming" WHERE "origin" = p_origin AND "seq" <= p_after;
  FOR r IN SELECT i."seq", i."changes", i."change_count" FROM "repl_incoming" i
            WHERE i."origin" = p_origin AND i."seq" > p_after ORDER BY i."seq" LOOP
    EXIT WHEN r."seq" <> v_seq + 1 OR (v_txs > 0 AND v_changes + r."change_count" > p_max_changes);
    BEGIN
      IF EXISTS (SELECT 1 FROM repl_apply(p_origin, r."changes", 0, NULL)) THEN
        RAISE EXCEPTION 'needs the resolver' USING ERRCODE = 'TR001';
      END IF;
    EXCEPTION WHEN OTHERS THEN
      v_stop := r."seq";
      EXIT;
    END;
    v_seq := r."seq";
    v_txs := v_txs + 1;
    v_changes := v_changes + r."change_count";
  END LOOP;
  IF v_txs > 0 THEN
    PERFORM repl_finish_txs(p_origin, p_after, v_seq);
  END IF;
  RETURN QUERY SELECT v_seq, v_txs, v_changes, v_stop;
END
$$;

-- Moves applied transactions (p_after, p_through] of an origin from the incoming queue to the archive.
CREATE OR REPLACE FUNCTION repl_finish_txs(p_origin TEXT, p_after BIGINT, p_through BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
BEGIN
  WITH moved AS (
    DELETE FROM "repl_incoming" WHERE "origin" = p_origin AND "seq" > p_after AND "seq" <= p_through
    RETURNING "origin", "seq", "changes", "change_count"
  )
  INSERT INTO "repl_archive" ("origin", "seq", "changes", "change_count")
  SELECT "origin", "seq", "changes", "change_count" FROM moved
  ON CONFLICT DO NOTHING;
  INSERT INTO "repl_peers" ("peer_id", "applied_seq", "waiting_on") VALUES (p_origin, p_through, NULL)
  ON CONFLICT ("peer_id") DO UPDATE SET "applied_seq" = GREATEST("repl_peers"."applied_seq", EXCLUDED."applied_seq"), "waiting_on" = NULL;
END
$$;
