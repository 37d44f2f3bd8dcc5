-- Asynchronous multi-master replication of the catalog (seed 000, section 3; docs/replication.md).
--
-- Change capture: an AFTER ROW trigger on every replicated table appends each local insert, update and
-- delete to repl_changes, stamped with a per-row version (microseconds, monotonic per row) and the
-- version it replaced. Writes the injector makes on behalf of a peer run with the session setting
-- `tributary.origin` set; the trigger leaves them out, so they are never extracted and sent on again.
-- The engine's queues (log, outgoing, incoming, archive) and its bookkeeping live here too, so a crash
-- or restart loses nothing.

-- Which tables replicate, the column that identifies a row, and columns that stay local to a site
-- (never shipped, never overwritten by a peer, left out of the catalog digest).
CREATE TABLE "repl_tables" (
    "name" TEXT PRIMARY KEY,
    "key_column" TEXT NOT NULL,
    "local_columns" TEXT[] NOT NULL DEFAULT '{}',
    -- References between replicated tables always point to a lower rank (or within the table).
    "rank" INTEGER NOT NULL,
    "insert_sql" TEXT,
    "bulk_insert_sql" TEXT,
    "update_sql" TEXT,
    "delete_sql" TEXT
);

INSERT INTO "repl_tables" ("name", "key_column", "local_columns", "rank") VALUES
    ('sites', 'id', '{is_local}', 1),
    ('storage_resources', 'id', '{}', 2),
    ('project_groups', 'id', '{}', 3),
    ('users', 'id', '{}', 4),
    ('memberships', 'id', '{}', 5),
    ('collections', 'id', '{}', 6),
    ('data_objects', 'id', '{}', 7),
    ('replicas', 'id', '{}', 8),
    ('permissions', 'id', '{}', 9),
    ('api_tokens', 'id', '{last_used_at}', 10),
    ('trash_entries', 'id', '{}', 11);

-- Locally originated changes not yet extracted. Ordered by id; grouped by local transaction.
CREATE TABLE "repl_changes" (
    "id" BIGSERIAL PRIMARY KEY,
    "tx_id" XID8 NOT NULL DEFAULT pg_current_xact_id(),
    "tbl" TEXT NOT NULL,
    "op" CHAR(1) NOT NULL,
    "row_key" TEXT NOT NULL,
    "data" JSONB NOT NULL,
    "stamp" BIGINT NOT NULL,
    "base_stamp" BIGINT,
    "base_site" TEXT,
    "captured_at" TIMESTAMPTZ(3) NOT NULL DEFAULT clock_timestamp()
);

-- The version each row holds here: the stamp and site of the change that produced it. Deleted rows
-- keep a tombstone, so an update that meets a delete is recognised.
CREATE TABLE "repl_versions" (
    "tbl" TEXT NOT NULL,
    "row_key" TEXT NOT NULL,
    "stamp" BIGINT NOT NULL,
    "site" TEXT NOT NULL,
    "deleted" BOOLEAN NOT NULL DEFAULT false,
    PRIMARY KEY ("tbl", "row_key")
);

-- This site's extracted transactions, numbered in origin order (seq). Kept after every peer has
-- acknowledged them for a retention period, so a peer that joins from a snapshot or restores a backup
-- can be sent what it lacks.
CREATE TABLE "repl_log" (
    "seq" BIGINT PRIMARY KEY,
    "changes" JSONB NOT NULL,
    "change_count" INTEGER NOT NULL,
    "captured_at" TIMESTAMPTZ(3) NOT NULL,
    "extracted_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now()
);

-- One outgoing queue per peer: the log entries that peer has not acknowledged yet.
CREATE TABLE "repl_outgoing" (
    "peer_id" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    PRIMARY KEY ("peer_id", "seq")
);

