import 'reflect-metadata';
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, promises as fs } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { measureScrubVsSha256, startEmbeddedPostgres, type EmbeddedServer } from '@tributary/api/embedding';
import { percentile, probe, sleep, until, writeRandomFile } from './bench-kit';
import { BenchClient, httpTransport } from './client';
import { startProcessFederation, stopProcessFederation, type ProcessSite } from './site-process';

const USAGE = `npm run bench:placement -- [--json] [--quick]

Three sites (separate processes, real HTTP, one embedded PostgreSQL with a catalog each, 1 s
replication cycle) and placement rules (docs/placement.md):
  replicate_vs_direct     a 1 GiB object copied by the mover from lsu to tulane (from the rule's
                          creation at tulane until tulane's copy is good), against a direct GET of
                          the same bytes from lsu into a file (fsynced), same run; goal >= 0.8
  small_files_per_s       10,000 files of 10 KB under a new 3-copy rule made at lsu, until every copy
                          is good at both other sites; goal >= 1,000 files/s
  failover_first_read_ms  the first read at uno of an object held at lsu and tulane after lsu is
                          stopped (SIGSTOP), p95 over the trials; goal <= 2,000 ms
  failover_read_p95_ms    the reads after it; goal <= 50 ms (printed with the same reads before lsu
                          stopped, every site up, as their baseline)
  scrub_vs_sha256         an unthrottled scrub pass over the 10,000 files against sha256sum over the
                          same files; goal >= 0.7
  --json    one JSON object on stdout, nothing else
  --quick   smaller (128 MiB, 1,000 files, 3 trials): a smoke check
  --only    a comma-separated list of steps to run (replicate, small, failover, scrub; scrub needs
            small); the others print null
  --trace   the small-files step prints each site's good copies every second
BENCH_SITE_NODE_ARGS (for example "--cpu-prof --cpu-prof-dir=/tmp/prof") goes to each site's node.`;

const SITES = ['lsu', 'tulane', 'uno'] as const;
const STEPS = ['replicate', 'small', 'failover', 'scrub'] as const;
type SiteId = (typeof SITES)[number];
const PEER_DOWN_MS = 1500;

