-- Partial updates through upload sessions (issue 8): a session may start from an existing object's
-- version (`base_version`, `base_checksum` as the client saw it) and take chunks at any offset;
-- `ranges` holds the [start, end) ranges received so far, sorted and merged. All three stay NULL
-- for a whole-object upload. Sessions are local to a site and not replicated.
ALTER TABLE "upload_sessions" ADD COLUMN "base_version" INTEGER;
ALTER TABLE "upload_sessions" ADD COLUMN "base_checksum" TEXT;
ALTER TABLE "upload_sessions" ADD COLUMN "ranges" JSONB;
