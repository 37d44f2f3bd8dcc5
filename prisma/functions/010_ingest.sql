-- The ingest functions: a new data object and its first replica recorded in one round trip
-- (apps/api/src/data/ingest.repository.ts). Current definitions, applied after the migrations on
-- every start (prisma/functions/README.md).

-- Records a new data object and its first replica (the single-upload path). Each statement of a
-- VOLATILE function takes a fresh snapshot, so the check after the lock sees every collection
-- committed before the lock was granted. The lock is the same one every other path that names an
-- entry of a collection takes (apps/api/src/data/ingest.repository.ts). The parent is held FOR
-- SHARE, so a concurrent trash of it (which takes its subtree FOR UPDATE) either waits for this
-- insert or makes it answer 'parent-gone'. p_mtime_ns is the file time in nanoseconds since 1970 and
-- p_mode the permission bits (NULL: now and 0o644; docs/attributes.md).
-- Returns one row: status 'created' with the new object (its times and mode), 'name-taken' or
-- 'parent-gone'.
CREATE OR REPLACE FUNCTION catalog_ingest_object(
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

-- Records many new data objects of one collection, with their first replicas, all or nothing (the
-- batch upload path). Takes the per-(collection, name) advisory locks of every name, in a fixed
-- order so concurrent batches cannot deadlock, and holds the parent FOR SHARE (see
-- catalog_ingest_object), then checks every name. Returns one 'parent-gone' row when the collection
-- is no longer live; 'name-taken' rows (and inserts nothing) when any name is taken; otherwise a
-- 'created' row for every new object, with its file time and mode (the defaults: now, 0o644).
CREATE OR REPLACE FUNCTION catalog_ingest_objects(
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
