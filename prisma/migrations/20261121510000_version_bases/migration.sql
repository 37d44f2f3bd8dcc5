-- Each held version also remembers the version it was based on (docs/conflicts.md): a site can then
-- tell which versions of a record are still heads (no later version was based on them), which the
-- conflict rules need when a move to the trash follows a conflict (packages/replication,
-- ConflictRecords.reconsiderTrashed).
ALTER TABLE "repl_versions" ADD COLUMN "base_stamp" BIGINT, ADD COLUMN "base_site" TEXT;

-- A version replaces the one held here: for a local change and for a peer's change applied in order,
-- the held version is the one it was based on. (A peer's change that won a conflict was based on
-- another version: the injector writes that base itself.)
CREATE FUNCTION repl_versions_base() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  IF NEW."stamp" IS DISTINCT FROM OLD."stamp" OR NEW."site" IS DISTINCT FROM OLD."site" THEN
    NEW."base_stamp" := OLD."stamp";
    NEW."base_site" := OLD."site";
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER "repl_versions_base" BEFORE UPDATE ON "repl_versions"
  FOR EACH ROW EXECUTE FUNCTION repl_versions_base();

-- Versions of files and folders that lost a conflict here and that no later version was based on
-- (heads). Every version held here since descends from the one that beat them, so they are
-- concurrent with it: when a move to the trash arrives in order on top of it, the best head (live
-- before trashed, then the latest) stands, as at the sites that met the versions directly.
-- Site-local, like repl_versions.
CREATE TABLE "repl_heads" (
    "tbl" TEXT NOT NULL,
    "row_key" TEXT NOT NULL,
    "stamp" BIGINT NOT NULL,
    "site" TEXT NOT NULL,
    "base_stamp" BIGINT,
    "base_site" TEXT,
    "data" JSONB NOT NULL,
    PRIMARY KEY ("tbl", "row_key", "stamp", "site")
);
