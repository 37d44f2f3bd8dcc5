-- Records many new data objects of one collection, with their first replicas, all or nothing (the
-- batch upload path). Takes the per-(collection, name) advisory locks of every name, in a fixed
-- order so concurrent batches cannot deadlock, and holds the parent FOR SHARE (see
-- catalog_ingest_object), then checks every name. Returns one 'parent-gone' row when the collection
-- is no longer live; 'name-taken' rows (and inserts nothing) when any name is taken; otherwise a
-- 'created' row for every new object.
CREATE FUNCTION catalog_ingest_objects(
  p_collection_id BIGINT, p_names TEXT[], p_sizes BIGINT[], p_checksums TEXT[], p_content_types TEXT[],
  p_owner_id BIGINT, p_group_id BIGINT, p_site_id TEXT, p_resource_id BIGINT, p_physical_paths TEXT[]
) RETURNS TABLE (status TEXT, name TEXT, id BIGINT, created_at TIMESTAMPTZ)
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
  PERFORM pg_advisory_xact_lock(hashtext(p_collection_id::text), hashtext(n))
     FROM (SELECT DISTINCT n FROM unnest(p_names) AS n ORDER BY n) AS sorted;
  PERFORM 1 FROM collections c WHERE c.id = p_collection_id AND c.trash_id = 0 FOR SHARE;
  IF NOT FOUND THEN
    RETURN QUERY SELECT 'parent-gone'::text, NULL::text, NULL::bigint, NULL::timestamptz;
    RETURN;
  END IF;
  RETURN QUERY
    SELECT 'name-taken'::text, n, NULL::BIGINT, NULL::TIMESTAMPTZ FROM unnest(p_names) AS n
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
      RETURNING o.id, o.name, o.created_at
    ), replicas AS (
      INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, created_by)
      SELECT ins.id, p_site_id, p_resource_id, i.physical_path, i.size, i.checksum, p_owner_id
        FROM inserted ins JOIN input i ON i.n = ins.name
    )
    SELECT 'created'::text, ins.name, ins.id, ins.created_at::timestamptz FROM inserted ins;
END;
$$;
