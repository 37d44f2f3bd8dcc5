/**
 * Serialises everything that gives a name to an entry of one collection (uploads, new collections,
 * moves and restores into it), so a collection and an object can never end up with the same name.
 * Only entries with the same parent and name wait for each other. The ingest path takes the same
 * lock in SQL: `catalog_ingest_object` and `catalog_ingest_objects` of the migrations.
 */
export const LOCK_NAME_SQL = 'SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))';
