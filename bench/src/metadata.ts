import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { checkCondition, parseQueryText } from '@tributary/shared';
import { MetadataQueryRepository, type QuerySpec, type SqlPool } from '@tributary/api/embedding';
import { BenchClient, httpTransport, type Transport } from './client';
import { localSite, type BenchSite } from './site';
import { broadBench } from './metadata-broad';
import { runPool } from './workload';

const USAGE = `npm run bench:metadata -- [options]

Builds a catalog of data objects with the ten Table 5 attributes of seed 000 (deterministic
generator; 1,000,000 objects = 10,000,000 triples by default) on a site of its own (embedded
PostgreSQL in a temp directory, fsync on, removed at the end), then measures through the API:
the load (POST /api/v1/metadata/bulk), then, once the site's background work after it has ended
(load_settle_seconds), inserting, modifying and deleting 100,000 triples, and, once the site's
background work after them has ended (settle_seconds), p50/p95 of four
queries (POST /api/v1/metadata/query). Baseline in the same run: the same writes and
queries as plain SQL straight on the catalog database.

  --json          print one JSON object, nothing else on stdout
  --quick         50,000 objects (500,000 triples) for trying it out
  --objects N     objects to load (default 1000000)
  --runs N        timed runs per query (default 50, after 5 untimed runs)
  --warmup N      rounds of untimed requests (GET /api/v1/me and the four queries) before any
                  latency is timed, as a site in use has served (default 500)
  --batch N       objects per bulk request during the load (default 10000)
  --in-flight N   bulk requests in flight during the load (default 2)
  --explain       print the plans (EXPLAIN ANALYZE) of the SQL the API runs for each query to stderr
  --shape broad   instead: queries that match much of the catalog (issue 34): a data set whose values
                  follow a power law (10 triples per object; --objects, --quick and --runs apply, default
                  --runs 20), asked by an administrator, a member of a group granted a tenth of the
                  catalog and a token confined to that tenth, in scope /, that tenth and a deep
                  collection; first page, page with its total (exact or estimated), two facets over a
                  50 % match, scoped against from /, and each reply's total against the exact count`;

const say = (line: string): void => void process.stderr.write(line + '\n');

const FILETYPES = ['fits', 'hdf5', 'netcdf', 'csv', 'tiff', 'jpeg', 'txt', 'dat', 'xml', 'json'];
const DAY = 86_400_000;
const EPOCH_2000 = Date.UTC(2000, 0, 1);
/** Objects touched by each of insert / modify / delete (10 triples each: 100,000 triples). */
const CHANGE_OBJECTS = 10_000;
/** Objects per collection. */
const PER_COLLECTION = 1000;

/** A fixed integer hash (splitmix-like), so the data set is the same on every run. */
function hash(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  x = Math.imul(x ^ (x >>> 16), 0x45d9f3b);
  return (x ^ (x >>> 16)) >>> 0;
}

interface Triple {
  attribute: string;
  value: string | number;
  type?: 'time';
  unit?: string;
}

/** The ten Table 5 triples of object `i`; `variant` changes every value (for the modify step). */
export function table5(i: number, variant = 0): Triple[] {
  const h = (k: number): number => hash(i * 16 + k + variant * 7919);
  return [
    { attribute: 'location', value: `site-${h(1) % 50}` },
    {
      attribute: 'dateOfCreation',
      value: new Date(EPOCH_2000 + (h(2) % 7300) * DAY).toISOString(),
      type: 'time',
    },
    { attribute: 'filetype', value: FILETYPES[h(3) % FILETYPES.length]! },
    { attribute: 'size', value: h(4) % 10_000_000_000, unit: 'bytes' },
    { attribute: 'name', value: `obj-${String(i).padStart(7, '0')}${variant ? `-v${variant}` : ''}` },
    { attribute: 'institution', value: `inst-${h(6) % 20}` },
    { attribute: 'creator', value: `user-${String(h(7) % 1000).padStart(4, '0')}` },
    { attribute: 'resolution', value: h(8) % 1000, unit: 'dpi' },
    { attribute: 'department', value: `dept-${h(9) % 50}` },
    { attribute: 'project', value: `coast-${String(h(10) % 200).padStart(3, '0')}` },
  ];
}

