-- Broad metadata queries (issue 34, docs/metadata.md "Broad queries"). A first page sorted by name of a
-- condition that many objects meet walks the live objects in name order and checks each until the page
-- is full (about a page's worth of probes when half the objects match), instead of collecting every
-- match and sorting them. The scope's collection, the owner (visibility) and the id (the keyset and the
-- probes) are in the index, so the walk reads no table row.
CREATE INDEX "data_objects_trash_id_name_id_collection_id_owner_id_idx" ON "data_objects"("trash_id", "name", "id", "collection_id", "owner_id");
