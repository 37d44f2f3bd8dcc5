-- The catalog change feed (docs/events.md): clients (the agent's FUSE mount, the portal) learn that
-- a listing changed without polling. One NOTIFY on channel `tributary_catalog` per statement that
-- inserts, updates or deletes collections or data objects, local or applied by replication, fired by
-- statement-level triggers over transition tables (a per-row NOTIFY would cost every bulk write once
-- per row). PostgreSQL sends it at commit, folds identical ones within a transaction, and drops it
-- with a rollback. The API (apps/api/src/events) listens, checks each subscriber's access and
-- streams Server-Sent Events.
--
-- Payload (JSON, at most 7,900 bytes; PostgreSQL's limit is 8,000):
--   {"k":"c"|"o", "op":"i"|"u"|"d", "p":[paths], "s":[paths], "o":origin|null, "t":epoch ms}
-- k: collections or objects. p: for collections, the changed collections' own paths (their parents'
-- listings changed); for objects, the paths of the collections holding them (objects are reported
-- per collection, so a statement touching many objects in one folder is one short path). s: moved
-- or renamed collections, old and new path: everything below them changed (descendants whose path
-- was rewritten by the same move are not listed one by one). o: the peer site a replicated change
-- came from (the session setting `tributary.origin` the injector sets), null for local ones.
-- When a statement touches more than 64 collections or the payload would be too long, it is
-- {"r":1,...}: subscribers are told to resynchronise (drop everything they cached).

CREATE FUNCTION catalog_notify_objects() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  v_paths TEXT[];
  v_payload TEXT;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(c."path") INTO v_paths
      FROM (SELECT DISTINCT "collection_id" AS id FROM new_rows LIMIT 65) r JOIN "collections" c USING (id);
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(c."path") INTO v_paths
      FROM (SELECT DISTINCT "collection_id" AS id FROM old_rows LIMIT 65) r JOIN "collections" c USING (id);
  ELSE
    SELECT array_agg(c."path") INTO v_paths
      FROM (SELECT "collection_id" AS id FROM new_rows UNION SELECT "collection_id" FROM old_rows LIMIT 65) r
      JOIN "collections" c USING (id);
  END IF;
  IF v_paths IS NULL THEN
    RETURN NULL;
  END IF;
  v_payload := json_build_object('k', 'o', 'op', lower(left(TG_OP, 1)), 'p', v_paths, 's', '{}'::text[],
    'o', NULLIF(current_setting('tributary.origin', true), ''),
    't', floor(extract(epoch FROM now()) * 1000)::bigint)::text;
  IF cardinality(v_paths) > 64 OR octet_length(v_payload) > 7900 THEN
    v_payload := json_build_object('r', 1, 'k', 'o', 't', floor(extract(epoch FROM now()) * 1000)::bigint)::text;
  END IF;
  PERFORM pg_notify('tributary_catalog', v_payload);
  RETURN NULL;
END
$$;

CREATE FUNCTION catalog_notify_collections() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  v_paths TEXT[] := '{}';
  v_moved TEXT[] := '{}';
  v_count INTEGER;
  v_payload TEXT;
BEGIN
  IF TG_OP = 'INSERT' THEN
    SELECT array_agg(n."path"), count(*) INTO v_paths, v_count FROM (SELECT "path" FROM new_rows LIMIT 65) n;
  ELSIF TG_OP = 'DELETE' THEN
    SELECT array_agg(o."path"), count(*) INTO v_paths, v_count FROM (SELECT "path" FROM old_rows LIMIT 65) o;
  ELSE
    -- A moved or renamed collection changes its parent or name; its descendants only change path
    -- (covered by the subtree notice of the moved one). Other updates (owner, group, trash, times)
    -- keep the path and are reported as they are.
    SELECT coalesce(array_agg(x."path") FILTER (WHERE NOT x.moved), '{}'),
           coalesce(array_agg(x."path") FILTER (WHERE x.moved), '{}'), count(*)
      INTO v_paths, v_moved, v_count
      FROM (
        SELECT u.p AS "path", u.moved FROM (
          SELECT n."path" AS new_path, o."path" AS old_path,
                 (o."parent_id" IS DISTINCT FROM n."parent_id" OR o."name" <> n."name") AS moved,
                 (o."path" <> n."path") AS path_changed
            FROM new_rows n JOIN old_rows o USING (id)
        ) c CROSS JOIN LATERAL (VALUES (c.old_path, c.moved), (c.new_path, c.moved)) AS u(p, moved)
        WHERE c.moved OR NOT c.path_changed
        LIMIT 130
      ) x;
    v_count := v_count / 2;
  END IF;
  IF coalesce(v_count, 0) = 0 THEN
    RETURN NULL;
  END IF;
  v_payload := json_build_object('k', 'c', 'op', lower(left(TG_OP, 1)), 'p', v_paths, 's', v_moved,
    'o', NULLIF(current_setting('tributary.origin', true), ''),
    't', floor(extract(epoch FROM now()) * 1000)::bigint)::text;
  IF v_count > 64 OR octet_length(v_payload) > 7900 THEN
    v_payload := json_build_object('r', 1, 'k', 'c', 't', floor(extract(epoch FROM now()) * 1000)::bigint)::text;
  END IF;
  PERFORM pg_notify('tributary_catalog', v_payload);
  RETURN NULL;
END
$$;

-- Transition tables need one trigger per event.
CREATE TRIGGER catalog_notify_insert AFTER INSERT ON "data_objects"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_objects();
CREATE TRIGGER catalog_notify_update AFTER UPDATE ON "data_objects"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_objects();
CREATE TRIGGER catalog_notify_delete AFTER DELETE ON "data_objects"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_objects();

CREATE TRIGGER catalog_notify_insert AFTER INSERT ON "collections"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_collections();
CREATE TRIGGER catalog_notify_update AFTER UPDATE ON "collections"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_collections();
CREATE TRIGGER catalog_notify_delete AFTER DELETE ON "collections"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_collections();
