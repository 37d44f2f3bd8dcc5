-- A shard's row of this site that is deleted (a purge of its object, arriving from a peer or made
-- here, or the mover dropping a shard no rule wants) leaves its file's key in storage_garbage, as a
-- copy's row does (110_storage_garbage.sql): the sweeper removes the file. Issue 30, docs/erasure.md.
CREATE OR REPLACE FUNCTION erasure_garbage_note() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "storage_garbage" ("resource_id", "key", "object_id")
  SELECT DISTINCT ON (o."resource_id", o."physical_path") o."resource_id", o."physical_path", o."object_id"
    FROM old_shards o
   WHERE o."site_id" = repl_local_site() AND o."physical_path" <> ''
  ON CONFLICT ("resource_id", "key") DO UPDATE SET "object_id" = EXCLUDED."object_id";
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "erasure_garbage_note" ON "erasure_shards";
CREATE TRIGGER "erasure_garbage_note" AFTER DELETE ON "erasure_shards"
  REFERENCING OLD TABLE AS old_shards
  FOR EACH STATEMENT EXECUTE FUNCTION erasure_garbage_note();
