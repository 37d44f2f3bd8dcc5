-- POSIX attributes per entry (issue 25; docs/attributes.md): the file time, the permission bits, and
-- symbolic links.
--
-- mtime_s, mtime_nsec: the file time (POSIX mtime) as a struct timespec: seconds since 1970 and
--   nanoseconds (0..999,999,999), what `touch -d`, `utimensat`, `rsync -a` and `make` set and compare.
--   Nanoseconds because rsync and tar compare them (a timestamptz keeps microseconds only); two
--   columns because a count of nanoseconds since 1970 needs 61 bits, more than the 53 a JSON number
--   keeps exactly on its way between sites (replicated rows travel as JSON through Node). It is not
--   `updated_at` (the catalog record's last change, which a rename or a grant also moves). Existing
--   entries start from their `updated_at`.
-- mode: the permission bits (0..0o7777: rwx for owner, group and others, setuid, setgid, sticky),
--   advisory; the catalog's grants decide access. 0o644 for objects, 0o755 for collections.
-- link_target: set for a symbolic link, which is a data_objects row without replicas (size: the
--   target's length in bytes, checksum: its SHA-256, content type inode/symlink, mode 0o777). As a
--   data object it is named, moved, trashed, restored, purged, granted and replicated like any other,
--   and every conflict rule (same name at two sites, update against delete, renames) applies to it
--   unchanged. The target is stored as written and never resolved.
--
-- The new columns replicate (repl_prepare_tables below). No CHECK constraints: schema.prisma cannot
-- state them (the drift check compares them); the API validates every value it writes.

ALTER TABLE "collections"
  ADD COLUMN "mtime_s" BIGINT,
  ADD COLUMN "mtime_nsec" INTEGER,
  ADD COLUMN "mode" INTEGER NOT NULL DEFAULT 493;
ALTER TABLE "data_objects"
  ADD COLUMN "mtime_s" BIGINT,
  ADD COLUMN "mtime_nsec" INTEGER,
  ADD COLUMN "mode" INTEGER NOT NULL DEFAULT 420,
  ADD COLUMN "link_target" TEXT;

-- Existing entries: the file time is the record's last change. Every site computes the same from
-- the replicated updated_at, so the backfill is not captured (not a change to send anyone).
SET LOCAL tributary.capture = 'off';
UPDATE "collections" SET "mtime_s" = floor(extract(epoch FROM "updated_at"))::BIGINT,
  "mtime_nsec" = (extract(microseconds FROM "updated_at")::INTEGER % 1000000) * 1000;
UPDATE "data_objects" SET "mtime_s" = floor(extract(epoch FROM "updated_at"))::BIGINT,
  "mtime_nsec" = (extract(microseconds FROM "updated_at")::INTEGER % 1000000) * 1000;
SET LOCAL tributary.capture = 'on';

-- New entries: now (the transaction's time, as created_at).
ALTER TABLE "collections"
  ALTER COLUMN "mtime_s" SET DEFAULT floor(extract(epoch FROM now()))::BIGINT,
  ALTER COLUMN "mtime_s" SET NOT NULL,
  ALTER COLUMN "mtime_nsec" SET DEFAULT (extract(microseconds FROM now())::INTEGER % 1000000) * 1000,
  ALTER COLUMN "mtime_nsec" SET NOT NULL;
ALTER TABLE "data_objects"
  ALTER COLUMN "mtime_s" SET DEFAULT floor(extract(epoch FROM now()))::BIGINT,
  ALTER COLUMN "mtime_s" SET NOT NULL,
  ALTER COLUMN "mtime_nsec" SET DEFAULT (extract(microseconds FROM now())::INTEGER % 1000000) * 1000,
  ALTER COLUMN "mtime_nsec" SET NOT NULL;

-- A change from a peer that has not been migrated yet carries none of the new columns: its row
-- would be written with NULLs (the injector writes every column it knows). Such a change keeps the
-- row's attributes (an update) or gets the defaults (an insert: mtime from its updated_at, as the
-- backfill above computes at that peer once it migrates), so replication never stalls on it. Run
-- only when a value is missing (the WHEN clause costs the usual write nothing). A symlink's target
-- never changes: an update without one keeps it.
CREATE FUNCTION entry_attributes_fill() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  v_at TIMESTAMPTZ;
BEGIN
  IF TG_OP = 'UPDATE' THEN
    IF NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL THEN
      NEW."mtime_s" := OLD."mtime_s";
      NEW."mtime_nsec" := OLD."mtime_nsec";
    END IF;
    NEW."mode" := COALESCE(NEW."mode", OLD."mode");
    IF TG_TABLE_NAME = 'data_objects' THEN
      NEW."link_target" := COALESCE(NEW."link_target", OLD."link_target");
    END IF;
  ELSE
    IF NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL THEN
      v_at := COALESCE(NEW."updated_at", now());
      NEW."mtime_s" := floor(extract(epoch FROM v_at))::BIGINT;
      NEW."mtime_nsec" := (extract(microseconds FROM v_at)::INTEGER % 1000000) * 1000;
    END IF;
    IF TG_TABLE_NAME = 'collections' THEN
      NEW."mode" := COALESCE(NEW."mode", 493);
    ELSE
      NEW."mode" := COALESCE(NEW."mode", CASE WHEN NEW."link_target" IS NULL THEN 420 ELSE 511 END);
    END IF;
  END IF;
  RETURN NEW;
END
$$;

CREATE TRIGGER "entry_attributes_fill_insert" BEFORE INSERT ON "collections"
  FOR EACH ROW WHEN (NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL OR NEW."mode" IS NULL) EXECUTE FUNCTION entry_attributes_fill();
CREATE TRIGGER "entry_attributes_fill_update" BEFORE UPDATE ON "collections"
  FOR EACH ROW WHEN (NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL OR NEW."mode" IS NULL) EXECUTE FUNCTION entry_attributes_fill();
CREATE TRIGGER "entry_attributes_fill_insert" BEFORE INSERT ON "data_objects"
  FOR EACH ROW WHEN (NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL OR NEW."mode" IS NULL) EXECUTE FUNCTION entry_attributes_fill();
CREATE TRIGGER "entry_attributes_fill_update" BEFORE UPDATE ON "data_objects"
  FOR EACH ROW WHEN (NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL OR NEW."mode" IS NULL
                     OR (OLD."link_target" IS NOT NULL AND NEW."link_target" IS NULL))
  EXECUTE FUNCTION entry_attributes_fill();

-- The ingest functions take the new object's file time (in nanoseconds since 1970) and mode (NULL:
-- the defaults), and answer them.
DROP FUNCTION catalog_ingest_object(BIGINT, TEXT, BIGINT, TEXT, TEXT, BIGINT, BIGINT, TEXT, BIGINT, TEXT);
CREATE FUNCTION catalog_ingest_object(
  p_collection_id BIGINT, p_name TEXT, p_size BIGINT, p_checksum TEXT, p_content_type TEXT,
  p_owner_id BIGINT, p_group_id BIGINT, p_site_id TEXT, p_resource_id BIGINT, p_physical_path TEXT,
  p_mtime_ns BIGINT DEFAULT NULL, p_mode INTEGER DEFAULT NULL
) RETURNS TABLE (status TEXT, id BIGINT, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, mtime_ns BIGINT, mode INTEGER)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  new_id BIGINT;
  v_s BIGINT := floor(p_mtime_ns::NUMERIC / 1000000000)::BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(p_collection_id::text), hashtext(p_name));
  PERFORM 1 FROM collections c WHERE c.id = p_collection_id AND c.trash_id = 0 FOR SHARE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'parent-gone'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz, NULL::bigint, NULL::integer;
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM collections c WHERE c.parent_id = p_collection_id AND c.trash_id = 0 AND c.name = p_name) THEN
    RETURN QUERY SELECT 'name-taken'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz, NULL::bigint, NULL::integer;
    RETURN;
  END IF;
  INSERT INTO data_objects AS o (collection_id, name, size, checksum, content_type, owner_id, group_id, created_by,
                                 mtime_s, mtime_nsec, mode)
  VALUES (p_collection_id, p_name, p_size, p_checksum, p_content_type, p_owner_id, p_group_id, p_owner_id,
          COALESCE(v_s, floor(extract(epoch FROM now()))::BIGINT),
          COALESCE((p_mtime_ns - v_s * 1000000000)::INTEGER, (extract(microseconds FROM now())::INTEGER % 1000000) * 1000),
          COALESCE(p_mode, 420))
  ON CONFLICT (collection_id, trash_id, name) DO NOTHING
  RETURNING o.id INTO new_id;
  IF new_id IS NULL THEN
    RETURN QUERY SELECT 'name-taken'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz, NULL::bigint, NULL::integer;
    RETURN;
  END IF;
  INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, created_by)
  VALUES (new_id, p_site_id, p_resource_id, p_physical_path, p_size, p_checksum, p_owner_id);
  RETURN QUERY SELECT 'created'::text, o.id, o.created_at::timestamptz, o.updated_at::timestamptz,
                      o.mtime_s * 1000000000 + o.mtime_nsec, o.mode
    FROM data_objects o WHERE o.id = new_id;
