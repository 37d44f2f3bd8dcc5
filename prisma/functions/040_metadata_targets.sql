-- A metadata triple's reference to its object or collection, checked once per statement by these
-- triggers instead of once per row by foreign keys (migration 20261125100000_triple_target_checks
-- dropped them; docs/metadata.md). A bulk write names each object about ten times; the triggers
-- check each distinct target once, with the same lock, and delete an object's or a collection's
-- triples with it as the cascade did. Current definitions, applied after the migrations on every
-- start (prisma/functions/README.md).
--
-- What a foreign key guaranteed still holds:
-- - a new or re-targeted row's object (collection) exists: it is locked FOR KEY SHARE, as the foreign
--   key's check locks it, so a concurrent delete of it waits for this transaction to end, and that
--   delete's own trigger (below) then removes these rows, which it sees once they are committed (every
--   writer of these tables runs at READ COMMITTED);
-- - a missing target fails the statement with foreign_key_violation (23503) and the foreign key's
--   message and detail ("Key (object_id)=(42) is not present in table "data_objects"."), which the
--   injector reads to tell a parent not arrived yet from one deleted here, and the API maps to 404.

-- Locks the targets `p_ids` of column `p_column` (object_id: data_objects, collection_id: collections)
-- FOR KEY SHARE, as a foreign key's check does, and raises what the foreign key raises for the first
-- one that does not exist. Targets are locked by primary key (`= ANY ($1)`), an index probe each. The
-- missing one is found with EXCEPT, which reads both sides once (hashed or sorted) whatever the
-- estimates: a `NOT EXISTS` under `LIMIT 1` was planned as a nested loop over the locked rows (a
-- 200,000-target insert ran for over ten minutes), and a `NOT IN` is only hashed while the list fits
-- in memory.
CREATE OR REPLACE FUNCTION metadata_require_targets(p_column TEXT, p_ids BIGINT[]) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
  v_table TEXT := CASE p_column WHEN 'object_id' THEN 'data_objects' ELSE 'collections' END;
  v_missing BIGINT;
BEGIN
  EXECUTE format(
    'WITH locked AS (SELECT t."id" FROM %I t WHERE t."id" = ANY ($1) FOR KEY SHARE)
     SELECT id FROM (SELECT unnest($1) AS id EXCEPT SELECT id FROM locked) missing LIMIT 1', v_table)
    INTO v_missing USING p_ids;
  IF v_missing IS NOT NULL THEN
    RAISE EXCEPTION 'insert or update on table "metadata_triples" violates foreign key constraint "metadata_triples_%_fkey"', p_column
      USING ERRCODE = 'foreign_key_violation',
            DETAIL = format('Key (%s)=(%s) is not present in table "%s".', p_column, v_missing, v_table),
            TABLE = 'metadata_triples', CONSTRAINT = format('metadata_triples_%s_fkey', p_column);
  END IF;
END
$$;

-- After an insert: each distinct target once.
CREATE OR REPLACE FUNCTION metadata_check_targets() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM metadata_require_targets('object_id',
    ARRAY(SELECT DISTINCT "object_id" FROM new_rows WHERE "object_id" IS NOT NULL));
  PERFORM metadata_require_targets('collection_id',
    ARRAY(SELECT DISTINCT "collection_id" FROM new_rows WHERE "collection_id" IS NOT NULL));
  RETURN NULL;
END
$$;

-- After an update that moves a triple to another target (rare: no API write does; a peer's update
-- might): that row's new target.
CREATE OR REPLACE FUNCTION metadata_check_moved_target() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."object_id" IS NOT NULL THEN
    PERFORM metadata_require_targets('object_id', ARRAY[NEW."object_id"]);
  END IF;
  IF NEW."collection_id" IS NOT NULL THEN
    PERFORM metadata_require_targets('collection_id', ARRAY[NEW."collection_id"]);
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "metadata_check_targets" ON "metadata_triples";
CREATE TRIGGER "metadata_check_targets" AFTER INSERT ON "metadata_triples"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION metadata_check_targets();

-- Fires only for statements that set a target column (bulk `set` does not), and only for rows whose
-- target changed.
DROP TRIGGER IF EXISTS "metadata_check_moved_target" ON "metadata_triples";
CREATE TRIGGER "metadata_check_moved_target" AFTER UPDATE OF "object_id", "collection_id" ON "metadata_triples"
  FOR EACH ROW WHEN (NEW."object_id" IS DISTINCT FROM OLD."object_id" OR NEW."collection_id" IS DISTINCT FROM OLD."collection_id")
  EXECUTE FUNCTION metadata_check_moved_target();

-- The cascade: a deleted object's (collection's) triples go with it, in the deleting statement.
CREATE OR REPLACE FUNCTION metadata_drop_with_target() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  IF TG_TABLE_NAME = 'data_objects' THEN
    DELETE FROM "metadata_triples" WHERE "object_id" = ANY (ARRAY(SELECT "id" FROM old_rows));
  ELSE
    DELETE FROM "metadata_triples" WHERE "collection_id" = ANY (ARRAY(SELECT "id" FROM old_rows));
  END IF;
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "metadata_drop_with_object" ON "data_objects";
CREATE TRIGGER "metadata_drop_with_object" AFTER DELETE ON "data_objects"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION metadata_drop_with_target();

DROP TRIGGER IF EXISTS "metadata_drop_with_collection" ON "collections";
CREATE TRIGGER "metadata_drop_with_collection" AFTER DELETE ON "collections"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION metadata_drop_with_target();