/** The four queries: through the API (JSON body) and as the plain-SQL baseline. */
const QUERIES: Record<string, { body: object; sql: string }> = {
  selective: {
    body: { q: "creator = 'user-0042'", limit: 50, sort: 'name' },
    sql: `SELECT o.id, o.name FROM data_objects o WHERE o.trash_id = 0 AND o.id IN (
            SELECT object_id FROM metadata_triples WHERE value_type = 'text' AND attribute = 'creator' AND value = 'user-0042')
          ORDER BY o.name, o.id LIMIT 51`,
  },
  conjunctive: {
    body: {
      q: 'filetype = fits and project = coast-017 and size between 1e9 and 5e9',
      limit: 50,
      sort: 'name',
    },
    sql: `SELECT o.id, o.name FROM data_objects o WHERE o.trash_id = 0
            AND o.id IN (SELECT object_id FROM metadata_triples WHERE value_type = 'text' AND attribute = 'project' AND value = 'coast-017')
            AND o.id IN (SELECT object_id FROM metadata_triples WHERE value_type = 'text' AND attribute = 'filetype' AND value = 'fits')
            AND o.id IN (SELECT object_id FROM metadata_triples WHERE num IS NOT NULL AND attribute = 'size' AND num BETWEEN 1e9 AND 5e9)
          ORDER BY o.name, o.id LIMIT 51`,
  },
  prefix: {
    body: { q: "name prefix 'obj-00123'", limit: 50, sort: 'name' },
    sql: `SELECT o.id, o.name FROM data_objects o WHERE o.trash_id = 0 AND o.id IN (
            SELECT object_id FROM metadata_triples WHERE value_type = 'text' AND attribute = 'name' AND value LIKE 'obj-00123%')
          ORDER BY o.name, o.id LIMIT 51`,
  },
  facet: {
    body: { limit: 0, count: false, facets: ['project'], facetLimit: 1000 },
    sql: `SELECT value, count(*) FROM metadata_triples WHERE value_type = 'text' AND attribute = 'project' GROUP BY value ORDER BY 2 DESC, 1`,
  },
};

interface Options {
  shape?: 'broad';
  json: boolean;
  objects: number;
  runs: number;
  batch: number;
  inFlight: number;
  warmup: number;
  explain: boolean;
}

