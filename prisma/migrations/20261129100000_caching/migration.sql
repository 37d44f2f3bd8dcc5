-- Caching sites and subscriptions (issue 29; docs/caching.md).
--
-- replicas.cached: a copy a site keeps because someone read the object there (a fault-in, a staged
--   or pinned object), not because a rule wants it. Cached copies follow the same states and are
--   served by the same rule (good and of the object's checksum); they are never trimmed as surplus,
--   and only this site's cache eviction removes them (least recently read first, never one a rule
--   wants, never the last good copy). The mover's plan clears the flag when a rule comes to want the
--   copy. Replicated, so every site's copy listing says which copies are cached.
-- replicas.pinned: a cached copy that eviction leaves alone until it is unpinned. Replicated.
-- replicas.last_read_at: when this site last served the copy (the eviction's order). A local column
--   (repl_tables.local_columns): reads are not catalog changes.
--
-- placement_rules.subscription: the rule is a subscription of its only site to the collection: its
--   site is wanted in addition to the copies objects already have, and a subscription alone never
--   makes a copy surplus (docs/placement.md, "Subscriptions").

ALTER TABLE "replicas"
  ADD COLUMN "cached" BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN "pinned" BOOLEAN NOT NULL DEFAULT false,
  ADD COLUMN "last_read_at" TIMESTAMPTZ(3);

ALTER TABLE "placement_rules" ADD COLUMN "subscription" BOOLEAN NOT NULL DEFAULT false;

UPDATE "repl_tables" SET "local_columns" = '{attempts,next_attempt_at,last_read_at}' WHERE "name" = 'replicas';
