-- Row triggers of catalog tables that fill in values the writer did not give: natural ids and the
-- POSIX attributes of entries. Current definitions, applied after the migrations on every start
-- (prisma/functions/README.md).

-- Natural ids. Rows that are identified by what they join (a membership: a user in a group; a permission: who
-- may do what on which collection or object; a conflict policy: a collection and a kind) take their
-- id from that natural key instead of the site's id range. Two sites that add the same membership,
-- grant or policy in one cycle then write the same record (docs/conflicts.md): replication sees one
-- record changed at two sites (the latest wins, as for any update) instead of two records clashing
-- on a unique key, which no site could apply and which left the catalogs different.
-- Only local writes are given ids here; a peer's row keeps the id it arrived with.
CREATE OR REPLACE FUNCTION catalog_natural_id() RETURNS TRIGGER LANGUAGE plpgsql AS $$
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

DROP TRIGGER IF EXISTS "memberships_natural_id" ON "memberships";
CREATE TRIGGER "memberships_natural_id" BEFORE INSERT ON "memberships"
  FOR EACH ROW EXECUTE FUNCTION catalog_natural_id();

DROP TRIGGER IF EXISTS "permissions_natural_id" ON "permissions";
CREATE TRIGGER "permissions_natural_id" BEFORE INSERT ON "permissions"
  FOR EACH ROW EXECUTE FUNCTION catalog_natural_id();

DROP TRIGGER IF EXISTS "conflict_policies_natural_id" ON "conflict_policies";
CREATE TRIGGER "conflict_policies_natural_id" BEFORE INSERT ON "conflict_policies"
  FOR EACH ROW EXECUTE FUNCTION catalog_natural_id();

-- Entry attributes (mtime_s, mtime_nsec, mode, link_target; docs/attributes.md). A change from a
-- peer that has not been migrated to them yet carries none of these columns: its row would be
-- written with NULLs (the injector writes every column it knows). Such a change keeps the row's
-- attributes (an update) or gets the defaults (an insert: mtime from its updated_at, as the backfill
-- of migration 20261127100000_entry_attributes computed), so replication never stalls on it. Run
-- only when a value is missing (the WHEN clause costs the usual write nothing). A symlink's target
-- never changes: an update without one keeps it.
CREATE OR REPLACE FUNCTION entry_attributes_fill() RETURNS TRIGGER LANGUAGE plpgsql AS $$
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

DROP TRIGGER IF EXISTS "entry_attributes_fill_insert" ON "collections";
CREATE TRIGGER "entry_attributes_fill_insert" BEFORE INSERT ON "collections"
  FOR EACH ROW WHEN (NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL OR NEW."mode" IS NULL) EXECUTE FUNCTION entry_attributes_fill();

DROP TRIGGER IF EXISTS "entry_attributes_fill_update" ON "collections";
CREATE TRIGGER "entry_attributes_fill_update" BEFORE UPDATE ON "collections"
  FOR EACH ROW WHEN (NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL OR NEW."mode" IS NULL) EXECUTE FUNCTION entry_attributes_fill();

DROP TRIGGER IF EXISTS "entry_attributes_fill_insert" ON "data_objects";
CREATE TRIGGER "entry_attributes_fill_insert" BEFORE INSERT ON "data_objects"
  FOR EACH ROW WHEN (NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL OR NEW."mode" IS NULL) EXECUTE FUNCTION entry_attributes_fill();

DROP TRIGGER IF EXISTS "entry_attributes_fill_update" ON "data_objects";
CREATE TRIGGER "entry_attributes_fill_update" BEFORE UPDATE ON "data_objects"
  FOR EACH ROW WHEN (NEW."mtime_s" IS NULL OR NEW."mtime_nsec" IS NULL OR NEW."mode" IS NULL
                     OR (OLD."link_target" IS NOT NULL AND NEW."link_target" IS NULL))
  EXECUTE FUNCTION entry_attributes_fill();
