-- Paths may be 4,096 bytes of UTF-8 (packages/shared/src/paths.ts), but a btree entry holds at most
-- 2,704: the unique index on (path, trash_id) refused long paths that did not compress well ("index
-- row size 2736 exceeds btree maximum 2704", a 500 to the client). Collections' paths are indexed by
-- a hash index instead, which stores a 4-byte hash whatever the length and serves the lookups by
-- path (`path = $1`, `path = ANY($1)`).
--
-- Uniqueness does not need the path: a collection's path is its parent's path and its name, and
-- (parent_id, trash_id, name) is unique already (names are at most 255 bytes, well within a btree
-- entry), so two live collections cannot share a path, nor two in one trash entry. A name clash
-- between sites still fails on that index (23505), which replication turns into a same-name rename.
DROP INDEX "collections_path_trash_id_key";
CREATE INDEX "collections_path_idx" ON "collections" USING HASH ("path");
