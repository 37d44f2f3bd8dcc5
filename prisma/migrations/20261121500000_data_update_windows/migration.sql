-- Data updates (docs/conflicts.md, "Data updates"): the site holding an object's bytes accepts
-- updates of them from one site per replication cycle. This site-local table (never replicated,
-- read and written with SQL by apps/api/src/data, so schema.prisma does not model it) remembers,
-- per object, which site's update was accepted last and when; another site's update is refused
-- with UPDATE_REJECTED until a cycle that started after that moment has completed.
CREATE TABLE "data_update_windows" (
    "object_id" BIGINT NOT NULL,
    "site_id" TEXT NOT NULL,
    "accepted_at" TIMESTAMPTZ(3) NOT NULL,

    CONSTRAINT "data_update_windows_pkey" PRIMARY KEY ("object_id")
);
