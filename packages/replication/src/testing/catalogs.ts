import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { adminConnection, cloneTemplate, dropDatabase } from '@tributary/testkit';

/**
 * Test catalogs for the engine's integration tests: each one a database cloned from the migrated
 * template the integration run's global setup prepared (real PostgreSQL, real triggers).
 */
export interface TestCatalog {
  name: string;
  db: pg.Pool;
  connection: pg.ClientConfig;
  drop(): Promise<void>;
}

export async function createCatalog(): Promise<TestCatalog> {
  const name = `repl_${randomBytes(6).toString('hex')}`;
  await cloneTemplate(name);
  const connection = adminConnection(name);
  const db = new pg.Pool({ ...connection, max: 6 });
  db.on('error', () => undefined);
  return {
    name,
    db,
    connection,
    drop: async () => {
      await db.end();
      await dropDatabase(name);
    },
  };
}

/** Registers the catalog's local site with its id range, as the API's bootstrap does. */
export async function registerSite(db: pg.Pool, siteId: string, index: number): Promise<void> {
  const start = BigInt(index) * 2n ** 48n;
  const end = start + 2n ** 48n - 1n;
  await db.query(
    `INSERT INTO sites (id, name, id_range_start, id_range_end, is_local, updated_at) VALUES ($1, $2, $3, $4, true, now())`,
    [siteId, siteId.toUpperCase(), start.toString(), end.toString()],
  );
  await db.query(
    `ALTER SEQUENCE catalog_id_seq MINVALUE ${start} MAXVALUE ${end} START ${start} RESTART ${start}`,
  );
}

declare module 'vitest' {
  export interface ProvidedContext {
    postgres: { host: string; port: number; user: string; password: string; template: string };
  }
}
