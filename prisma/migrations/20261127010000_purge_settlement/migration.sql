-- A purge may remove only what no change still on its way can rescue (docs/conflicts.md, "Trash").
--
-- A peer acknowledges that it applied this site's transactions up to `applied` only together with
-- `through`: its own log position that covers every change it committed before applying them (an
-- update made there before our delete arrived is such a change, and rescues the record wherever it
-- is applied). The pair is taken at the peer's extraction (`reported_*`, what this site tells the
-- origin) and kept here until this site has applied the peer's log up to `through` (`peer_acks`);
-- only then does `peer_applied_seq` advance and deletes up to it settle.
ALTER TABLE "repl_peers"
  ADD COLUMN "reported_applied_seq" BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN "reported_through_seq" BIGINT NOT NULL DEFAULT 0,
  ADD COLUMN "peer_acks" JSONB NOT NULL DEFAULT '[]';

-- What the deleting site had applied of each peer's log when it settled the delete: a site may purge
-- the entry only once it has applied as much (so every rescue the settling site saw has reached it).
ALTER TABLE "trash_entries" ADD COLUMN "settled_through" JSONB;

-- The new column replicates: regenerate the tables' apply statements.
SELECT repl_prepare_tables();
