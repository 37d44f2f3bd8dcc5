import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import {
  catalogDigest,
  Dispatcher,
  Extractor,
  Injector,
  MemoryTransport,
  Collector,
  silentLogger,
} from '@tributary/replication';
import pg from 'pg';
import {
  catalogApplication,
  freePort,
  loadConfig,
  migrate,
  startEmbeddedPostgres,
  type EmbeddedServer,
  type SiteConfig,
} from '@tributary/api/embedding';
import { BenchClient, httpTransport } from './client';
import { pairKeys, siteSettings } from './federation-settings';
import { startWorker } from './site';

const USAGE = `npm run bench:replication -- [--json] [--quick]

Measures the replication engine on an embedded PostgreSQL (fsync on) in a temp directory:
  inject_vs_bulk_insert  one site's injector applying a queue of 100,000 changes (100 origin
                         transactions of 1,000), over a plain bulk insert of the same rows
  inject_small_tx_vs_single_insert
                         10,000 single-change origin transactions applied by the injector, over the
                         same rows inserted one row per transaction (each committed)
  converge_seconds       three sites (worker threads, real HTTP, 1 s cycle): after 10,000 changes
                         at one site, seconds until both peers have applied all of its log (the
                         three catalog digests then checked equal);
                         converge_over_cycle: the same over the cycle, at cycles of 1 s and 5 s
  write_overhead_ratio   ingest of 1000 x 10 KB files (batch upload) at a replicating site divided
                         by the same at a site with change capture off, same run
  --json    one JSON object on stdout, nothing else
  --quick   10x smaller (smoke check)`;

interface Figures {
  inject_changes_per_s: number;
  inject_changes: number;
  inject_seconds: number;
  bulk_insert_changes_per_s: number;
  inject_vs_bulk_insert: number;
  inject_small_tx_changes_per_s: number;
  single_insert_tx_per_s: number;
  inject_small_tx_vs_single_insert: number;
  converge_seconds: number;
  converge_changes: number;
  converge_cycle_seconds: number;
  converge_over_cycle: number;
  converge_seconds_5s_cycle: number;
  converge_over_cycle_5s: number;
  write_on_seconds: number;
  write_off_seconds: number;
  write_overhead_ratio: number;
  goals: {
    inject_vs_bulk_insert: number;
    inject_small_tx_vs_single_insert: number;
    converge_seconds: number;
    converge_over_cycle: number;
    write_overhead_ratio: number;
  };
}

