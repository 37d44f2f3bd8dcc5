import { spawn } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FUNCTIONS_DIR, MIGRATIONS_DIR } from './migrator';

const ROOT = path.resolve(__dirname, '../../../..');

function checkMigrations(args: string[]): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [path.join(ROOT, 'scripts', 'check-migrations.mjs'), ...args], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (output += chunk));
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, output }));
  });
}

/** `npm run prisma:check` on copies of prisma/migrations and prisma/functions with mistakes in them. */
describe('scripts/check-migrations.mjs: functions, triggers and views', () => {
  let work: string;
  let migrations: string;
  let functions: string;

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'tributary-check-'));
    migrations = path.join(work, 'migrations');
    functions = path.join(work, 'functions');
    await cp(MIGRATIONS_DIR, migrations, { recursive: true });
    await cp(FUNCTIONS_DIR, functions, { recursive: true });
  });

  afterAll(async () => {
    await rm(work, { recursive: true, force: true });
  });

  it('refuses a new migration that defines a function, a file that is not repeatable, and a function no file defines', async () => {
    await mkdir(path.join(migrations, '99991231000000_mistakes'));
    await writeFile(
      path.join(migrations, '99991231000000_mistakes', 'migration.sql'),
      [
        '-- A function defined in a migration (its body mentions CREATE TRIGGER, which is no statement).',
        'CREATE OR REPLACE FUNCTION probe_in_migration() RETURNS TEXT LANGUAGE plpgsql AS $$',
        "BEGIN RETURN 'CREATE TRIGGER x'; END",
        '$$;',
        '-- Allowed: a temporary helper for a data change, and dropping a trigger.',
        'CREATE FUNCTION pg_temp.helper() RETURNS INTEGER LANGUAGE sql RETURN 2;',
        'DROP TRIGGER "metadata_terms_follow_name" ON "data_objects";',
        '',
      ].join('\n'),
    );
    await writeFile(
      path.join(functions, '099_mistakes.sql'),
      [
        'CREATE TABLE IF NOT EXISTS "probe" ("id" INTEGER);',
        'CREATE FUNCTION probe_once() RETURNS INTEGER LANGUAGE sql RETURN 1;',
        'CREATE TRIGGER "probe_trigger" AFTER INSERT ON "saved_searches"',
        '  FOR EACH STATEMENT EXECUTE FUNCTION credentials_notify();',
        '',
      ].join('\n'),
    );
    // repl_digest() removed from its file but dropped by no migration.
    const log = path.join(functions, '080_replication_log.sql');
    const text = await readFile(log, 'utf8');
    await writeFile(log, text.slice(0, text.indexOf('-- A digest of the replicated catalog')));

    const { code, output } = await checkMigrations(['--migrations', migrations, '--functions', functions]);
    expect(code).toBe(1);
    expect(output).toContain(
      'prisma/migrations/99991231000000_mistakes/migration.sql, line 2: CREATE OR REPLACE FUNCTION probe_in_migration()',
    );
    expect(output).toContain('are defined in prisma/functions');
    expect(output).not.toMatch(/pg_temp\.helper|line 6:|line 7:/);
    expect(output).toMatch(/099_mistakes\.sql, line 1: CREATE TABLE IF NOT EXISTS.*go in a migration/);
    expect(output).toMatch(
      /099_mistakes\.sql, line 2: CREATE FUNCTION probe_once\(\).*write CREATE OR REPLACE/,
    );
    expect(output).toMatch(
      /099_mistakes\.sql, line 3: CREATE TRIGGER "probe_trigger".*precede it with DROP TRIGGER IF EXISTS probe_trigger ON saved_searches/,
    );
    expect(output).toMatch(
      /applying prisma\/functions a second time failed: prisma\/functions\/099_mistakes\.sql failed: function "probe_once" already exists/,
    );
    expect(output).toContain(
      'function repl_digest(): left by the migrations, defined by no file in prisma/functions; drop it in a migration',
    );
    expect(output).toContain('prisma/migrations and schema.prisma agree');
  }, 180_000);
});
