import { createHash, randomUUID } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import pg from 'pg';

/**
 * Brings a catalog up to date in two steps (prisma/functions/README.md):
 *
 * 1. prisma/migrations, in name order: tables, columns, indexes and data changes, each applied once.
 *    Each migration file is sent as one query inside its own transaction, so `$$` bodies in old
 *    migrations work (Prisma's runner splits on `;`). Applied migrations are recorded in Prisma's own
 *    `_prisma_migrations` table format.
 * 2. prisma/functions/*.sql, in name order: the current definition of every SQL function, trigger and
 *    view, written to be applied again and again (as Flyway's repeatable migrations), in one
 *    transaction after the migrations. Their checksums and the migrations they followed are recorded
 *    in `_catalog_functions`; when neither changed since, the step is skipped.
 */
export const MIGRATIONS_DIR = path.resolve(__dirname, '../../../../prisma/migrations');
export const FUNCTIONS_DIR = path.resolve(__dirname, '../../../../prisma/functions');

/** Where `migrate` records what prisma/functions held when it last applied it. */
export const FUNCTIONS_TABLE = '_catalog_functions';

// Any constant works; it only has to be the same for every process migrating this database.
const MIGRATION_LOCK_KEY = 72_616_001;

export interface MigrationResult {
  /** Migrations applied by this call, in order. */
  applied: string[];
  /** Whether this call applied prisma/functions (false: nothing had changed since the last time). */
  functionsApplied: boolean;
}

export interface SqlFile {
  name: string;
  sql: string;
}

export interface MigrationDirs {
  migrations?: string;
  functions?: string;
}

export async function listMigrations(dir = MIGRATIONS_DIR): Promise<SqlFile[]> {
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

export async function listFunctionFiles(dir = FUNCTIONS_DIR): Promise<SqlFile[]> {
  const names = (await fs.readdir(dir)).filter((name) => name.endsWith('.sql')).sort();
  return Promise.all(
    names.map(async (name) => ({ name, sql: await fs.readFile(path.join(dir, name), 'utf8') })),
  );
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

export async function migrate(
  connection: pg.ClientConfig,
  dirs: MigrationDirs = {},
): Promise<MigrationResult> {
  const client = new pg.Client(connection);
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const applied = await applyMigrations(client, await listMigrations(dirs.migrations));
    const functionsApplied = await applyFunctionsIfChanged(client, await listFunctionFiles(dirs.functions));
    return { applied, functionsApplied };
  } finally {
    await client.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK_KEY]).catch(() => undefined);
    await client.end();
  }
}

async function applyMigrations(client: pg.Client, migrations: SqlFile[]): Promise<string[]> {
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
  const result: string[] = [];
  for (const migration of migrations) {
    const checksum = sha256(migration.sql);
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
    result.push(migration.name);
  }
  return result;
}

/**
 * Applies the function files unless the same files were applied after the same migrations. The
 * migrations count too: one that adds a replicated column needs repl_prepare_tables() run again, and
 * a start that stopped between a migration and this step must still finish it.
 */
async function applyFunctionsIfChanged(client: pg.Client, files: SqlFile[]): Promise<boolean> {
  await client.query(`CREATE TABLE IF NOT EXISTS "${FUNCTIONS_TABLE}" (
    "file" TEXT PRIMARY KEY,
    "checksum" VARCHAR(64) NOT NULL,
    "migrations" VARCHAR(64) NOT NULL,
    "applied_at" TIMESTAMPTZ NOT NULL DEFAULT now())`);
  const migrations = await client.query<{ migration_name: string; checksum: string }>(
    `SELECT migration_name, checksum FROM "_prisma_migrations" WHERE finished_at IS NOT NULL AND rolled_back_at IS NULL`,
  );
  const migrationsSum = sha256(
    migrations.rows
      .map((r) => `${r.migration_name} ${r.checksum}\n`)
      .sort()
      .join(''),
  );
  const wanted = files.map((f) => ({ file: f.name, checksum: sha256(f.sql) }));
  const recorded = await client.query<{ file: string; checksum: string; migrations: string }>(
    `SELECT "file", "checksum", "migrations" FROM "${FUNCTIONS_TABLE}"`,
  );
  const before = new Map(recorded.rows.map((r) => [r.file, r]));
  const unchanged =
    before.size === wanted.length &&
    wanted.every((w) => {
      const r = before.get(w.file);
      return r?.checksum === w.checksum && r.migrations === migrationsSum;
    });
  if (unchanged) return false;
  await client.query('BEGIN');
  try {
    await applyFunctionFiles(client, files);
    await client.query(`DELETE FROM "${FUNCTIONS_TABLE}"`);
    await client.query(
      `INSERT INTO "${FUNCTIONS_TABLE}" ("file", "checksum", "migrations")
       SELECT f, c, $3 FROM unnest($1::text[], $2::text[]) AS t(f, c)`,
      [wanted.map((w) => w.file), wanted.map((w) => w.checksum), migrationsSum],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK');
    throw err;
  }
  return true;
}

/** Runs the function files in order, each as one query, in the caller's transaction. */
export async function applyFunctionFiles(client: pg.Client, files: SqlFile[]): Promise<void> {
  for (const file of files) {
    try {
      await client.query(file.sql);
    } catch (err) {
      throw new Error(`prisma/functions/${file.name} failed: ${(err as Error).message}`);
    }
  }
}