END;
$$;

-- The batch upload path: as in 20261121020000_ingest_batch_function, answering each new object's
-- file time and mode too (the defaults: now, 0o644).
DROP FUNCTION catalog_ingest_objects(BIGINT, TEXT[], BIGINT[], TEXT[], TEXT[], BIGINT, BIGINT, TEXT, BIGINT, TEXT[]);
CREATE FUNCTION catalog_ingest_objects(
  p_collection_id BIGINT, p_names TEXT[], p_sizes BIGINT[], p_checksums TEXT[], p_content_types TEXT[],
  p_owner_id BIGINT, p_group_id BIGINT, p_site_id TEXT, p_resource_id BIGINT, p_physical_paths TEXT[]
) RETURNS TABLE (status TEXT, name TEXT, id BIGINT, created_at TIMESTAMPTZ, mtime_ns BIGINT, mode INTEGER)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(p_collection_id::text), hashtext(n))
     FROM (SELECT DISTINCT n FROM unnest(p_names) AS n ORDER BY n) AS sorted;
  PERFORM 1 FROM collections c WHERE c.id = p_collection_id AND c.trash_id = 0 FOR SHARE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'parent-gone'::text, NULL::text, NULL::bigint, NULL::timestamptz, NULL::bigint, NULL::integer;
    RETURN;
  END IF;
  RETURN QUERY
    SELECT 'name-taken'::text, n, NULL::BIGINT, NULL::TIMESTAMPTZ, NULL::BIGINT, NULL::INTEGER FROM unnest(p_names) AS n
     WHERE EXISTS (SELECT 1 FROM collections c WHERE c.parent_id = p_collection_id AND c.trash_id = 0 AND c.name = n)
        OR EXISTS (SELECT 1 FROM data_objects o WHERE o.collection_id = p_collection_id AND o.trash_id = 0 AND o.name = n);
  IF FOUND THEN
    RETURN;
  END IF;
  RETURN QUERY
    WITH input AS (
      SELECT * FROM unnest(p_names, p_sizes, p_checksums, p_content_types, p_physical_paths)
        AS t(n, size, checksum, content_type, physical_path)
    ), inserted AS (
      INSERT INTO data_objects AS o (collection_id, name, size, checksum, content_type, owner_id, group_id, created_by)
      SELECT p_collection_id, i.n, i.size, i.checksum, i.content_type, p_owner_id, p_group_id, p_owner_id FROM input i
      RETURNING o.id, o.name, o.created_at, o.mtime_s * 1000000000 + o.mtime_nsec AS mtime_ns, o.mode
    ), replicas AS (
      INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, created_by)
      SELECT ins.id, p_site_id, p_resource_id, i.physical_path, i.size, i.checksum, p_owner_id
        FROM inserted ins JOIN input i ON i.n = ins.name
    )
    SELECT 'created'::text, ins.name, ins.id, ins.created_at::timestamptz, ins.mtime_ns, ins.mode FROM inserted ins;
END;
$$;

-- The new columns replicate: regenerate the tables' apply statements and capture triggers.
SELECT repl_prepare_tables();