function parseOptions(argv: string[]): Options | null {
  const { values } = parseArgs({
    args: argv,
    options: {
      json: { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
      objects: { type: 'string' },
      runs: { type: 'string', default: '50' },
      batch: { type: 'string', default: '10000' },
      'in-flight': { type: 'string', default: '2' },
      warmup: { type: 'string', default: '500' },
      explain: { type: 'boolean', default: false },
      shape: { type: 'string', default: 'table5' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) return null;
  const int = (v: string, name: string, min = 1): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer of at least ${min}`);
    return n;
  };
  const objects = int(values.objects ?? (values.quick ? '50000' : '1000000'), 'objects');
  if (values.shape !== 'table5' && values.shape !== 'broad')
    throw new Error('--shape must be table5 (the default) or broad');
  if (values.shape === 'broad') {
    if (objects < 10_000) throw new Error('--objects must be at least 10000 with --shape broad');
    const runs = argv.some((a) => a === '--runs' || a.startsWith('--runs=')) ? values.runs : '20';
    return {
      shape: 'broad',
      json: values.json,
      objects,
      runs: int(runs, 'runs'),
      batch: 0,
      inFlight: 0,
      warmup: 0,
      explain: false,
    };
  }
  if (objects < 3 * CHANGE_OBJECTS) throw new Error(`--objects must be at least ${3 * CHANGE_OBJECTS}`);
  return {
    json: values.json,
    objects,
    runs: int(values.runs, 'runs'),
    batch: Math.min(int(values.batch, 'batch'), 20_000),
    inFlight: int(values['in-flight'], 'in-flight'),
    warmup: int(values.warmup, 'warmup', 0),
    explain: values.explain,
  };
}

const percentile = (sorted: number[], p: number): number =>
  sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;

async function timed(work: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await work();
  return (performance.now() - start) / 1000;
}

/** Median and p95 in ms of `runs` timed calls after 5 untimed ones. */
async function latency(runs: number, call: () => Promise<unknown>): Promise<{ p50: number; p95: number }> {
  for (let i = 0; i < 5; i++) await call();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = performance.now();
    await call();
    times.push(performance.now() - start);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p95: percentile(times, 95) };
}

const objectPath = (base: string, i: number): string =>
  `${base}/c${String(Math.floor(i / PER_COLLECTION)).padStart(5, '0')}/o${String(i).padStart(7, '0')}`;

/**
 * Setup (not timed): the collections through the API, then the objects themselves straight in SQL
 * (uploading a million files is the ingest bench's business), without change capture.
 */
async function createObjects(client: BenchClient, db: pg.Client, base: string, total: number): Promise<void> {
  const collections = Math.ceil(total / PER_COLLECTION);
  await client.makeCollection(base);
  await runPool(collections, 4, (c) => client.makeCollection(`${base}/c${String(c).padStart(5, '0')}`));
  await db.query(`SET tributary.capture = 'off'`);
  await db.query(
    `INSERT INTO data_objects (collection_id, name, size, checksum, owner_id, created_by)
     SELECT c.id, 'o' || lpad(i::text, 7, '0'), 1024, 'sha256:' || md5(i::text), c.owner_id, c.owner_id
       FROM generate_series(0, $2::int - 1) AS i
       JOIN collections c ON c.trash_id = 0 AND c.path = $1 || '/c' || lpad((i / ${PER_COLLECTION})::text, 5, '0')`,
    [base, total],
  );
  await db.query(`SET tributary.capture = 'on'`);
}

/**
 * The load's request: objects `from`..`to` as one table (`columns`, docs/metadata.md): their paths and,
 * per Table 5 attribute, one value per object. The same triples as `bulkBody(..., 'add')`, in a third
 * of the JSON.
 */
function tableBody(base: string, from: number, to: number): string {
  const paths: string[] = [];
  const columns = table5(from).map(({ attribute, type, unit }) => ({
    attribute,
    ...(type ? { type } : {}),
    ...(unit ? { unit } : {}),
    values: [] as (string | number)[],
  }));
  for (let i = from; i < to; i++) {
    paths.push(objectPath(base, i));
    table5(i).forEach((t, k) => columns[k]!.values.push(t.value));
  }
  return JSON.stringify({ operations: [{ paths, columns }] });
}

function bulkBody(base: string, from: number, to: number, kind: 'add' | 'set', variant = 0): string {
  const ops: string[] = [];
  for (let i = from; i < to; i++) {
    ops.push(JSON.stringify({ paths: [objectPath(base, i)], [kind]: table5(i, variant) }));
  }
  return `{"operations":[${ops.join(',')}]}`;
}

interface Figures {
  load_seconds: number;
  insert_100k_seconds: number;
  modify_100k_seconds: number;
  delete_100k_seconds: number;
  [key: string]: number | string;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (!options) {
    console.log(USAGE);
    return;
  }
  if (process.env.TRIBUTARY_URL)
    throw new Error('bench:metadata needs a site of its own (unset TRIBUTARY_URL)');
  if (options.shape === 'broad') {
    const figures = await broadBench(options);
    if (options.json) console.log(JSON.stringify(figures));
    else console.log(broadTable(figures));
    return;
  }
  let site: BenchSite | undefined;
  let transport: Transport | undefined;
  let stopping = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (stopping) return;
    stopping = true;
    say(`\n${signal}: cleaning up`);
    void Promise.resolve(site?.close())
      .catch(() => undefined)
      .finally(() => process.exit(signal === 'SIGINT' ? 130 : 143));
  };
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, stop);
  }
  try {
    site = await localSite('thread');
    say(`site: ${site.description}`);
    const sql = new pg.Client(site.connection);
    // Ends with the site at the end (or on an error, which is reported first).
    sql.on('error', () => undefined);
    await sql.connect();
    transport = httpTransport(site.baseUrl, options.inFlight + 2);
    const token = await BenchClient.createWriteToken(transport, site.admin!.username, site.admin!.password);
    const client = new BenchClient(transport, token);
    const base = '/projects/mdbench';
    // Objects: the loaded ones, then three sets of 10,000 for insert (new, untagged), and the
    // baseline's own insert; modify and delete work on loaded objects no query result depends on.
    const loaded = options.objects;
    const total = loaded + 2 * CHANGE_OBJECTS;
    say(
      `setup: ${total} objects in ${Math.ceil(total / PER_COLLECTION)} collections under ${base} (SQL, not timed)`,
    );
    await createObjects(client, sql, base, total);

    const bulk = (body: string): Promise<unknown> => client.postJson('/api/v1/metadata/bulk', body);
    say(
      `load: ${loaded} objects x 10 triples through POST /api/v1/metadata/bulk (as tables: columns), ${options.batch} objects per request, ${options.inFlight} in flight`,
    );
    const batches = Math.ceil(loaded / options.batch);
    let done = 0;
    const loadSeconds = await timed(() =>
      runPool(batches, options.inFlight, async (b) => {
        const from = b * options.batch;
        await bulk(tableBody(base, from, Math.min(loaded, from + options.batch)));
        done += 1;
        if (done % 10 === 0 || done === batches)
          say(`  ${Math.min(loaded, done * options.batch)} objects loaded`);
      }),
    );
    say(`load: ${loadSeconds.toFixed(1)} s (${Math.round((loaded * 10) / loadSeconds)} triples/s)`);
    // The writes are timed once the site has digested the load (extraction, folds, autovacuum run
    // on for a while after the last request), so each figure is its own operation's.
    const loadSettleSeconds = await timed(() => settle(sql));
    say(`settled: the load's background work ended ${loadSettleSeconds.toFixed(1)} s after its last request`);

    // Writes of 100,000 triples, each as 2 requests of 5,000 objects x 10 triples, both in flight.
    const half = CHANGE_OBJECTS / 2;
    const insertFrom = loaded;
    const insertSeconds = await timed(() =>
      Promise.all(
        [0, 1].map((k) => bulk(bulkBody(base, insertFrom + k * half, insertFrom + (k + 1) * half, 'add'))),
      ),
    );
    // Modify: new values for all ten attributes of 10,000 loaded objects (rows updated in place).
    const modifyFrom = loaded - 2 * CHANGE_OBJECTS;
    const modifySeconds = await timed(() =>
      Promise.all(
        [0, 1].map((k) => bulk(bulkBody(base, modifyFrom + k * half, modifyFrom + (k + 1) * half, 'set', 1))),
      ),
    );
    // Delete: all ten triples of 10,000 other loaded objects.
    const deleteFrom = loaded - CHANGE_OBJECTS;
    const removeAll = table5(0).map((t) => ({ attribute: t.attribute }));
    const deleteSeconds = await timed(() =>
      Promise.all(
        [0, 1].map((k) => {
          const paths = Array.from({ length: half }, (_, j) => objectPath(base, deleteFrom + k * half + j));
          return bulk(JSON.stringify({ operations: [{ paths, remove: removeAll }] }));
        }),
      ),
    );
    say(
      `insert ${insertSeconds.toFixed(2)} s, modify ${modifySeconds.toFixed(2)} s, delete ${deleteSeconds.toFixed(2)} s (100,000 triples each)`,
    );

    // Baseline writes: the same statements' work as plain SQL on the catalog (with change capture),
    // on the other 10,000 new objects: insert, update in place, delete.
    const baseFrom = loaded + CHANGE_OBJECTS;
    const ids = (
      await sql.query<{ id: string }>(
        `SELECT o.id FROM data_objects o JOIN collections c ON c.id = o.collection_id
          WHERE c.path LIKE $1 AND o.name >= $2 ORDER BY o.name`,
        [`${base}/c%`, `o${String(baseFrom).padStart(7, '0')}`],
      )
    ).rows.map((r) => r.id);
    const rows = ids.flatMap((id, j) => table5(baseFrom + j).map((t) => ({ id, t })));
    const arrays = (variant: number): unknown[] => {
      const triples = variant
        ? ids.flatMap((id, j) => table5(baseFrom + j, variant).map((t) => ({ id, t })))
        : rows;
      return [
        triples.map((r) => r.id),
        triples.map((r) => r.t.attribute),
        triples.map((r) =>
          r.t.type === 'time' ? 'time' : typeof r.t.value === 'number' ? 'number' : 'text',
        ),
        triples.map((r) => String(r.t.value)),
        triples.map((r) => r.t.unit ?? null),
      ];
    };
    const baselineInsert = await timed(() =>
      sql.query(
        `INSERT INTO metadata_triples (object_id, attribute, value_type, value, num, time, unit)
         SELECT o, a, t, v, CASE WHEN t = 'number' THEN v::float8 END, CASE WHEN t = 'time' THEN v::timestamptz END, u
           FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) AS x(o, a, t, v, u)`,
        arrays(0),
      ),
    );
    const baselineModify = await timed(() =>
      sql.query(
        `UPDATE metadata_triples m SET value = x.v, num = CASE WHEN x.t = 'number' THEN x.v::float8 END,
                time = CASE WHEN x.t = 'time' THEN x.v::timestamptz END, updated_at = now()
           FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[]) AS x(o, a, t, v, u)
          WHERE m.object_id = x.o AND m.attribute = x.a`,
        arrays(1),
      ),
    );
    const baselineDelete = await timed(() =>
      sql.query('DELETE FROM metadata_triples WHERE object_id = ANY($1::bigint[])', [ids]),
    );

    // What autovacuum does shortly after writes this size; done here so the query figures do not
    // depend on when it happens to run.
    await sql.query(
      'VACUUM (ANALYZE) metadata_triples, metadata_terms, metadata_value_counts, metadata_value_deltas, data_objects, collections',
    );
    // Queries are timed on a settled catalog, as a site's users meet it: after the load, the site's
    // own background work (extraction of 10 M captured triples, the counts' fold, autovacuum of the
    // version table) runs for minutes, on the same two cores as the queries.
    const settleSeconds = await timed(() => settle(sql));
    say(
      `settled: the catalog's background work ended ${settleSeconds.toFixed(1)} s after the writes' vacuum`,
    );
    // The API's fixed cost per request on this machine (HTTP, authentication, routing): GET /api/v1/me.
    // Warm-up: a site in use has served many requests, so its code is optimized by the JIT and its
    // pooled connections have their catalog caches. With 5 untimed calls only, a fresh site's
    // `GET /api/v1/me` took 3.7 ms at the median over the next 50 and 1.2 ms after 2,000 calls
    // (docs/benchmark.md, "Metadata benchmark").
    const bodies = Object.values(QUERIES).map((q) => JSON.stringify(q.body));
    const warmStart = performance.now();
    for (let i = 0; i < options.warmup; i++) {
      await client.homePath();
      for (const body of bodies) await client.postJson('/api/v1/metadata/query', body);
    }
    const warmupSeconds = (performance.now() - warmStart) / 1000;
    say(
      `warm-up: ${options.warmup} rounds of the floor and the four queries in ${warmupSeconds.toFixed(1)} s`,
    );
    const floor = await latency(options.runs, () => client.homePath());
    say(`API floor (GET /api/v1/me): p50 ${floor.p50.toFixed(2)} ms, p95 ${floor.p95.toFixed(2)} ms`);

    const figures: Figures = {
      objects: loaded,
      triples: loaded * 10,
      load_seconds: round(loadSeconds, 2),
      insert_100k_seconds: round(insertSeconds, 3),
      modify_100k_seconds: round(modifySeconds, 3),
      delete_100k_seconds: round(deleteSeconds, 3),
      baseline_insert_100k_seconds: round(baselineInsert, 3),
      baseline_modify_100k_seconds: round(baselineModify, 3),
      baseline_delete_100k_seconds: round(baselineDelete, 3),
      // The load per 100,000 triples against the same run's single SQL insert of 100,000 triples
      // (capture on): a load figure that compares across machines of different speed.
      ratio_load_per_100k: round(loadSeconds / (loaded / 10_000) / baselineInsert, 2),
      load_settle_seconds: round(loadSettleSeconds, 1),
      settle_seconds: round(settleSeconds, 1),
      warmup_rounds: options.warmup,
      api_floor_p50_ms: round(floor.p50, 2),
      api_floor_p95_ms: round(floor.p95, 2),
    };
    for (const [name, q] of Object.entries(QUERIES)) {
      if (options.explain) await explain(sql, name, q.body as ExplainBody);
      const body = JSON.stringify(q.body);
      const api = await latency(options.runs, () => client.postJson('/api/v1/metadata/query', body));
      const base = await latency(options.runs, () => sql.query(q.sql));
      figures[`query_${name}_p50_ms`] = round(api.p50, 2);
      figures[`query_${name}_p95_ms`] = round(api.p95, 2);
      figures[`baseline_${name}_p50_ms`] = round(base.p50, 2);
      figures[`baseline_${name}_p95_ms`] = round(base.p95, 2);
      figures[`ratio_${name}_p50`] = round(api.p50 / base.p50, 2);
      say(
        `${name}: p50 ${api.p50.toFixed(2)} ms, p95 ${api.p95.toFixed(2)} ms (SQL baseline p50 ${base.p50.toFixed(2)} ms)`,
      );
    }
    const sizes = await sql.query<{ triples: string; changes: string }>(
      `SELECT pg_size_pretty(pg_total_relation_size('metadata_triples')) AS triples,
              pg_size_pretty(pg_total_relation_size('repl_changes')) AS changes`,
    );
    figures.triples_table_size = sizes.rows[0]!.triples;
    figures.captured_changes_size = sizes.rows[0]!.changes;
    await sql.end();
    if (options.json) console.log(JSON.stringify(figures));
    else console.log(table(figures));
  } catch (err) {
    say(err instanceof Error ? (err.stack ?? err.message) : String(err));
    process.exitCode = 1;
  } finally {
    transport?.close();
    await site?.close();
  }
}

/**
 * Waits until the site's background work on the writes has ended: every captured change extracted
 * (the replication cycle, every 30 s), every value-count delta folded (the fold, every 30 s), and
 * nothing but this connection working on the catalog (no active statement, no autovacuum worker), in
 * three samples a second apart; gives up after 15 minutes. (Without the first two, a cycle that had
 * not come round yet could start while the queries are timed.)
 */
async function settle(sql: pg.Client): Promise<void> {
  const deadline = Date.now() + 15 * 60_000;
  let quiet = 0;
  while (quiet < 3 && Date.now() < deadline) {
    const { rows } = await sql.query<{ n: string }>(
      `SELECT (SELECT count(*) FROM pg_stat_activity
                WHERE pid <> pg_backend_pid() AND datname = current_database()
                  AND (state = 'active' OR backend_type = 'autovacuum worker'))
              + (SELECT count(*) FROM (SELECT 1 FROM repl_changes LIMIT 1) c)
              + (SELECT count(*) FROM (SELECT 1 FROM metadata_value_deltas LIMIT 1) d) AS n`,
    );
    quiet = Number(rows[0]!.n) === 0 ? quiet + 1 : 0;
    await new Promise((r) => setTimeout(r, 1000));
  }
}

interface ExplainBody {
  q?: string;
  limit: number;
  sort?: 'name';
  facets?: string[];
  count?: boolean;
}

/** Prints the plans of the statements the API runs for a query (as an administrator, scope /). */
async function explain(sql: pg.Client, name: string, body: ExplainBody): Promise<void> {
  const statements: { text: string; values: unknown[] }[] = [];
  // The repository sends statements both through the pool and as named statements (`query`).
  const record = (text: string, values: unknown[] = []): Promise<{ rows: never[] }> => {
    statements.push({ text, values });
    return Promise.resolve({ rows: [] });
  };
  const recorder = { pool: { query: record }, query: record } as unknown as SqlPool;
  const repo = new MetadataQueryRepository(recorder);
  const spec: QuerySpec = {
    kind: 'object',
    where: body.q ? checkCondition(parseQueryText(body.q)) : null,
    scope: '/',
    sort: body.sort ?? 'name',
    order: 'asc',
    limit: body.limit + 1,
    after: null,
    visibility: {
      all: true,
      userId: 0n,
      groupIds: [],
      level: 'read',
      roots: ['/'],
      exact: [],
      confinedTo: null,
    },
  };
  await repo.page(spec);
  // (The recorder answers nothing, so the count's result cannot be read; its statement is recorded.)
  if (body.count !== false) await repo.count(spec).catch(() => undefined);
  for (const f of body.facets ?? []) await repo.facet(spec, f, 1000);
  for (const st of statements) {
    const plan = await sql.query<{ 'QUERY PLAN': string }>(
      `EXPLAIN (ANALYZE, BUFFERS) ${st.text}`,
      st.values,
    );
    say(`--- ${name}\n${st.text}\n${plan.rows.map((r) => r['QUERY PLAN']).join('\n')}`);
  }
}

function round(n: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
}

function broadTable(f: Record<string, number | string>): string {
  const goals: Record<string, string> = {
    broad_first_page_p95_ms: '<= 20',
    broad_total_p95_ms: '<= 50',
    broad_facets_p95_ms: '<= 150',
    scoped_over_root: '<= 1.5',
  };
  return [
    `${f.objects} objects, ${f.triples} triples, skewed values (--shape broad)`,
    '',
    '| Figure | Value | Goal |',
    '| --- | ---: | --- |',
    ...Object.entries(f)
      .filter(([k]) => !['shape', 'objects', 'triples'].includes(k))
      .map(([k, v]) => `| ${k} | ${v} | ${goals[k] ?? ''} |`),
  ].join('\n');
}

function table(f: Figures): string {
  const goal: Record<string, string> = {
    load_seconds: '<= 120',
    insert_100k_seconds: '<= 5',
    modify_100k_seconds: '<= 5',
    delete_100k_seconds: '<= 5',
  };
  const lines = [
    `${f.objects} objects, ${f.triples} triples (triples table ${f.triples_table_size}, captured changes ${f.captured_changes_size})`,
    '',
  ];
  lines.push(
    '| Figure | Through the API | SQL baseline | Ratio | Goal |',
    '| --- | ---: | ---: | ---: | --- |',
  );
  lines.push(
    `| load (s; ratio: per 100k / SQL insert 100k) | ${f.load_seconds} | | ${f.ratio_load_per_100k}x | <= 120 |`,
  );
  for (const k of ['insert', 'modify', 'delete']) {
    const api = f[`${k}_100k_seconds`] as number;
    const b = f[`baseline_${k}_100k_seconds`] as number;
    lines.push(`| ${k} 100k (s) | ${api} | ${b} | ${round(api / b, 1)}x | ${goal[`${k}_100k_seconds`]} |`);
  }
  for (const name of Object.keys(QUERIES)) {
    const g = name === 'facet' ? '<= 150' : '<= 10';
    lines.push(
      `| ${name} p50 / p95 (ms) | ${f[`query_${name}_p50_ms`]} / ${f[`query_${name}_p95_ms`]} | ${f[`baseline_${name}_p50_ms`]} / ${f[`baseline_${name}_p95_ms`]} | ${f[`ratio_${name}_p50`]}x | p95 ${g} |`,
    );
  }
  lines.push(
    `| API floor, GET /api/v1/me p50 / p95 (ms) | ${f.api_floor_p50_ms} / ${f.api_floor_p95_ms} | | | |`,
  );
  return lines.join('\n');
}

main().catch((err: unknown) => {
  say(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
