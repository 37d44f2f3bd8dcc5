/**
 * `@tributary/api/embedding`: what code outside the API may use to run sites of its own in its
 * process (the benchmarks in `bench/`). Everything else in the API is internal, except the scripts
 * that start sites as processes, which package.json exports so that they can be found without
 * loading the API: `require.resolve('@tributary/api/start')` (what `npm start` runs) and
 * `require.resolve('@tributary/api/site')` (one site). Built to `dist/embedding.js` with its
 * declarations; a change here is a change to that contract.
 */

/** A site as `npm start` builds it (Nest app, catalog pool, replication), not yet listening. */
export { createSiteApp, type SiteApp } from './app.factory';
/** Settings from an environment (as `process.env`), and the young-generation size a site runs with. */
export { loadConfig, SITE_SEMI_SPACE_MB, type SiteConfig } from './config/config';
/** An embedded PostgreSQL in a directory of one's choice, and a free loopback port. */
export { freePort, startEmbeddedPostgres, type EmbeddedServer } from './database/embedded-postgres';
/** Migrates a catalog database (prisma/migrations, then prisma/functions). */
export { migrate } from './database/migrator';
/** The catalog's tables and rules, as every site hands them to the replication engine. */
export { catalogApplication } from './replication/catalog/application';
/** The statements the API runs for a metadata query (`bench:metadata --explain` prints their plans). */
export { MetadataQueryRepository, type QuerySpec } from './metadata/metadata-query.repository';
export type { SqlPool } from './database/sql-pool';

/** Throughput of an unthrottled scrub pass against `sha256sum` over the same files (bench:placement). */
export { measureScrubVsSha256, type ScrubThroughput } from './scrub/scrub-throughput';