interface Site extends ProcessSite<SiteId> {
  client?: BenchClient;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean' },
      quick: { type: 'boolean' },
      only: { type: 'string' },
      trace: { type: 'boolean' },
      help: { type: 'boolean' },
    },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const quick = values.quick === true;
  const say = (line: string): void => {
    (values.json ? process.stderr : process.stdout).write(line + '\n');
  };
  const bigBytes = (quick ? 128 : 1024) * 1024 * 1024;
  const smallFiles = quick ? 1000 : 10_000;
  const trials = quick ? 3 : 7;
  const steps = new Set(values.only ? values.only.split(',').map((s) => s.trim()) : STEPS);
  for (const s of steps)
    if (!(STEPS as readonly string[]).includes(s)) throw new Error(`--only: no step ${s}`);
  if (steps.has('scrub') && !steps.has('small')) throw new Error('--only: scrub needs small');

  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-placement-'));
  await fs.chmod(root, 0o755);
  let server: EmbeddedServer | undefined;
  const sites: Site[] = [];
  try {
    server = await startEmbeddedPostgres(path.join(root, 'postgres'), { fast: false });
    say(`embedded PostgreSQL (fsync on) in ${root}`);
    const password = randomBytes(18).toString('base64url');
    sites.push(
      ...(await startProcessFederation({
        server,
        root,
        password,
        ids: SITES,
        databasePrefix: 'bench_placement',
        env: () => ({
          PLACEMENT_INTERVAL_MS: '200',
          PEER_DOWN_MS: String(PEER_DOWN_MS),
          // The scrub is measured on its own below; in the federation it would only compete.
          SCRUB_RATE_MIBS: '0',
        }),
      })),
    );
    const [lsu, tulane, uno] = sites as [Site, Site, Site];
    const token = await BenchClient.createWriteToken(httpTransport(lsu.url, 2), 'admin', password);
    for (const s of sites) s.client = new BenchClient(httpTransport(s.url, 16), token);
    const home = await lsu.client!.homePath();
    // The token reaches the other sites with the next cycle.
    await until(async () => (await probe(uno.url, token, '/api/v1/me')) === 200, 60, 'the token at uno');
    await until(
      async () => (await probe(tulane.url, token, '/api/v1/me')) === 200,
      60,
      'the token at tulane',
    );

    const big = steps.has('replicate')
      ? await benchReplicate(root, home, bigBytes, lsu, tulane, token, say)
      : { moverSeconds: NaN, directSeconds: NaN };
    const small = steps.has('small')
      ? await benchSmallFiles(home, smallFiles, lsu, [tulane, uno], say, values.trace === true)
      : { seconds: NaN, baselineRate: NaN };
    const failover = steps.has('failover')
      ? await benchFailover(home, trials, lsu, uno, token, say)
      : { first: [], after: [], up: [] };
    const scrub = steps.has('scrub')
      ? await benchScrub(lsu, home, say)
      : { scrubMiBs: NaN, sha256sumMiBs: NaN, ratio: NaN };

    const figures = {
      replicate_bytes: bigBytes,
      replicate_seconds: round(big.moverSeconds),
      direct_get_seconds: round(big.directSeconds),
      replicate_mib_s: round(bigBytes / 1048576 / big.moverSeconds),
      direct_get_mib_s: round(bigBytes / 1048576 / big.directSeconds),
      replicate_vs_direct: round(big.directSeconds / big.moverSeconds),
      small_files: smallFiles,
      small_files_seconds: round(small.seconds),
      small_files_per_s: Math.round(smallFiles / small.seconds),
      local_copy_files_per_s: Math.round(small.baselineRate),
      failover_trials: trials,
      failover_first_read_ms: round(percentile(failover.first, 0.95)),
      failover_first_read_ms_all: failover.first.map(round),
      failover_read_p95_ms: round(percentile(failover.after, 0.95)),
      failover_read_p50_ms: round(percentile(failover.after, 0.5)),
      all_up_read_p95_ms: round(percentile(failover.up, 0.95)),
      all_up_read_p50_ms: round(percentile(failover.up, 0.5)),
      scrub_mib_s: round(scrub.scrubMiBs),
      sha256sum_mib_s: round(scrub.sha256sumMiBs),
      scrub_vs_sha256: round(scrub.ratio),
      goals: {
        replicate_vs_direct: 0.8,
        small_files_per_s: 1000,
        failover_first_read_ms: 2000,
        failover_read_p95_ms: 50,
        scrub_vs_sha256: 0.7,
      },
    };
    if (values.json) console.log(JSON.stringify(figures));
    else {
      say('');
      say(
        `replicate_vs_direct     ${figures.replicate_vs_direct} (goal >= 0.8; mover ${figures.replicate_mib_s} MiB/s, direct GET ${figures.direct_get_mib_s} MiB/s, ${bigBytes / 1048576} MiB)`,
      );
      say(
        `small_files_per_s       ${figures.small_files_per_s} (goal >= 1000; ${smallFiles} x 10 KB to two sites in ${figures.small_files_seconds} s; cp of the same files locally ${figures.local_copy_files_per_s}/s)`,
      );
      say(
        `failover_first_read_ms  ${figures.failover_first_read_ms} (goal <= 2000; p95 of ${trials} trials: ${figures.failover_first_read_ms_all.join(', ')})`,
      );
      say(
        `failover_read_p95_ms    ${figures.failover_read_p95_ms} (goal <= 50; p50 ${figures.failover_read_p50_ms}; the same reads with every site up: p95 ${figures.all_up_read_p95_ms}, p50 ${figures.all_up_read_p50_ms})`,
      );
      say(
        `scrub_vs_sha256         ${figures.scrub_vs_sha256} (goal >= 0.7; scrub ${figures.scrub_mib_s} MiB/s, sha256sum ${figures.sha256sum_mib_s} MiB/s)`,
      );
    }
  } finally {
    await stopProcessFederation(sites);
    await server?.stop().catch(() => undefined);
    await fs.rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * replicate_vs_direct. The object is uploaded at lsu and known at tulane first; the rule is made at
 * tulane, so the figure is the mover's (its pass interval, 200 ms here, included), not the cycle's.
 * The direct GET is measured before and after, and averaged.
 */
async function benchReplicate(
  root: string,
  home: string,
  bytes: number,
  lsu: Site,
  tulane: Site,
  token: string,
  say: (l: string) => void,
): Promise<{ moverSeconds: number; directSeconds: number }> {
  const dir = `${home}/bench-replicate`;
  const source = path.join(root, 'big.bin');
  await writeRandomFile(source, bytes);
  await lsu.client!.makeCollection(dir);
  await lsu.client!.put(`${dir}/big.bin`, { kind: 'file', path: source, size: bytes });
  await fs.rm(source);
  await until(async () => (await objectAt(tulane, 'big.bin')) !== null, 60, 'the object at tulane');
  const direct = async (): Promise<number> => {
    const target = path.join(root, 'direct.bin');
    const t0 = performance.now();
    await download(lsu.url, token, `${dir}/big.bin`, target);
    const seconds = (performance.now() - t0) / 1000;
    await fs.rm(target);
    return seconds;
  };
  const before = await direct();
  const t0 = performance.now();
  await tulane.client!.postJson(
    '/api/v1/placement/rules',
    JSON.stringify({ path: dir, copies: 2, sites: ['lsu', 'tulane'] }),
  );
  await until(
    async () => (await copyState(tulane, 'big.bin', 'tulane')) === 'good',
    600,
    'the copy at tulane',
    20,
  );
  const moverSeconds = (performance.now() - t0) / 1000;
  const after = await direct();
  say(
    `replicate: ${bytes / 1048576} MiB copied by the mover in ${moverSeconds.toFixed(2)} s; direct GET ${before.toFixed(2)} s before, ${after.toFixed(2)} s after`,
  );
  return { moverSeconds, directSeconds: (before + after) / 2 };
}

/** small_files_per_s: the rule made at lsu; done when tulane and uno each hold every copy good. */
async function benchSmallFiles(
  home: string,
  files: number,
  lsu: Site,
  others: Site[],
  say: (l: string) => void,
  trace: boolean,
): Promise<{ seconds: number; baselineRate: number }> {
  const dir = `${home}/bench-small`;
  await lsu.client!.makeCollection(dir);
  const data = (i: number): Buffer => {
    const b = randomBytes(10 * 1024);
    b.write(`file ${i}\n`);
    return b;
  };
  const localDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-small-'));
  try {
    for (let i = 0; i < files; i += 1000) {
      const batch = Array.from({ length: Math.min(1000, files - i) }, (_, j) => ({
        name: `f${String(i + j).padStart(6, '0')}.bin`,
        data: data(i + j),
      }));
      await lsu.client!.putBatch(dir, batch);
      await Promise.all(batch.map((f) => fs.writeFile(path.join(localDir, f.name), f.data)));
    }
    for (const s of others) {
      await until(async () => (await objectCount(s, dir)) === files, 120, `${files} objects at ${s.id}`);
    }
    // Baseline: the same files copied locally with cp (one process, the page cache warm).
    const copyDir = `${localDir}-copy`;
    const c0 = performance.now();
    await execCp(localDir, copyDir);
    const baselineRate = files / ((performance.now() - c0) / 1000);
    await fs.rm(copyDir, { recursive: true, force: true });

    const t0 = performance.now();
    const tracing = trace
      ? setInterval(() => {
          void Promise.all(others.map(async (s) => `${s.id} ${await traceCounts(s, dir)}`)).then(
            (counts) => say(`  ${((performance.now() - t0) / 1000).toFixed(1)} s: ${counts.join(', ')}`),
            () => undefined,
          );
          void longQueries(lsu).then(
            (lines) => lines.forEach((l) => say(`    ${l}`)),
            () => undefined,
          );
        }, 1000)
      : undefined;
    await lsu.client!.postJson('/api/v1/placement/rules', JSON.stringify({ path: dir, copies: 3 }));
    try {
      for (const s of others) {
        await until(async () => (await goodCopies(s, dir)) === files, 600, `every copy good at ${s.id}`, 50);
      }
    } finally {
      clearInterval(tracing);
    }
    const seconds = (performance.now() - t0) / 1000;
    say(
      `small files: ${files} x 10 KB good at ${others.map((s) => s.id).join(' and ')} ${seconds.toFixed(2)} s after the rule`,
    );
    return { seconds, baselineRate };
  } finally {
    await fs.rm(localDir, { recursive: true, force: true });
  }
}

/**
 * failover: objects with good copies at lsu and tulane, read at uno (which holds none, and asks
 * lsu first). Each trial stops lsu, times the first successful read of an object not read before,
 * then the reads after it, and lets lsu go on; the next trial starts once uno no longer remembers
 * lsu as down.
 */
async function benchFailover(
  home: string,
  trials: number,
  lsu: Site,
  uno: Site,
  token: string,
  say: (l: string) => void,
): Promise<{ first: number[]; after: number[]; up: number[] }> {
  const dir = `${home}/bench-failover`;
  await lsu.client!.makeCollection(dir);
  const perTrial = 20;
  const names = Array.from({ length: trials * perTrial }, (_, i) => `o${i}.bin`);
  await lsu.client!.putBatch(
    dir,
    names.map((name) => ({ name, data: randomBytes(64 * 1024) })),
  );
  await lsu.client!.postJson(
    '/api/v1/placement/rules',
    JSON.stringify({ path: dir, copies: 2, sites: ['lsu', 'tulane'] }),
  );
  // Every copy good at tulane, as uno's catalog knows it.
  await until(
    async () => (await goodCopiesKnown(uno, dir, 'tulane')) === names.length,
    300,
    'copies at tulane known at uno',
    100,
  );
  const first: number[] = [];
  const after: number[] = [];
  const up: number[] = [];
  for (let t = 0; t < trials; t++) {
    const mine = names.slice(t * perTrial, (t + 1) * perTrial);
    // The baseline: the same reads at uno with every site up (served through lsu, the first holder).
    for (const name of mine.slice(1)) {
      const r0 = performance.now();
      await readAll(uno.url, token, `${dir}/${name}`);
      up.push(performance.now() - r0);
    }
    lsu.child.kill('SIGSTOP');
    try {
      const t0 = performance.now();
      await readAll(uno.url, token, `${dir}/${mine[0]!}`);
      first.push(performance.now() - t0);
      for (const name of mine.slice(1)) {
        const r0 = performance.now();
        await readAll(uno.url, token, `${dir}/${name}`);
        after.push(performance.now() - r0);
      }
    } finally {
      lsu.child.kill('SIGCONT');
    }
    await sleep(PEER_DOWN_MS + 500);
  }
  say(
    `failover: first reads ${first.map((x) => x.toFixed(0)).join(', ')} ms; ${after.length} reads after them`,
  );
  return { first, after, up };
}

async function benchScrub(
  lsu: Site,
  home: string,
  say: (l: string) => void,
): Promise<Awaited<ReturnType<typeof measureScrubVsSha256>>> {
  // The scrub reads lsu's copies of the small files where its storage keeps them.
  const rows = await lsu.pool.query<{ key: string; root: string }>(
    `SELECT r.physical_path AS key, sr.root_path AS root
       FROM replicas r JOIN storage_resources sr ON sr.id = r.resource_id
       JOIN data_objects o ON o.id = r.object_id JOIN collections c ON c.id = o.collection_id
      WHERE r.site_id = 'lsu' AND c.path = $1`,
    [`${home}/bench-small`],
  );
  const root = rows.rows[0]?.root;
  if (!root) throw new Error('no copies at lsu to scrub');
  // The local storage driver keeps a key at objects/<last two characters of its stem>/<key>.
  const files = rows.rows.map((r) =>
    path.join('objects', r.key.split('.')[0]!.slice(-2).padStart(2, '0'), r.key),
  );
  const result = await measureScrubVsSha256(root, files);
  say(
    `scrub: ${result.files} files, ${(result.bytes / 1048576).toFixed(0)} MiB; scrub ${result.scrubMiBs.toFixed(0)} MiB/s, sha256sum ${result.sha256sumMiBs.toFixed(0)} MiB/s`,
  );
  return result;
}

async function objectAt(site: Site, name: string): Promise<string | null> {
  const r = await site.pool.query<{ id: string }>(
    `SELECT id::text FROM data_objects WHERE name = $1 AND trash_id = 0`,
    [name],
  );
  return r.rows[0]?.id ?? null;
}

async function copyState(site: Site, name: string, at: string): Promise<string | null> {
  const r = await site.pool.query<{ status: string }>(
    `SELECT r.status::text AS status FROM replicas r JOIN data_objects o ON o.id = r.object_id
      WHERE o.name = $1 AND o.trash_id = 0 AND r.site_id = $2 AND r.checksum = o.checksum`,
    [name, at],
  );
  return r.rows[0]?.status ?? null;
}

async function objectCount(site: Site, dir: string): Promise<number> {
  const r = await site.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM data_objects o JOIN collections c ON c.id = o.collection_id
      WHERE c.path = $1 AND o.trash_id = 0`,
    [dir],
  );
  return r.rows[0]!.n;
}

/** For --trace: whether the site has the rule, its rows for the files, and how many are good. */
async function traceCounts(site: Site, dir: string): Promise<string> {
  const r = await site.pool.query<{ rules: number; rows: number; good: number }>(
    `SELECT (SELECT count(*)::int FROM placement_rules) AS rules, count(r.id)::int AS rows,
            count(r.id) FILTER (WHERE r.status = 'good' AND r.checksum = o.checksum)::int AS good
       FROM replicas r JOIN data_objects o ON o.id = r.object_id JOIN collections c ON c.id = o.collection_id
      WHERE c.path = $1 AND r.site_id = $2`,
    [dir, site.id],
  );
  const t = r.rows[0]!;
  return `rule ${t.rules > 0 ? 'yes' : 'no'}, rows ${t.rows}, good ${t.good}`;
}

/** For --trace: statements running for more than a second in any site's catalog. */
async function longQueries(site: Site): Promise<string[]> {
  const r = await site.pool.query<{
    db: string;
    s: number;
    state: string;
    wait: string | null;
    query: string;
  }>(
    `SELECT datname AS db, extract(epoch FROM now() - query_start)::float AS s, state,
            wait_event_type || ':' || wait_event AS wait, left(regexp_replace(query, '\\s+', ' ', 'g'), 160) AS query
       FROM pg_stat_activity
      WHERE state <> 'idle' AND pid <> pg_backend_pid() AND now() - query_start > interval '1 second'`,
  );
  return r.rows.map((q) => `slow ${q.db} ${q.s.toFixed(1)} s ${q.state} ${q.wait ?? ''}: ${q.query}`);
}

/** Good copies of the current bytes at the site itself, in its own catalog. */
function goodCopies(site: Site, dir: string): Promise<number> {
  return goodCopiesKnown(site, dir, site.id);
}

async function goodCopiesKnown(site: Site, dir: string, at: string): Promise<number> {
  const r = await site.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM replicas r JOIN data_objects o ON o.id = r.object_id
       JOIN collections c ON c.id = o.collection_id
      WHERE c.path = $1 AND r.site_id = $2 AND r.status = 'good' AND r.checksum = o.checksum`,
    [dir, at],
  );
  return r.rows[0]!.n;
}

