-- Records a new data object and its first replica in one round trip (the ingest hot path).
-- Each statement of a VOLATILE function takes a fresh snapshot, so the check after the lock sees
-- every collection committed before the lock was granted. The lock is the same one every other
-- path that names an entry of a collection takes (apps/api/src/data/ingest.repository.ts).
-- The parent is held FOR SHARE, so a concurrent trash of it (which takes its subtree FOR UPDATE)
-- either waits for this insert or makes it answer 'parent-gone'.
-- Returns one row: status 'created' with the new object, 'name-taken' or 'parent-gone'.
CREATE FUNCTION catalog_ingest_object(
  p_collection_id BIGINT, p_name TEXT, p_size BIGINT, p_checksum TEXT, p_content_type TEXT,
  p_owner_id BIGINT, p_group_id BIGINT, p_site_id TEXT, p_resource_id BIGINT, p_physical_path TEXT
) RETURNS TABLE (status TEXT, id BIGINT, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ)
LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  new_id BIGINT;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(p_collection_id::text), hashtext(p_name));
  PERFORM 1 FROM collections c WHERE c.id = p_collection_id AND c.trash_id = 0 FOR SHARE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'parent-gone'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz;
    RETURN;
  END IF;
  IF EXISTS (SELECT 1 FROM collections c WHERE c.parent_id = p_collection_id AND c.trash_id = 0 AND c.name = p_name) THEN
    RETURN QUERY SELECT 'name-taken'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz;
    RETURN;
  END IF;
  INSERT INTO data_objects AS o (collection_id, name, size, checksum, content_type, owner_id, group_id, created_by)
  VALUES (p_collection_id, p_name, p_size, p_checksum, p_content_type, p_owner_id, p_group_id, p_owner_id)
  ON CONFLICT (collection_id, trash_id, name) DO NOTHING
  RETURNING o.id INTO new_id;
  IF new_id IS NULL THEN
    RETURN QUERY SELECT 'name-taken'::text, NULL::bigint, NULL::timestamptz, NULL::timestamptz;
    RETURN;
  END IF;
  INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, created_by)
  VALUES (new_id, p_site_id, p_resource_id, p_physical_path, p_size, p_checksum, p_owner_id);
  RETURN QUERY SELECT 'created'::text, o.id, o.created_at::timestamptz, o.updated_at::timestamptz
    FROM data_objects o WHERE o.id = new_id;
END;
$$;
