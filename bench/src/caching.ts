import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startEmbeddedPostgres, type EmbeddedServer } from '@tributary/api/embedding';
import { percentile, probe, settle, sleep, until, writeRandomFile } from './bench-kit';
import { BenchClient, httpTransport } from './client';
import { startProcessFederation, stopProcessFederation, type ProcessSite } from './site-process';

const USAGE = `npm run bench:caching -- [--json] [--quick]

Three sites (separate processes, real HTTP, one embedded PostgreSQL with a catalog each, 1 s
replication cycle, 200 ms mover passes): lsu holds the bytes, tulane is a caching site
(CACHE_MAX_BYTES 4 GiB; docs/caching.md), uno keeps no cache (its reads of lsu's bytes pass through:
printed as passthrough_vs_direct, what the extra hop alone costs). Every figure against a baseline of
the same run:
  fault_in_vs_direct      the first read at tulane of a 1 GiB object held at lsu (its bytes teed into
                          tulane's cache as they are sent), against a direct GET of the same object at
                          lsu (before and after, averaged); goal >= 0.8
  cached_read_vs_local    the second read at tulane (from its cached copy) against a read at tulane
                          of a 1 GiB object written there (median of the rounds); goal >= 0.95
  subscription_lag_p95_s  tulane subscribes to a collection at lsu; 100 files of 64 KiB are written
                          there one after another: from each write's answer to a good copy at
                          tulane (as tulane's catalog says), p95; goal <= 3 s
  --json    one JSON object on stdout, nothing else
  --quick   smaller (128 MiB objects, 3 rounds): a smoke check
BENCH_SITE_NODE_ARGS (for example "--cpu-prof --cpu-prof-dir=/tmp/prof") goes to each site's node.`;

const SITES = ['lsu', 'tulane', 'uno'] as const;
type SiteId = (typeof SITES)[number];
const MiB = 1024 * 1024;

