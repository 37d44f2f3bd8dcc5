-- Resumable upload sessions (issue 7). Local to the site that holds the bytes: not replicated,
-- so no change-capture trigger.
CREATE TABLE "upload_sessions" (
    "id" TEXT NOT NULL,
    "user_id" BIGINT NOT NULL,
    "path" TEXT NOT NULL,
    "size" BIGINT,
    "received" BIGINT NOT NULL DEFAULT 0,
    "sha256" TEXT,
    "overwrite" BOOLEAN NOT NULL DEFAULT false,
    "content_type" TEXT NOT NULL,
    "expires_at" TIMESTAMPTZ(3) NOT NULL,
    "created_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updated_at" TIMESTAMPTZ(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "upload_sessions_pkey" PRIMARY KEY ("id")
);

CREATE INDEX "upload_sessions_user_id_idx" ON "upload_sessions"("user_id");

CREATE INDEX "upload_sessions_expires_at_idx" ON "upload_sessions"("expires_at");
