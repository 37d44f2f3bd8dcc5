-- Notifications sent at commit: the catalog change feed and the credential cache's notices.
-- Current definitions, applied after the migrations on every start (prisma/functions/README.md).

-- 1. The catalog change feed (docs/events.md): clients (the agent's FUSE mount, the portal) learn that
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
CREATE OR REPLACE FUNCTION catalog_notify_objects() RETURNS TRIGGER LANGUAGE plpgsql AS $$
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

CREATE OR REPLACE FUNCTION catalog_notify_collections() RETURNS TRIGGER LANGUAGE plpgsql AS $$
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
DROP TRIGGER IF EXISTS "catalog_notify_insert" ON "data_objects";
CREATE TRIGGER catalog_notify_insert AFTER INSERT ON "data_objects"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_objects();

DROP TRIGGER IF EXISTS "catalog_notify_update" ON "data_objects";
CREATE TRIGGER catalog_notify_update AFTER UPDATE ON "data_objects"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_objects();

DROP TRIGGER IF EXISTS "catalog_notify_delete" ON "data_objects";
CREATE TRIGGER catalog_notify_delete AFTER DELETE ON "data_objects"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_objects();

DROP TRIGGER IF EXISTS "catalog_notify_insert" ON "collections";
CREATE TRIGGER catalog_notify_insert AFTER INSERT ON "collections"
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_collections();

DROP TRIGGER IF EXISTS "catalog_notify_update" ON "collections";
CREATE TRIGGER catalog_notify_update AFTER UPDATE ON "collections"
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_collections();

DROP TRIGGER IF EXISTS "catalog_notify_delete" ON "collections";
CREATE TRIGGER catalog_notify_delete AFTER DELETE ON "collections"
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_collections();

-- 2. Notices for the site's cache of resolved credentials (apps/api/src/auth/credential-cache.ts).
-- A request's bearer token or session cookie resolves to the account, its groups and the token's
-- confinement; the site keeps that answer briefly instead of asking the catalog on every request.
-- Any committed change that could alter the answer, made by this site, applied from a peer, or
-- written by hand in SQL, sends one empty NOTIFY on channel `tributary_credentials` (once per
-- statement; PostgreSQL folds identical notices within a transaction and drops them on rollback),
-- and the site forgets everything it holds. Token columns the answer does not depend on (the name,
-- `last_used_at`, which every request may touch) send nothing.
CREATE OR REPLACE FUNCTION credentials_notify() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tributary_credentials', '');
  RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS "credentials_notify" ON "api_tokens";
CREATE TRIGGER credentials_notify AFTER UPDATE OF "user_id", "secret_hash", "scope", "collection_id",
  "expires_at", "revoked_at" OR DELETE ON "api_tokens"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();

DROP TRIGGER IF EXISTS "credentials_notify" ON "sessions";
CREATE TRIGGER credentials_notify AFTER UPDATE OR DELETE ON "sessions"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();

DROP TRIGGER IF EXISTS "credentials_notify" ON "users";
CREATE TRIGGER credentials_notify AFTER UPDATE OR DELETE ON "users"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();

DROP TRIGGER IF EXISTS "credentials_notify" ON "memberships";
CREATE TRIGGER credentials_notify AFTER INSERT OR UPDATE OR DELETE ON "memberships"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();

DROP TRIGGER IF EXISTS "credentials_notify" ON "project_groups";
CREATE TRIGGER credentials_notify AFTER UPDATE OF "name" OR DELETE ON "project_groups"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();

-- A token confined to a collection follows it when it moves and stops when it is trashed.
DROP TRIGGER IF EXISTS "credentials_notify" ON "collections";
CREATE TRIGGER credentials_notify AFTER UPDATE OF "path", "trash_id" OR DELETE ON "collections"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();
