-- Notices for the site's cache of resolved credentials (apps/api/src/auth/credential-cache.ts).
-- A request's bearer token or session cookie resolves to the account, its groups and the token's
-- confinement; the site keeps that answer briefly instead of asking the catalog on every request.
-- Any committed change that could alter the answer, made by this site, applied from a peer, or
-- written by hand in SQL, sends one empty NOTIFY on channel `tributary_credentials` (once per
-- statement; PostgreSQL folds identical notices within a transaction and drops them on rollback),
-- and the site forgets everything it holds. Token columns the answer does not depend on (the name,
-- `last_used_at`, which every request may touch) send nothing.

CREATE FUNCTION credentials_notify() RETURNS TRIGGER LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('tributary_credentials', '');
  RETURN NULL;
END
$$;

CREATE TRIGGER credentials_notify AFTER UPDATE OF "user_id", "secret_hash", "scope", "collection_id",
  "expires_at", "revoked_at" OR DELETE ON "api_tokens"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();
CREATE TRIGGER credentials_notify AFTER UPDATE OR DELETE ON "sessions"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();
CREATE TRIGGER credentials_notify AFTER UPDATE OR DELETE ON "users"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();
CREATE TRIGGER credentials_notify AFTER INSERT OR UPDATE OR DELETE ON "memberships"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();
CREATE TRIGGER credentials_notify AFTER UPDATE OF "name" OR DELETE ON "project_groups"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();
-- A token confined to a collection follows it when it moves and stops when it is trashed.
CREATE TRIGGER credentials_notify AFTER UPDATE OF "path", "trash_id" OR DELETE ON "collections"
  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();