/** The site's own rules, as every site's injector has them (the queues here hold no conflict). */
const CATALOG = catalogApplication({ conflictDeadlineMs: 24 * 3600_000 });

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { json: { type: 'boolean' }, quick: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const scale = values.quick ? 10 : 1;
  const say = (line: string): void => {
    (values.json ? process.stderr : process.stdout).write(line + '\n');
  };
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-repl-'));
  await fs.chmod(root, 0o755);
  let server: EmbeddedServer | undefined;
  try {
    server = await startEmbeddedPostgres(path.join(root, 'postgres'), { fast: false });
    say(`embedded PostgreSQL (fsync on) in ${root}`);
    const inject = await benchInject(server, 100_000 / scale, say);
    const small = await benchInjectSmall(server, 10_000 / scale, say);
    const converge = await benchConverge(server, root, 10_000 / scale, say, 1, true);
    const converge5 = await benchConverge(server, root, 10_000 / scale, say, 5, false);
    const figures: Figures = {
      inject_changes_per_s: Math.round(inject.rate),
      inject_changes: inject.changes,
      inject_seconds: round(inject.seconds),
      bulk_insert_changes_per_s: Math.round(inject.baselineRate),
      inject_vs_bulk_insert: round(inject.rate / inject.baselineRate),
      inject_small_tx_changes_per_s: Math.round(small.rate),
      single_insert_tx_per_s: Math.round(small.baselineRate),
      inject_small_tx_vs_single_insert: round(small.rate / small.baselineRate),
      converge_seconds: round(converge.seconds),
      converge_changes: converge.changes,
      converge_cycle_seconds: 1,
      converge_over_cycle: round(converge.seconds / 1),
      converge_seconds_5s_cycle: round(converge5.seconds),
      converge_over_cycle_5s: round(converge5.seconds / 5),
      write_on_seconds: round(converge.writeOn),
      write_off_seconds: round(converge.writeOff),
      write_overhead_ratio: round(converge.writeOn / converge.writeOff),
      goals: {
        inject_vs_bulk_insert: 0.8,
        inject_small_tx_vs_single_insert: 0.5,
        converge_seconds: 3,
        converge_over_cycle: 3,
        write_overhead_ratio: 1.15,
      },
    };
    if (values.json) console.log(JSON.stringify(figures));
    else {
      say('');
      say(
        `inject_vs_bulk_insert  ${figures.inject_vs_bulk_insert} (goal >= 0.8; ${figures.inject_changes_per_s} changes/s, bulk insert ${figures.bulk_insert_changes_per_s}/s)`,
      );
      say(
        `inject_small_tx_vs_single_insert ${figures.inject_small_tx_vs_single_insert} (goal >= 0.5; ${figures.inject_small_tx_changes_per_s} changes/s, single-row insert transactions ${figures.single_insert_tx_per_s}/s)`,
      );
      say(
        `converge_seconds       ${figures.converge_seconds} (goal <= 3; ${figures.converge_changes} changes, 1 s cycle)`,
      );
      say(
        `converge_over_cycle    ${figures.converge_over_cycle} at 1 s, ${figures.converge_over_cycle_5s} at 5 s (${figures.converge_seconds_5s_cycle} s) (goal <= 3)`,
      );
      say(
        `write_overhead_ratio   ${figures.write_overhead_ratio} (goal <= 1.15; median on ${figures.write_on_seconds} s, off ${figures.write_off_seconds} s)`,
      );
    }
  } finally {
    await server?.stop().catch(() => undefined);
    await fs.rm(root, { recursive: true, force: true });
  }
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

async function catalog(
  server: EmbeddedServer,
  name: string,
  siteId: string,
  index: number,
): Promise<pg.Pool> {
  const connection = await server.database(name);
  await migrate(connection);
  const pool = new pg.Pool({ ...connection, max: 4 });
  pool.on('error', () => undefined);
  const start = BigInt(index) * 2n ** 48n;
  await pool.query(
    `INSERT INTO sites (id, name, id_range_start, id_range_end, is_local, updated_at) VALUES ($1, $1, $2, $3, true, now())`,
    [siteId, start.toString(), (start + 2n ** 48n - 1n).toString()],
  );
  await pool.query(
    `ALTER SEQUENCE catalog_id_seq MINVALUE ${start} MAXVALUE ${start + 2n ** 48n - 1n} START ${start} RESTART ${start}`,
  );
  return pool;
}

/** Objects with a replica each, `perTx` changes per transaction (half objects, half replicas). */
async function makeObjects(db: pg.Pool, changes: number, perTx: number): Promise<void> {
  const setup = await db.query<{ user_id: string; coll: string; res: string }>(
    `WITH u AS (INSERT INTO users (username, display_name, password_hash, updated_at) VALUES ('bench', 'Bench', 'x', now()) RETURNING id),
          r AS (INSERT INTO storage_resources (site_id, name, root_path, updated_at) SELECT id, 'default', '/tmp', now() FROM sites WHERE is_local RETURNING id),
          c AS (INSERT INTO collections (name, path, owner_id, updated_at) SELECT '', '/', id, now() FROM u RETURNING id)
     SELECT u.id AS user_id, c.id AS coll, r.id AS res FROM u, c, r`,
  );
  const { user_id, coll, res } = setup.rows[0]!;
  for (let done = 0; done < changes; done += perTx) {
    const n = perTx / 2;
    await db.query(
      `WITH o AS (
         INSERT INTO data_objects (collection_id, name, size, checksum, owner_id, updated_at)
         SELECT $1, 'f' || ($4::int + g) || '.dat', 10240, repeat('ab', 32), $2, now() FROM generate_series(1, $5::int) g
         RETURNING id)
       INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, updated_at)
       SELECT o.id, (SELECT id FROM sites WHERE is_local), $3, 'objects/' || o.id, 10240, repeat('ab', 32), now() FROM o`,
      [coll, user_id, res, done, n],
    );
  }
}

async function ship(origin: pg.Pool, target: pg.Pool, originId: string, targetId: string): Promise<number> {
  const transport = new MemoryTransport();
  const collector = new Collector(target);
  transport.register(targetId, (batch) => collector.receive(originId, batch));
  const extracted = await new Extractor(origin).extract([targetId]);
  const dispatched = await new Dispatcher(origin, originId, transport).dispatch(targetId);
  if (!dispatched.ok) throw new Error(dispatched.error);
  return extracted.changes;
}

async function benchInject(
  server: EmbeddedServer,
  changes: number,
  say: (l: string) => void,
): Promise<{ rate: number; seconds: number; changes: number; baselineRate: number }> {
  const origin = await catalog(server, 'bench_inject_lsu', 'lsu', 1);
  const target = await catalog(server, 'bench_inject_tulane', 'tulane', 2);
  const plain = await catalog(server, 'bench_inject_plain', 'plain', 3);
  try {
    await makeObjects(origin, changes, 1000);
    const shipped = await ship(origin, target, 'lsu', 'tulane');
    say(`inject: ${shipped} changes queued at tulane (origin lsu, transactions of 1,000)`);
    const injector = new Injector(target, CATALOG, silentLogger);
    const t0 = performance.now();
    const result = await injector.injectAll(['lsu']);
    const seconds = (performance.now() - t0) / 1000;
    if (result.changes !== shipped) throw new Error(`injected ${result.changes} of ${shipped} changes`);
    // Baseline: the same rows written by one bulk INSERT per table, without any replication bookkeeping.
    await plain.query(`ALTER DATABASE bench_inject_plain SET tributary.capture = 'off'`);
    // Referenced tables first.
    const rows = { rows: [] as Array<{ t: string; rows: string }> };
    for (const t of ['users', 'storage_resources', 'collections', 'data_objects', 'replicas']) {
      const res = await origin.query<{ rows: string }>(
        `SELECT jsonb_agg(to_jsonb(x))::text AS rows FROM ${t} x`,
      );
      rows.rows.push({ t, rows: res.rows[0]!.rows });
    }
    const client = await plain.connect();
    let baseline: number;
    try {
      await client.query(`SET tributary.capture = 'off'`);
      await client.query(
        `INSERT INTO sites (id, name, id_range_start, id_range_end, updated_at) VALUES ('lsu', 'lsu', 1, 2, now())`,
      );
      const b0 = performance.now();
      await client.query('BEGIN');
      for (const r of rows.rows) {
        await client.query(`INSERT INTO ${r.t} SELECT * FROM jsonb_populate_recordset(NULL::${r.t}, $1)`, [
          r.rows,
        ]);
      }
      await client.query('COMMIT');
      baseline = (performance.now() - b0) / 1000;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw new Error(`the bulk-insert baseline failed: ${err instanceof Error ? err.message : String(err)}`);
    } finally {
      client.release();
    }
    say(
      `inject: ${shipped} changes in ${seconds.toFixed(2)} s (${Math.round(shipped / seconds)}/s); bulk insert of the same rows ${baseline.toFixed(2)} s`,
    );
    return { rate: shipped / seconds, seconds, changes: shipped, baselineRate: shipped / baseline };
  } finally {
    await Promise.all([origin.end(), target.end(), plain.end()]);
  }
}

async function benchInjectSmall(
  server: EmbeddedServer,
  changes: number,
  say: (l: string) => void,
): Promise<{ rate: number; baselineRate: number }> {
  const origin = await catalog(server, 'bench_small_lsu', 'lsu', 1);
  const target = await catalog(server, 'bench_small_tulane', 'tulane', 2);
  const plain = await catalog(server, 'bench_small_plain', 'plain', 3);
  try {
    for (let i = 0; i < changes; i += 500) {
      await origin.query(
        `DO $$ BEGIN FOR i IN 1..500 LOOP
           INSERT INTO project_groups (name, updated_at) VALUES ('g' || ${i} + i, now());
           COMMIT;
         END LOOP; END $$`,
      );
    }
    const shipped = await ship(origin, target, 'lsu', 'tulane');
    const injector = new Injector(target, CATALOG, silentLogger);
    const t0 = performance.now();
    const result = await injector.injectAll(['lsu']);
    const seconds = (performance.now() - t0) / 1000;
    if (result.changes !== shipped) throw new Error(`injected ${result.changes} of ${shipped}`);
    // Baseline: the same rows inserted one row per committed transaction, without replication, by a
    // loop inside PostgreSQL (no round trip per row, as the injector makes none).
    const rows = await origin.query<{ rows: string }>(
      `SELECT jsonb_agg(to_jsonb(g) ORDER BY g.id)::text AS rows FROM project_groups g`,
    );
    const client = await plain.connect();
    let baseline: number;
    try {
      await client.query(`SET tributary.capture = 'off'`);
      await client.query(
        `CREATE TEMP TABLE bench_rows AS SELECT * FROM jsonb_populate_recordset(NULL::project_groups, $1)`,
        [rows.rows[0]!.rows],
      );
      const b0 = performance.now();
      await client.query(
        `DO $$ DECLARE r project_groups; BEGIN
           FOR r IN SELECT * FROM bench_rows ORDER BY id LOOP
             INSERT INTO project_groups SELECT r.*;
             COMMIT;
           END LOOP; END $$`,
      );
      baseline = (performance.now() - b0) / 1000;
    } finally {
      client.release();
    }
    const counts = await Promise.all(
      [origin, plain].map((db) => db.query<{ n: string }>('SELECT count(*) AS n FROM project_groups')),
    );
    const groups = Number(counts[0]!.rows[0]!.n);
    if (Number(counts[1]!.rows[0]!.n) !== groups)
      throw new Error(`the single-insert baseline wrote ${counts[1]!.rows[0]!.n} of ${groups} rows`);
    say(
      `inject: ${shipped} single-change transactions in ${seconds.toFixed(2)} s (${Math.round(shipped / seconds)}/s); the same rows one per transaction ${baseline.toFixed(2)} s`,
    );
    return { rate: shipped / seconds, baselineRate: groups / baseline };
  } finally {
    await Promise.all([origin.end(), target.end(), plain.end()]);
  }
}

/**
 * Three sites replicating with a cycle of `cycle` seconds; with `withOverhead`, a fourth site without
 * replication too, and the write overhead measured before the convergence.
 */
async function benchConverge(
  server: EmbeddedServer,
  root: string,
  changes: number,
  say: (l: string) => void,
  cycle: number,
  withOverhead: boolean,
): Promise<{ seconds: number; changes: number; writeOn: number; writeOff: number }> {
  const ids = withOverhead ? ['lsu', 'tulane', 'uno', 'solo'] : ['lsu', 'tulane', 'uno'];
  // Each federation on its own databases and storage.
  const suffix = `c${cycle}`;
  const ports = await Promise.all(ids.map(() => freePort()));
  const key = pairKeys();
  const password = randomBytes(18).toString('base64url');
  const stops: Array<() => Promise<void>> = [];
  const pools: Record<string, pg.Pool> = {};
  const connections: Record<string, pg.ClientConfig> = {};
  try {
    const start = async (id: string, index: number): Promise<void> => {
      const federation = id !== 'solo';
      const connection = await server.database(`bench_site_${id}_${suffix}`);
      await migrate(connection);
      connections[id] = connection;
      if (!federation) {
        // The comparison site: change capture off, no replication cycle.
        const c = new pg.Client(connection);
        await c.connect();
        await c.query(`ALTER DATABASE bench_site_solo_${suffix} SET tributary.capture = 'off'`);
        await c.end();
      }
      const config: SiteConfig = loadConfig({
        ...siteSettings({
          id,
          index,
          portOf: (p) => ports[ids.indexOf(p)]!,
          peers: federation ? ids.slice(0, 3).filter((p) => p !== id) : [],
          key,
          dataDir: path.join(root, `data-${suffix}`),
          portalDir: path.join(root, 'no-portal'),
          password,
          cycleSeconds: cycle,
          joinFrom: federation && index > 0 ? 'lsu' : '',
        }),
        REPLICATION_ENABLED: federation ? 'true' : 'false',
      });
      const started = await startWorker({ config, connection });
      stops.push(started.stop);
      pools[id] = new pg.Pool({ ...connection, max: 2 });
      pools[id].on('error', () => undefined);
    };
    await start('lsu', 0);
    await Promise.all(ids.slice(1).map((id, i) => start(id, i + 1)));
    const client = async (id: string): Promise<BenchClient> => {
      const transport = httpTransport(`http://127.0.0.1:${ports[ids.indexOf(id)]}`, 8);
      return new BenchClient(transport, await BenchClient.createWriteToken(transport, 'admin', password));
    };
    const lsu = await client('lsu');
    const federationPools = ['lsu', 'tulane', 'uno'].map((id) => pools[id]!);
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

    // write_overhead_ratio: 1000 x 10 KB at the replicating lsu and at solo, alternating, medians.
    const files = (n: number, tag: string) =>
      Array.from({ length: n }, (_, i) => ({ name: `${tag}-${i}.dat`, data: randomBytes(10 * 1024) }));
    const on: number[] = [];
    const off: number[] = [];
    if (withOverhead) {
      const solo = await client('solo');
      const ingest = async (c: BenchClient, dir: string, n: number): Promise<number> => {
        await c.makeCollection(dir);
        const all = files(n, 'f');
        const t0 = performance.now();
        await Promise.all([c.putBatch(dir, all.slice(0, n / 2)), c.putBatch(dir, all.slice(n / 2))]);
        return (performance.now() - t0) / 1000;
      };
      await ingest(lsu, '/projects/warm-on', 100);
      await ingest(solo, '/projects/warm-off', 100);
      // Each round starts with the federation idle: the peers' applying of the previous round runs on
      // these same two cores and would otherwise be charged to whichever round comes next.
      const settled = () => waitForAgreement(federationPools, 120);
      for (let round = 0; round < 9; round++) {
        const first = round % 2 === 0 ? 'on' : 'off';
        for (const which of [first, first === 'on' ? 'off' : 'on']) {
          await settled();
          if (which === 'on') on.push(await ingest(lsu, `/projects/on-${round}`, 1000));
          else off.push(await ingest(solo, `/projects/off-${round}`, 1000));
        }
      }
      say(
        `write overhead: replication on ${on.map((x) => x.toFixed(2)).join(' ')} s; off ${off.map((x) => x.toFixed(2)).join(' ')} s`,
      );
    }
    await waitForAgreement(federationPools, 120);

    // converge_seconds: 10,000 changes (5,000 objects with a replica each) at lsu, then the clock runs.
    const objects = changes / 2;
    await lsu.makeCollection('/projects/converge');
    const dataset = files(objects, 'c');
    const writeStart = performance.now();
    for (let i = 0; i < objects; i += 1000)
      await lsu.putBatch('/projects/converge', dataset.slice(i, i + 1000));
    const written = performance.now();
    const seconds = await waitForApplied(pools.lsu!, 'lsu', [pools.tulane!, pools.uno!], 120);
    // Confirmed by the digests: the figure stands only if all three catalogs are then the same.
    const confirm = await waitForAgreement(federationPools, 0);
    say(
      `converge (${cycle} s cycle): ${changes} changes written at lsu in ${((written - writeStart) / 1000).toFixed(2)} s; every peer had applied all of lsu's log ${seconds.toFixed(2)} s after the last write (digests then equal, checked in ${confirm.toFixed(2)} s)`,
    );
    return {
      seconds,
      changes,
      writeOn: withOverhead ? median(on) : NaN,
      writeOff: withOverhead ? median(off) : NaN,
    };
  } finally {
    await Promise.all(Object.values(pools).map((p) => p.end()));
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

/**
 * Seconds until `origin` has extracted every change and every peer has applied all of its log, and
 * nothing waits there to be applied (polled every 50 ms). Cheap queries: the catalog digests this
 * replaces as the poll took seconds each on a loaded machine and slowed the exchange they measured.
 */
async function waitForApplied(
  origin: pg.Pool,
  originId: string,
  peers: pg.Pool[],
  timeoutSeconds: number,
): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const o = await origin.query<{ last: string; pending: boolean }>(
      `SELECT (SELECT last_seq::text FROM repl_local) AS last, EXISTS (SELECT 1 FROM repl_changes) AS pending`,
    );
    const last = BigInt(o.rows[0]!.last);
    let done = !o.rows[0]!.pending;
    for (const peer of peers) {
      if (!done) break;
      const p = await peer.query<{ applied: string | null; waiting: boolean }>(
        `SELECT (SELECT applied_seq::text FROM repl_peers WHERE peer_id = $1) AS applied,
                EXISTS (SELECT 1 FROM repl_incoming WHERE origin = $1) OR EXISTS (SELECT 1 FROM repl_parked) AS waiting`,
        [originId],
      );
      done = p.rows[0]!.applied !== null && BigInt(p.rows[0]!.applied) >= last && !p.rows[0]!.waiting;
    }
    if (done) return (performance.now() - t0) / 1000;
    if (performance.now() - t0 > timeoutSeconds * 1000)
      throw new Error(`the peers had not applied ${originId}'s log within ${timeoutSeconds} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Seconds until every catalog's digest is the same (polled every 50 ms; once when `timeoutSeconds` is 0). */
async function waitForAgreement(pools: pg.Pool[], timeoutSeconds: number): Promise<number> {
  const t0 = performance.now();
  for (;;) {
    const digests = await Promise.all(pools.map((p) => catalogDigest(p)));
    if (digests.every((d) => d.digest === digests[0]!.digest)) return (performance.now() - t0) / 1000;
    if (performance.now() - t0 > timeoutSeconds * 1000)
      throw new Error(`digests did not agree within ${timeoutSeconds} s`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
