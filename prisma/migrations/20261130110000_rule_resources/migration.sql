-- Placement rules naming storage resources (issue 31; docs/storage.md, "Rules naming resources").
-- placement_rules.resources: null, or a JSON array of {"site", "resource"}: at that site, the copies
-- of the objects the rule covers are kept on that storage resource (by name) rather than the
-- site's default. Replicated with the rest of the rule (placement_rules is in repl_tables); each
-- site moves only its own copies.
ALTER TABLE "placement_rules" ADD COLUMN "resources" JSONB;
