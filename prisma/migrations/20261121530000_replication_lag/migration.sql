-- Replication lag per peer over time (GET /api/v1/replication/lag, the portal's Sites chart): one
-- sample per peer after each cycle, kept for a day. Site-local (never replicated); read and written
-- with SQL by apps/api/src/replication, so schema.prisma does not model it.
CREATE TABLE "repl_lag_samples" (
    "peer_id" TEXT NOT NULL,
    "at" TIMESTAMPTZ(3) NOT NULL,
    "lag_seconds" DOUBLE PRECISION NOT NULL,
    "backlog_changes" INTEGER NOT NULL,

    CONSTRAINT "repl_lag_samples_pkey" PRIMARY KEY ("peer_id", "at")
);
CREATE INDEX "repl_lag_samples_at_idx" ON "repl_lag_samples" ("at");