function get(url: string, token: string, objectPath: string): Promise<http.IncomingMessage> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}/api/v1/data?path=${encodeURIComponent(objectPath)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    req.once('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${objectPath} at ${url}: ${res.statusCode}`));
      } else resolve(res);
    });
    req.once('error', reject);
  });
}

/** A direct GET into a file, fsynced: what a copy costs without the mover. */
async function download(url: string, token: string, objectPath: string, target: string): Promise<void> {
  const res = await get(url, token, objectPath);
  const out = createWriteStream(target);
  await pipeline(res, out);
  const handle = await fs.open(target, 'r+');
  await handle.sync();
  await handle.close();
}

/** Reads a whole object, checking its bytes against the ETag. */
async function readAll(url: string, token: string, objectPath: string): Promise<void> {
  const res = await get(url, token, objectPath);
  const hash = createHash('sha256');
  for await (const chunk of res) hash.update(chunk as Buffer);
  const etag = String(res.headers.etag ?? '').replace(/"/g, '');
  if (etag && hash.digest('hex') !== etag)
    throw new Error(`${objectPath}: the bytes read differ from the ETag`);
}

function execCp(from: string, to: string): Promise<void> {
  return new Promise((resolve, reject) =>
    execFile('cp', ['-r', from, to], (err) =>
      err ? reject(new Error(`cp failed: ${err.message}`)) : resolve(),
    ),
  );
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