-- Transactions received from peers, waiting for the injector (one origin's are applied in seq order).
CREATE TABLE "repl_incoming" (
    "origin" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "changes" JSONB NOT NULL,
    "change_count" INTEGER NOT NULL,
    "received_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    PRIMARY KEY ("origin", "seq")
);

-- Transactions applied here on behalf of peers.
CREATE TABLE "repl_archive" (
    "origin" TEXT NOT NULL,
    "seq" BIGINT NOT NULL,
    "changes" JSONB NOT NULL,
    "change_count" INTEGER NOT NULL,
    "applied_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now(),
    PRIMARY KEY ("origin", "seq")
);
CREATE INDEX "repl_archive_applied_at_idx" ON "repl_archive" ("applied_at");

-- Per peer: how far its changes are applied here, and how exchanges with it went.
CREATE TABLE "repl_peers" (
    "peer_id" TEXT PRIMARY KEY,
    "applied_seq" BIGINT NOT NULL DEFAULT 0,
    "last_success_at" TIMESTAMPTZ(3),
    "last_attempt_at" TIMESTAMPTZ(3),
    "last_error" TEXT,
    "last_error_at" TIMESTAMPTZ(3),
    "waiting_on" TEXT
);

-- This site's own counters (one row).
CREATE TABLE "repl_local" (
    "singleton" BOOLEAN PRIMARY KEY DEFAULT true CHECK ("singleton"),
    "last_seq" BIGINT NOT NULL DEFAULT 0
);
INSERT INTO "repl_local" DEFAULT VALUES;

-- Every conflict detected here, with both versions and how it was resolved provisionally. The id is
-- derived from the record and the two versions, so every site names the same conflict alike.
CREATE TABLE "repl_conflicts" (
    "id" TEXT PRIMARY KEY,
    "kind" TEXT NOT NULL,
    "tbl" TEXT NOT NULL,
    "row_key" TEXT NOT NULL,
    "local_stamp" BIGINT,
    "local_site" TEXT,
    "local_data" JSONB,
    "incoming_stamp" BIGINT NOT NULL,
    "incoming_site" TEXT NOT NULL,
    "incoming_data" JSONB,
    "winner" TEXT NOT NULL,
    "resolution" TEXT NOT NULL,
    "detected_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now()
);
CREATE INDEX "repl_conflicts_detected_at_idx" ON "repl_conflicts" ("detected_at");

-- Changes refused because a row they reference was deleted here. Kept aside, and applied if that row
-- comes back (a later update elsewhere wins over the delete), so every site ends with the same rows.
-- Later changes of a kept-aside row join it here instead of waiting.
CREATE TABLE "repl_parked" (
    "id" BIGSERIAL PRIMARY KEY,
    "origin" TEXT NOT NULL,
    "tbl" TEXT NOT NULL,
    "row_key" TEXT NOT NULL,
    "change" JSONB NOT NULL,
    "waiting_tbl" TEXT NOT NULL,
    "waiting_key" TEXT NOT NULL,
    "parked_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now()
);
CREATE INDEX "repl_parked_waiting_idx" ON "repl_parked" ("waiting_tbl", "waiting_key");
CREATE INDEX "repl_parked_row_idx" ON "repl_parked" ("tbl", "row_key");

-- Signed peer requests already seen (replay protection within the signature's time window).
CREATE TABLE "repl_nonces" (
    "nonce" TEXT PRIMARY KEY,
    "seen_at" TIMESTAMPTZ(3) NOT NULL DEFAULT now()
);

-- The site id of this catalog, cached in the session once found.
CREATE FUNCTION repl_local_site() RETURNS TEXT LANGUAGE plpgsql AS $$
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

CREATE FUNCTION repl_capture() RETURNS TRIGGER LANGUAGE plpgsql AS $$
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
        IF FOUND THEN
          INSERT INTO "repl_parked" ("origin", "tbl", "row_key", "change", "waiting_tbl", "waiting_key")
          VALUES (v_cur."site", v_tbl, v_key,
                  jsonb_build_object('t', v_tbl, 'o', 'I', 'k', v_key, 'd', v_data, 's', v_cur."stamp", 'b', NULL, 'bs', NULL),
                  split_part(current_setting('tributary.deleting', true), ':', 1),
                  split_part(current_setting('tributary.deleting', true), ':', 2));
          UPDATE "repl_versions" SET "deleted" = true WHERE "tbl" = v_tbl AND "row_key" = v_key;
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

-- Builds the statements the injector uses for each replicated table from its current columns, and
-- (re)creates the capture trigger. Later migrations that change a replicated table call it again.
CREATE FUNCTION repl_prepare_tables() RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  t RECORD;
  v_cols TEXT;
  v_sets TEXT;
  v_keytype TEXT;
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
    EXECUTE format('DROP TRIGGER IF EXISTS repl_capture ON %I', t."name");
    EXECUTE format('CREATE TRIGGER repl_capture AFTER INSERT OR UPDATE OR DELETE ON %I FOR EACH ROW EXECUTE FUNCTION repl_capture(%s)',
      t."name", array_to_string(array_prepend(quote_literal(t."key_column"), ARRAY(SELECT quote_literal(c) FROM unnest(t."local_columns") c)), ', '));
  END LOOP;
END
$$;

SELECT repl_prepare_tables();

-- A collection's path is derived from its parent's path and its name. After a peer's change to a
-- collection is applied, the path is recomputed here and the subtree follows, so a rename at one site
-- and a new subcollection at another agree everywhere.
CREATE FUNCTION repl_fix_collection_path(p_id BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
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
    RETURN;
  END IF;
  UPDATE "collections" SET "path" = v_expected || substr("path", length(v_row."path") + 1)
   WHERE "path" LIKE replace(replace(replace(v_row."path", '\', '\\'), '%', '\%'), '_', '\_') || '/%';
  UPDATE "collections" SET "path" = v_expected WHERE "id" = p_id;
END
$$;

-- Applies one origin transaction's changes (a JSON array) from index p_from (at most p_count of them),
-- in order, as long as each is based on the version held here. Stops at the first change that needs
-- the conflict resolver or is waiting for a change from another origin, and returns why; returns
-- nothing when all were applied.
-- Change fields: t table, o op (I/U/D), k row key, d row, s stamp, b base stamp, bs base site.
--
-- A run of inserts of rows unknown here (an upload of many files, a new subtree) is applied with one
-- statement per table, tables in rank order, so references still point to rows already there.
CREATE FUNCTION repl_apply(p_origin TEXT, p_changes JSONB, p_from INTEGER, p_count INTEGER)
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
    SELECT "stamp", "site", "deleted" INTO v_cur FROM "repl_versions" WHERE "tbl" = v_tbl AND "row_key" = v_key;
    IF FOUND AND v_cur."stamp" = v_stamp AND v_cur."site" = p_origin THEN
      i := i + 1;
      CONTINUE; -- this very version is already here
    END IF;
    IF v_op = 'I' THEN
      IF FOUND THEN
        RETURN QUERY SELECT i, 'exists', v_cur."stamp", v_cur."site", v_cur."deleted";
        RETURN;
      END IF;
    ELSIF NOT FOUND THEN
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
    INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
    VALUES (v_tbl, v_key, v_stamp, p_origin, v_op = 'D')
    ON CONFLICT ("tbl", "row_key") DO UPDATE
      SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = EXCLUDED."deleted";
    -- What was kept aside for this row and is older than this change is superseded by it.
    DELETE FROM "repl_parked" WHERE "tbl" = v_tbl AND "row_key" = v_key AND ("change" ->> 's')::BIGINT < v_stamp;
    i := i + 1;
  END LOOP;
END
$$;

-- Applies one change whatever version is held here (the resolver decided the incoming version wins):
-- the row is written as the change has it (inserted, overwritten or deleted) and its version recorded.
CREATE FUNCTION repl_apply_forced(p_origin TEXT, p_change JSONB) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  v_sql RECORD;
  v_tbl TEXT := p_change ->> 't';
  v_key TEXT := p_change ->> 'k';
  v_op TEXT := p_change ->> 'o';
  v_rows INTEGER;
BEGIN
  PERFORM set_config('tributary.origin', p_origin, true);
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
  INSERT INTO "repl_versions" ("tbl", "row_key", "stamp", "site", "deleted")
  VALUES (v_tbl, v_key, (p_change ->> 's')::BIGINT, p_origin, v_op = 'D')
  ON CONFLICT ("tbl", "row_key") DO UPDATE
    SET "stamp" = EXCLUDED."stamp", "site" = EXCLUDED."site", "deleted" = EXCLUDED."deleted";
  DELETE FROM "repl_parked" WHERE "tbl" = v_tbl AND "row_key" = v_key AND ("change" ->> 's')::BIGINT < (p_change ->> 's')::BIGINT;
END
$$;

-- A digest of the replicated catalog that is independent of row order and of local-only columns:
-- equal digests at two sites mean equal catalogs. One row per table plus the total.
CREATE FUNCTION repl_digest() RETURNS TABLE ("tbl" TEXT, "rows" BIGINT, "digest" TEXT) LANGUAGE plpgsql SET "TimeZone" = 'UTC' AS $$
DECLARE
  t RECORD;
  v_rows BIGINT;
  v_digest TEXT;
  v_all TEXT := '';
  v_total BIGINT := 0;
BEGIN
  FOR t IN SELECT * FROM "repl_tables" ORDER BY "name" LOOP
    EXECUTE format(
      'SELECT count(*), md5(COALESCE(string_agg(md5((to_jsonb(x) - $1)::text), '''' ORDER BY x.%I::text), '''')) FROM %I x',
      t."key_column", t."name")
      INTO v_rows, v_digest USING t."local_columns";
    tbl := t."name"; "rows" := v_rows; digest := v_digest;
    v_all := v_all || t."name" || ':' || v_digest || ';';
    v_total := v_total + v_rows;
    RETURN NEXT;
  END LOOP;
  tbl := '*'; "rows" := v_total; digest := md5(v_all);
  RETURN NEXT;
END
$$;

-- The injector's fast path: applies one origin's queued transactions after p_after, in order and each
-- atomically (a subtransaction), archives them and advances the origin's applied seq, until the
-- queue has a gap, p_max_changes is reached, or a transaction needs attention (a conflict, a missing
-- dependency or an error): that one is rolled back and returned in "stopped_at" for the engine to
-- handle change by change.
CREATE FUNCTION repl_inject(p_origin TEXT, p_after BIGINT, p_max_changes INTEGER)
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
CREATE FUNCTION repl_finish_txs(p_origin TEXT, p_after BIGINT, p_through BIGINT) RETURNS VOID LANGUAGE plpgsql AS $$
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
