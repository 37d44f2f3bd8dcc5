import { createHash, randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

/**
 * Applies prisma/migrations in order. Each migration file is sent as one query inside its own
 * transaction, so trigger functions with `$$` bodies work (Prisma's runner splits on `;`).
 * Applied migrations are recorded in Prisma's own `_prisma_migrations` table format.
 */
export const MIGRATIONS_DIR = path.resolve(__dirname, '../../../../prisma/migrations');

// Any constant works; it only has to be the same for every process migrating this database.
const MIGRATION_LOCK_KEY = 72_616_001;

export interface MigrationResult {
  applied: string[];
}

export async function listMigrations(dir = MIGRATIONS_DIR): Promise<{ name: string; sql: string }[]> {
  const entries = await fs.readdir(dir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => ({
      name,
      sql: await fs.readFile(path.join(dir, name, 'migration.sql'), 'utf8'),
    })),
  );
}

export async function migrate(connection: pg.ClientConfig, dir = MIGRATIONS_DIR): Promise<MigrationResult> {
  const client = new pg.Client(connection);
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    await client.query(`CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
      "id" VARCHAR(36) PRIMARY KEY NOT NULL,
      "checksum" VARCHAR(64) NOT NULL,
      "finished_at" TIMESTAMPTZ,
      "migration_name" VARCHAR(255) NOT NULL,
      "logs" TEXT,
      "rolled_back_at" TIMESTAMPTZ,
      "started_at" TIMESTAMPTZ NOT NULL DEFAULT now(),
      "applied_steps_count" INTEGER NOT NULL DEFAULT 0)`);
    const done = await client.query<{ migration_name: string; checksum: string }>(
      'SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL',
    );
    const applied = new Map(done.rows.map((r) => [r.migration_name, r.checksum]));
    const result: MigrationResult = { applied: [] };
    for (const migration of await listMigrations(dir)) {
      const checksum = createHash('sha256').update(migration.sql).digest('hex');
      const previous = applied.get(migration.name);
      if (previous !== undefined) {
        if (previous !== checksum) {
          throw new Error(
            `migration ${migration.name} was changed after it was applied; add a new migration instead`,
          );
        }
        continue;
      }
      await client.query('BEGIN');
      try {
        await client.query(migration.sql);
        await client.query(
          `INSERT INTO "_prisma_migrations" (id, checksum, finished_at, migration_name, applied_steps_count)
           VALUES ($1, $2, now(), $3, 1)`,
          [randomUUID(), checksum, migration.name],
        );
        await client.query('COMMIT');
      } catch (err) {
        await client.query('ROLLBACK');
        throw new Error(`migration ${migration.name} failed: ${(err as Error).message}`);
      }
      result.applied.push(migration.name);
    }
    return result;
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}
