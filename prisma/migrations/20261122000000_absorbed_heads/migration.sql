-- A local change to a file or folder supersedes every version of it this site knows, including the
-- versions that lost a conflict here and are still heads (repl_heads): whoever made the change saw
-- the record as this site held it. The change carries those versions ("absorbed"), so that every
-- site drops them as heads too, and remembers them (repl_absorbed), so that one arriving later is
-- known as superseded rather than taken for a concurrent update (which would rescue the record from
-- a move to the trash made with that version in view). docs/conflicts.md, "Heads".
ALTER TABLE "repl_changes" ADD COLUMN "absorbed" JSONB;

-- Versions of a record superseded by a change that absorbed them (site-local, like repl_versions).
CREATE TABLE "repl_absorbed" (
    "tbl" TEXT NOT NULL,
    "row_key" TEXT NOT NULL,
    "stamp" BIGINT NOT NULL,
    "site" TEXT NOT NULL,
    PRIMARY KEY ("tbl", "row_key", "stamp", "site")
);

-- Runs after repl_capture (triggers fire in name order) on the tables whose losing versions are kept
-- as heads: moves the row's heads into the change just captured.
CREATE FUNCTION repl_capture_absorb() RETURNS TRIGGER LANGUAGE plpgsql AS $$
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

CREATE TRIGGER "repl_capture_absorb" AFTER UPDATE OR DELETE ON "data_objects"
  FOR EACH ROW EXECUTE FUNCTION repl_capture_absorb();
CREATE TRIGGER "repl_capture_absorb" AFTER UPDATE OR DELETE ON "collections"
  FOR EACH ROW EXECUTE FUNCTION repl_capture_absorb();
