-- Rows that are identified by what they join (a membership: a user in a group; a permission: who
-- may do what on which collection or object; a conflict policy: a collection and a kind) take their
-- id from that natural key instead of the site's id range. Two sites that add the same membership,
-- grant or policy in one cycle then write the same record (docs/conflicts.md): replication sees one
-- record changed at two sites (the latest wins, as for any update) instead of two records clashing
-- on a unique key, which no site could apply and which left the catalogs different.
-- Only local writes are given ids here; a peer's row keeps the id it arrived with.
CREATE FUNCTION catalog_natural_id() RETURNS TRIGGER LANGUAGE plpgsql AS $$
DECLARE
  v_key TEXT;
BEGIN
  IF NULLIF(current_setting('tributary.origin', true), '') IS NOT NULL THEN
    RETURN NEW;
  END IF;
  IF TG_TABLE_NAME = 'memberships' THEN
    v_key := NEW."user_id" || ':' || NEW."group_id";
  ELSIF TG_TABLE_NAME = 'permissions' THEN
    v_key := COALESCE(NEW."collection_id"::TEXT, '') || ':' || COALESCE(NEW."object_id"::TEXT, '') || ':' ||
             COALESCE(NEW."user_id"::TEXT, '') || ':' || COALESCE(NEW."group_id"::TEXT, '');
  ELSE
    v_key := NEW."collection_id" || ':' || NEW."kind";
  END IF;
  -- 52 bits of the key's MD5: positive and exact as a JavaScript number (the replication engine
  -- handles rows as JSON). These tables take no ids from the sequence any more, so a hash cannot
  -- meet a sequence id of its own table later.
  NEW."id" := ('x' || substr(md5(TG_TABLE_NAME || ':' || v_key), 1, 13))::BIT(52)::BIGINT;
  RETURN NEW;
END
$$;

CREATE TRIGGER "memberships_natural_id" BEFORE INSERT ON "memberships"
  FOR EACH ROW EXECUTE FUNCTION catalog_natural_id();
CREATE TRIGGER "permissions_natural_id" BEFORE INSERT ON "permissions"
  FOR EACH ROW EXECUTE FUNCTION catalog_natural_id();
CREATE TRIGGER "conflict_policies_natural_id" BEFORE INSERT ON "conflict_policies"
  FOR EACH ROW EXECUTE FUNCTION catalog_natural_id();
