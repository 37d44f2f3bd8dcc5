import { randomBytes } from 'node:crypto';
import { cp, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminConnection, cloneTemplate, dropDatabase, withClient } from '@tributary/testkit';
import {
  applyFunctionFiles,
  FUNCTIONS_DIR,
  FUNCTIONS_TABLE,
  listFunctionFiles,
  migrate,
  MIGRATIONS_DIR,
} from './migrator';
import { dropRoutines, routines as catalogRoutines } from './catalog-routines.mjs';

/**
 * Every function, trigger and view of the catalog as PostgreSQL prints them, plus what
 * repl_prepare_tables() derives into repl_tables: two catalogs with equal descriptions run the same
 * SQL code.
 */
async function routines(client: pg.Client): Promise<string[]> {
  return [...(await catalogRoutines(client))].map(([key, def]) => `${key}\n${def}`).sort();
}

describe('migrate: prisma/migrations, then prisma/functions (real PostgreSQL)', () => {
  const databases: string[] = [];
  let work: string;
  let fresh: string[];

  async function database(kind: string): Promise<pg.ClientConfig> {
    const name = `migrator_${kind}_${randomBytes(4).toString('hex')}`;
    databases.push(name);
    await withClient(adminConnection(), (c) => c.query(`CREATE DATABASE "${name}"`));
    return adminConnection(name);
  }

  async function clone(kind: string): Promise<pg.ClientConfig> {
    const name = `migrator_${kind}_${randomBytes(4).toString('hex')}`;
    databases.push(name);
    await cloneTemplate(name);
    return adminConnection(name);
  }

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'tributary-migrator-'));
    // The integration run's template was set up by migrate() (global-setup.ts): a fresh catalog.
    fresh = await withClient(await clone('fresh'), routines);
  });

  afterAll(async () => {
    for (const name of databases) await dropDatabase(name);
    await rm(work, { recursive: true, force: true });
  });

  it('upgrades a catalog migrated before prisma/functions existed to exactly the functions, triggers and views of a fresh one', async () => {
    const old = await database('old');
    // What the migrator did before: the migrations only, recorded in _prisma_migrations.
    const none = path.join(work, 'no-functions');
    await mkdir(none, { recursive: true });
    await migrate(old, { functions: none });
    await withClient(old, (c) => c.query(`DROP TABLE "${FUNCTIONS_TABLE}"`));

    const result = await migrate(old);
    expect(result).toEqual({ applied: [], functionsApplied: true });
    expect(await withClient(old, routines)).toEqual(fresh);
  });

  it('leaves nothing the files do not define: dropping every function, trigger and view and applying the files gives the same catalog', async () => {
    const db = await clone('rebuilt');
    const files = await listFunctionFiles();
    await withClient(db, async (c) => {
      await c.query('BEGIN');
      await dropRoutines(c);
      expect(await routines(c)).not.toContain(fresh.find((r) => r.startsWith('function repl_apply(')));
      await applyFunctionFiles(c, files);
      await c.query('COMMIT');
      expect(await routines(c)).toEqual(fresh);
    });
  });

  it('skips the files when neither they nor the migrations changed, and applies them again when either did', async () => {
    const db = await clone('restart');
    expect(await migrate(db)).toEqual({ applied: [], functionsApplied: false });

    const functions = path.join(work, 'functions-changed');
    await cp(FUNCTIONS_DIR, functions, { recursive: true });
    await writeFile(
      path.join(functions, '095_probe.sql'),
      'CREATE OR REPLACE FUNCTION migrator_probe() RETURNS INTEGER LANGUAGE sql IMMUTABLE RETURN 7;\n',
    );
    expect(await migrate(db, { functions })).toEqual({ applied: [], functionsApplied: true });
    expect(await migrate(db, { functions })).toEqual({ applied: [], functionsApplied: false });
    await withClient(db, async (c) => {
      expect((await c.query('SELECT migrator_probe() AS n')).rows).toEqual([{ n: 7 }]);
      const recorded = await c.query<{ file: string }>(`SELECT "file" FROM "${FUNCTIONS_TABLE}"`);
      expect(recorded.rows.map((r) => r.file).sort()).toEqual(
        [...(await listFunctionFiles()).map((f) => f.name), '095_probe.sql'].sort(),
      );
    });

    // A migration that adds a replicated column: the files run again after it, and
    // repl_prepare_tables() puts the column into the apply statements.
    const migrations = path.join(work, 'migrations-added');
    await cp(MIGRATIONS_DIR, migrations, { recursive: true });
    await mkdir(path.join(migrations, '99991231000000_probe'));
    await writeFile(
      path.join(migrations, '99991231000000_probe', 'migration.sql'),
      'ALTER TABLE "saved_searches" ADD COLUMN "probe" TEXT;\n',
    );
    expect(await migrate(db, { migrations, functions })).toEqual({
      applied: ['99991231000000_probe'],
      functionsApplied: true,
    });
    await withClient(db, async (c) => {
      const sql = await c.query<{ insert_sql: string }>(
        `SELECT "insert_sql" FROM "repl_tables" WHERE "name" = 'saved_searches'`,
      );
      expect(sql.rows[0]?.insert_sql).toMatch(/updated_by, probe\) SELECT/);
    });
  });

  it('applies the files all or nothing, and names the one that failed', async () => {
    const db = await clone('failing');
    const functions = path.join(work, 'functions-failing');
    await cp(FUNCTIONS_DIR, functions, { recursive: true });
    await writeFile(
      path.join(functions, '005_first.sql'),
      'CREATE OR REPLACE FUNCTION migrator_first() RETURNS INTEGER LANGUAGE sql IMMUTABLE RETURN 1;\n',
    );
    await writeFile(path.join(functions, '099_broken.sql'), 'CREATE OR REPLACE FUNCTION broken( AS;\n');
    await expect(migrate(db, { functions })).rejects.toThrow(/prisma\/functions\/099_broken\.sql failed: /);
    await withClient(db, async (c) => {
      const first = await c.query(`SELECT 1 FROM pg_proc WHERE proname = 'migrator_first'`);
      expect(first.rowCount).toBe(0);
      expect(await routines(c)).toEqual(fresh);
    });
    // The next start with good files is unaffected.
    expect(await migrate(db)).toEqual({ applied: [], functionsApplied: false });
  });
});