interface Site extends ProcessSite<SiteId> {
  client?: BenchClient;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { json: { type: 'boolean' }, quick: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const quick = values.quick === true;
  const say = (line: string): void => {
    (values.json ? process.stderr : process.stdout).write(line + '\n');
  };
  const bigBytes = (quick ? 128 : 1024) * MiB;
  const rounds = quick ? 3 : 5;
  const files = 100;

  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-caching-'));
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
        databasePrefix: 'bench_caching',
        env: (id) => ({
          PLACEMENT_INTERVAL_MS: '200',
          SCRUB_RATE_MIBS: '0',
          CACHE_MAX_BYTES: id === 'tulane' ? '4GiB' : '0',
        }),
      })),
    );
    const [lsu, tulane, uno] = sites as [Site, Site, Site];
    const token = await BenchClient.createWriteToken(httpTransport(lsu.url, 2), 'admin', password);
    for (const s of sites) s.client = new BenchClient(httpTransport(s.url, 16), token);
    const home = await lsu.client!.homePath();
    for (const s of [tulane, uno])
      await until(async () => (await probe(s.url, token, '/api/v1/me')) === 200, 60, `the token at ${s.id}`);

    // The objects: one held at lsu (read at tulane), one written at tulane (the local baseline).
    const dir = `${home}/bench-caching`;
    await lsu.client!.makeCollection(dir);
    await until(
      async () => (await probe(tulane.url, token, statRoute(dir))) === 200,
      60,
      'the folder at tulane',
    );
    const source = path.join(root, 'big.bin');
    await writeRandomFile(source, bigBytes);
    await lsu.client!.put(`${dir}/remote.bin`, { kind: 'file', path: source, size: bigBytes });
    await writeRandomFile(source, bigBytes);
    await tulane.client!.put(`${dir}/local.bin`, { kind: 'file', path: source, size: bigBytes });
    await fs.rm(source);
    for (const s of [tulane, uno])
      await until(
        async () => (await probe(s.url, token, statRoute(`${dir}/remote.bin`))) === 200,
        60,
        `the object at ${s.id}`,
      );
    await settle();

    // fault_in_vs_direct.
    const direct = async (): Promise<number> => timedRead(lsu.url, token, `${dir}/remote.bin`, bigBytes);
    const before = await direct();
    await settle();
    const passthrough = await timedRead(uno.url, token, `${dir}/remote.bin`, bigBytes);
    await settle();
    const faultIn = await timedRead(tulane.url, token, `${dir}/remote.bin`, bigBytes);
    await until(
      async () => (await cachedGood(tulane, 'remote.bin')) === true,
      120,
      'the cached copy at tulane',
      50,
    );
    await settle();
    const after = await direct();
    const directSeconds = (before + after) / 2;
    say(
      `fault-in: ${bigBytes / MiB} MiB read at tulane in ${faultIn.toFixed(2)} s (teed into its cache); direct GET at lsu ${before.toFixed(2)} s before, ${after.toFixed(2)} s after; passed through uno in ${passthrough.toFixed(2)} s`,
    );

    // cached_read_vs_local: rounds alternating which goes first.
    const cached: number[] = [];
    const local: number[] = [];
    const peerReadsBefore = await peerReads(lsu, token);
    for (let r = 0; r < rounds; r++) {
      const order = r % 2 === 0 ? ['cached', 'local'] : ['local', 'cached'];
      for (const which of order) {
        await settle();
        const name = which === 'cached' ? 'remote.bin' : 'local.bin';
        const seconds = await timedRead(tulane.url, token, `${dir}/${name}`, bigBytes);
        (which === 'cached' ? cached : local).push(seconds);
      }
    }
    const peerReadsDuring = (await peerReads(lsu, token)) - peerReadsBefore;
    say(
      `cached reads: ${cached.map((s) => s.toFixed(2)).join(', ')} s; local reads ${local.map((s) => s.toFixed(2)).join(', ')} s; lsu served ${peerReadsDuring} peer reads meanwhile`,
    );

    // subscription_lag_p95_s.
    const lags = await benchSubscription(home, files, lsu, tulane, say);

    const cachedMedian = percentile(cached, 0.5);
    const localMedian = percentile(local, 0.5);
    const figures = {
      object_bytes: bigBytes,
      fault_in_seconds: round(faultIn),
      direct_get_seconds: round(directSeconds),
      fault_in_mib_s: round(bigBytes / MiB / faultIn),
      direct_get_mib_s: round(bigBytes / MiB / directSeconds),
      fault_in_vs_direct: round(directSeconds / faultIn),
      passthrough_seconds: round(passthrough),
      passthrough_vs_direct: round(directSeconds / passthrough),
      rounds,
      cached_read_seconds: round(cachedMedian),
      local_read_seconds: round(localMedian),
      cached_read_mib_s: round(bigBytes / MiB / cachedMedian),
      local_read_mib_s: round(bigBytes / MiB / localMedian),
      cached_read_vs_local: round(localMedian / cachedMedian),
      holder_peer_reads_during_cached_reads: peerReadsDuring,
      subscription_files: files,
      subscription_lag_p95_s: round(percentile(lags, 0.95)),
      subscription_lag_p50_s: round(percentile(lags, 0.5)),
      subscription_lag_max_s: round(Math.max(...lags)),
      goals: { fault_in_vs_direct: 0.8, cached_read_vs_local: 0.95, subscription_lag_p95_s: 3 },
    };
    if (values.json) console.log(JSON.stringify(figures));
    else {
      say('');
      say(
        `fault_in_vs_direct      ${figures.fault_in_vs_direct} (goal >= 0.8; fault-in ${figures.fault_in_mib_s} MiB/s, direct GET ${figures.direct_get_mib_s} MiB/s, ${bigBytes / MiB} MiB; a read passed through a site without cache: ${figures.passthrough_vs_direct})`,
      );
      say(
        `cached_read_vs_local    ${figures.cached_read_vs_local} (goal >= 0.95; cached ${figures.cached_read_mib_s} MiB/s, local ${figures.local_read_mib_s} MiB/s, median of ${rounds})`,
      );
      say(
        `subscription_lag_p95_s  ${figures.subscription_lag_p95_s} (goal <= 3; p50 ${figures.subscription_lag_p50_s}, max ${figures.subscription_lag_max_s}, ${files} files, 1 s cycle)`,
      );
    }
  } finally {
    await stopProcessFederation(sites);
    await server?.stop().catch(() => undefined);
    await fs.rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * tulane subscribes to a collection at lsu (the rule made at lsu, so it is there before the files);
 * the files are written at lsu one after another; each one's lag runs from its write's answer to
 * the first poll (every 50 ms) that finds tulane's copy good.
 */
async function benchSubscription(
  home: string,
  files: number,
  lsu: Site,
  tulane: Site,
  say: (l: string) => void,
): Promise<number[]> {
  const dir = `${home}/bench-published`;
  await lsu.client!.makeCollection(dir);
  await lsu.client!.postJson(
    '/api/v1/placement/subscriptions',
    JSON.stringify({ path: dir, site: 'tulane' }),
  );
  await until(
    async () => (await tulane.pool.query('SELECT 1 FROM placement_rules WHERE subscription')).rows.length > 0,
    60,
    'the subscription at tulane',
  );
  const written = new Map<string, number>();
  const good = new Map<string, number>();
  let writing = true;
  let last = performance.now();
  const poller = (async () => {
    while (writing || good.size < files) {
      const r = await tulane.pool.query<{ name: string }>(
        `SELECT o.name FROM replicas r JOIN data_objects o ON o.id = r.object_id
           JOIN collections c ON c.id = o.collection_id
          WHERE c.path = $1 AND r.site_id = 'tulane' AND r.status = 'good' AND r.checksum = o.checksum`,
        [dir],
      );
      const now = performance.now();
      for (const { name } of r.rows) if (!good.has(name)) good.set(name, now);
      if (!writing && performance.now() - last > 120_000)
        throw new Error('the subscribed copies did not all come');
      await sleep(50);
    }
  })();
  for (let i = 0; i < files; i++) {
    const name = `p${String(i).padStart(3, '0')}.bin`;
    await lsu.client!.put(`${dir}/${name}`, { kind: 'bytes', data: randomBytes(64 * 1024) });
    written.set(name, performance.now());
  }
  last = performance.now();
  writing = false;
  await poller;
  const lags = [...written].map(([name, at]) => (good.get(name)! - at) / 1000);
  say(
    `subscription: ${files} files written at lsu in ${((last - Math.min(...written.values())) / 1000).toFixed(1)} s; lag to a good copy at tulane p50 ${percentile(lags, 0.5).toFixed(2)} s, p95 ${percentile(lags, 0.95).toFixed(2)} s`,
  );
  return lags;
}

const statRoute = (p: string): string => `/api/v1/namespace/stat?path=${encodeURIComponent(p)}`;

async function cachedGood(site: Site, name: string): Promise<boolean> {
  const r = await site.pool.query(
    `SELECT 1 FROM replicas r JOIN data_objects o ON o.id = r.object_id
      WHERE o.name = $1 AND r.site_id = $2 AND r.cached AND r.status = 'good' AND r.checksum = o.checksum`,
    [name, site.id],
  );
  return r.rows.length > 0;
}

/** Object-byte requests `site` answered for its peers so far (its request histogram). */
async function peerReads(site: Site, token: string): Promise<number> {
  const text = await new Promise<string>((resolve, reject) => {
    const req = http.get(`${site.url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
    req.once('response', (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve(body));
    });
    req.once('error', reject);
  });
  let n = 0;
  for (const line of text.split('\n'))
    if (
      line.startsWith('tributary_http_request_duration_seconds_count{') &&
      line.includes('route="/api/v1/replication/peer/objects/:id"')
    )
      n += Number(line.split(' ').pop());
  return n;
}

/** Reads a whole object at `url` and throws its bytes away: seconds from the request to the last byte. */
function timedRead(url: string, token: string, objectPath: string, size: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const req = http.get(`${url}/api/v1/data?path=${encodeURIComponent(objectPath)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    req.once('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${objectPath} at ${url}: ${res.statusCode}`));
        return;
      }
      let got = 0;
      res.on('data', (c: Buffer) => (got += c.length));
      res.once('end', () => {
        if (got !== size) reject(new Error(`GET ${objectPath} at ${url}: ${got} of ${size} bytes`));
        else resolve((performance.now() - t0) / 1000);
      });
      res.once('error', reject);
    });
    req.once('error', reject);
  });
}

function round(x: number): number {
  return Math.round(x * 100) / 100;
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
