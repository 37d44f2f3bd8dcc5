-- A copy's row of this site that is deleted leaves its file's key in storage_garbage (migration
-- 20261127130000_storage_garbage), in the deleting transaction: a purge arriving from a peer
-- deletes this site's rows by cascade, and nothing else here would know their files. The API's
-- sweeper removes the files. Rows of other sites' copies are not this site's files, and a copy
-- still pending has no file (its key is empty).
CREATE OR REPLACE FUNCTION storage_garbage_note() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "storage_garbage" ("resource_id", "key", "object_id")
  SELECT DISTINCT ON (o."resource_id", o."physical_path") o."resource_id", o."physical_path", o."object_id"
    FROM old_replicas o
   WHERE o."site_id" = repl_local_site() AND o."physical_path" <> ''
  ON CONFLICT ("resource_id", "key") DO UPDATE SET "object_id" = EXCLUDED."object_id";
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "storage_garbage_note" ON "replicas";
CREATE TRIGGER "storage_garbage_note" AFTER DELETE ON "replicas"
  REFERENCING OLD TABLE AS old_replicas
  FOR EACH STATEMENT EXECUTE FUNCTION storage_garbage_note();
