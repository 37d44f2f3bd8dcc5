// The functions, triggers and views of a catalog, read and dropped the same way by the migration
// check (scripts/check-migrations.mjs) and the migrator's tests (migrator.itest.ts). Plain
// JavaScript, typed by catalog-routines.d.mts: the check runs before anything is built.

/**
 * Every function, trigger and view of the public schema as PostgreSQL prints them, and the rows
 * repl_prepare_tables() derives into repl_tables, keyed by object (`function <signature>`,
 * `trigger <name> on <table>`, `view <name>`, `repl_tables row <table>`): two catalogs with equal
 * maps run the same SQL code.
 *
 * @param {import('pg').ClientBase} client
 * @returns {Promise<Map<string, string>>}
 */
export async function routines(client) {
  const out = new Map();
  const functions = await client.query(
    `SELECT p.oid::regprocedure::text AS sig, pg_get_functiondef(p.oid) AS def
       FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'`,
  );
  for (const r of functions.rows) out.set(`function ${r.sig}`, r.def);
  const triggers = await client.query(
    `SELECT t.tgrelid::regclass::text AS tbl, t.tgname::text AS name, pg_get_triggerdef(t.oid) AS def,
            t.tgenabled::text AS enabled
       FROM pg_trigger t WHERE NOT t.tgisinternal`,
  );
  for (const r of triggers.rows) out.set(`trigger ${r.name} on ${r.tbl}`, `${r.def} (${r.enabled})`);
  const views = await client.query(
    `SELECT c.oid::regclass::text AS name, pg_get_viewdef(c.oid) AS def
       FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = 'public' AND c.relkind IN ('v', 'm')`,
  );
  for (const r of views.rows) out.set(`view ${r.name}`, r.def);
  const tables = await client.query(`SELECT to_regclass('repl_tables') IS NOT NULL AS present`);
  if (tables.rows[0].present) {
    const rows = await client.query(`SELECT "name", to_jsonb(r)::text AS row FROM repl_tables r`);
    for (const r of rows.rows) out.set(`repl_tables row ${r.name}`, r.row);
  }
  return out;
}

/**
 * Drops every trigger, view and function of the public schema (tables and their rows stay).
 *
 * @param {import('pg').ClientBase} client
 * @returns {Promise<void>}
 */
export async function dropRoutines(client) {
  await client.query(`DO $$
    DECLARE r RECORD;
    BEGIN
      FOR r IN SELECT t.tgname, t.tgrelid::regclass AS rel FROM pg_trigger t
                 JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE NOT t.tgisinternal AND n.nspname = 'public' LOOP
        EXECUTE format('DROP TRIGGER %I ON %s', r.tgname, r.rel);
      END LOOP;
      FOR r IN SELECT c.oid::regclass AS v FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
                WHERE n.nspname = 'public' AND c.relkind = 'v' LOOP
        EXECUTE format('DROP VIEW IF EXISTS %s CASCADE', r.v);
      END LOOP;
      FOR r IN SELECT p.oid::regprocedure AS f FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
                WHERE n.nspname = 'public' LOOP
        EXECUTE format('DROP FUNCTION %s', r.f);
      END LOOP;
    END $$`);
}
