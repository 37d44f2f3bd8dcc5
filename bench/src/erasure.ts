import 'reflect-metadata';
import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startEmbeddedPostgres, type EmbeddedServer } from '@tributary/api/embedding';
import { encodeStripes, erasureLayout } from '@tributary/placement';
import { median, probe, sleep, until, writeRandomFile } from './bench-kit';
import { BenchClient, httpTransport } from './client';
import { startProcessFederation, stopProcessFederation, type ProcessSite } from './site-process';

const USAGE = `npm run bench:erasure -- [--json] [--quick]

Six sites (separate processes, real HTTP, one embedded PostgreSQL with a catalog each, 1 s
replication cycle) and erasure rules (docs/erasure.md), each figure against a baseline of the run:
  ec_write_vs_copies        a 1 GiB object placed as 4+2 shards (from the rule until all six shards
                            are good, each at its own site) against the same size placed as 3 whole
                            copies (until all three are good); both survive two failures; goal >= 1.0
  storage_ratio             bytes the six shards hold over the object's bytes (after the whole copy
                            is dropped); goal <= 1.55 (3 copies store 3.0)
  degraded_read_vs_healthy  reading the object at a site with two other shard sites stopped, against
                            reading it with every site up (medians of 3); goal >= 0.7
  encode_mib_s              encodeStripes over 1 GiB in memory, one stripe at a time (one core of
                            Galois work at a time); goal >= 1,000 MiB/s
  --json    one JSON object on stdout, nothing else
  --quick   128 MiB instead of 1 GiB: a smoke check`;

const SITES = ['lsu', 'tulane', 'uno', 'lsuhsc', 'xula', 'dillard'] as const;
type SiteId = (typeof SITES)[number];
const MiB = 1024 * 1024;

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { json: { type: 'boolean' }, quick: { type: 'boolean' }, help: { type: 'boolean' } },
  });
  if (values.help) {
    console.log(USAGE);
    return;
  }
  const say = (line: string): void => void (values.json ? process.stderr : process.stdout).write(line + '\n');
  const bytes = (values.quick ? 128 : 1024) * MiB;

  const encodeMiBs = await benchEncode(bytes);
  say(`encode: ${encodeMiBs.toFixed(0)} MiB/s`);

  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-erasure-'));
  await fs.chmod(root, 0o755);
  let server: EmbeddedServer | undefined;
  const sites: ProcessSite<SiteId>[] = [];
  try {
    server = await startEmbeddedPostgres(path.join(root, 'postgres'), { fast: false });
    const password = randomBytes(18).toString('base64url');
    sites.push(
      ...(await startProcessFederation({
        server,
        root,
        password,
        ids: SITES,
        databasePrefix: 'bench_erasure',
        env: () => ({ PLACEMENT_INTERVAL_MS: '200', PEER_DOWN_MS: '60000', SCRUB_RATE_MIBS: '0' }),
      })),
    );
    const lsu = sites[0]!;
    const token = await BenchClient.createWriteToken(httpTransport(lsu.url, 2), 'admin', password);
    const client = new BenchClient(httpTransport(lsu.url, 4), token);
    const home = await client.homePath();
    for (const s of sites.slice(1))
      await until(async () => (await probe(s.url, token, '/api/v1/me')) === 200, 60, `the token at ${s.id}`);

    const source = path.join(root, 'object.bin');
    await writeRandomFile(source, bytes);
    const copiesDir = `${home}/bench-copies`;
    const ecDir = `${home}/bench-erasure`;
    for (const dir of [copiesDir, ecDir]) {
      await client.makeCollection(dir);
      await client.put(`${dir}/object.bin`, { kind: 'file', path: source, size: bytes });
    }
    await fs.rm(source);
    for (const s of sites)
      await until(async () => (await objectCount(s)) === 2, 120, `both objects known at ${s.id}`);

    // Three whole copies.
    let t0 = performance.now();
    await client.postJson('/api/v1/placement/rules', JSON.stringify({ path: copiesDir, copies: 3 }));
    await until(async () => (await ownGood(sites, 'replicas', copiesDir)) >= 3, 1800, 'three good copies');
    const copiesSeconds = (performance.now() - t0) / 1000;
    say(`3 copies placed in ${copiesSeconds.toFixed(1)} s`);

    // Six shards.
    t0 = performance.now();
    await client.postJson(
      '/api/v1/placement/rules',
      JSON.stringify({ path: ecDir, erasure: { k: 4, m: 2 } }),
    );
    await until(async () => (await ownGood(sites, 'erasure_shards', ecDir)) >= 6, 1800, 'six good shards');
    const ecSeconds = (performance.now() - t0) / 1000;
    say(`4+2 shards placed in ${ecSeconds.toFixed(1)} s`);
    await until(async () => (await wholeCopies(sites, ecDir)) === 0, 600, 'the whole copy dropped');
    const stored = await shardBytes(lsu, ecDir);
    say(`shards hold ${stored} bytes for ${bytes}; no whole copy left`);

    // Reads at uno: every site up, then with two other shard sites stopped.
    const reader = sites[2]!;
    const file = `${ecDir}/object.bin`;
    const read = async (): Promise<number> => {
      const t = performance.now();
      await readAll(reader.url, token, file, bytes);
      return (performance.now() - t) / 1000;
    };
    await read();
    const healthy = [await read(), await read(), await read()];
    const stopped = [sites[4]!, sites[5]!];
    for (const s of stopped) s.child.kill('SIGSTOP');
    let degraded: number[];
    try {
      await read(); // the first read finds them not answering (one connect timeout each)
      degraded = [await read(), await read(), await read()];
    } finally {
      for (const s of stopped) s.child.kill('SIGCONT');
    }
    say(
      `reads at uno: healthy ${healthy.map((x) => x.toFixed(2)).join(', ')} s; two sites stopped ${degraded.map((x) => x.toFixed(2)).join(', ')} s`,
    );

    const round = (x: number): number => Math.round(x * 1000) / 1000;
    const figures = {
      object_bytes: bytes,
      ec_place_seconds: round(ecSeconds),
      copies_place_seconds: round(copiesSeconds),
      ec_write_vs_copies: round(copiesSeconds / ecSeconds),
      shard_bytes: stored,
      storage_ratio: round(stored / bytes),
      healthy_read_seconds: round(median(healthy)),
      degraded_read_seconds: round(median(degraded)),
      healthy_read_mib_s: round(bytes / MiB / median(healthy)),
      degraded_read_mib_s: round(bytes / MiB / median(degraded)),
      degraded_read_vs_healthy: round(median(healthy) / median(degraded)),
      encode_mib_s: Math.round(encodeMiBs),
      goals: {
        ec_write_vs_copies: 1.0,
        storage_ratio: 1.55,
        degraded_read_vs_healthy: 0.7,
        encode_mib_s: 1000,
      },
    };
    if (values.json) console.log(JSON.stringify(figures));
    else {
      say('');
      say(
        `ec_write_vs_copies        ${figures.ec_write_vs_copies} (goal >= 1.0; 4+2 in ${figures.ec_place_seconds} s, 3 copies in ${figures.copies_place_seconds} s)`,
      );
      say(`storage_ratio             ${figures.storage_ratio} (goal <= 1.55; 3 copies: 3.0)`);
      say(
        `degraded_read_vs_healthy  ${figures.degraded_read_vs_healthy} (goal >= 0.7; ${figures.degraded_read_mib_s} against ${figures.healthy_read_mib_s} MiB/s)`,
      );
      say(`encode_mib_s              ${figures.encode_mib_s} (goal >= 1000)`);
    }
  } finally {
    await stopProcessFederation(sites);
    await server?.stop().catch(() => undefined);
    await fs.rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
}

/** encodeStripes over `bytes` of random data from memory (a 4 MiB block repeated). */
async function benchEncode(bytes: number): Promise<number> {
  const block = randomBytes(4 * MiB);
  async function* source(): AsyncGenerator<Buffer> {
    for (let at = 0; at < bytes; at += block.length) {
      await Promise.resolve();
      yield block;
    }
  }
  const layout = erasureLayout(4, 2, bytes);
  for await (const stripe of encodeStripes(erasureLayout(4, 2, 64 * MiB), source64())) void stripe; // warm-up
  const t0 = performance.now();
  let stripes = 0;
  for await (const stripe of encodeStripes(layout, source())) stripes += stripe.shards.length > 0 ? 1 : 0;
  const seconds = (performance.now() - t0) / 1000;
  if (stripes * 4 * MiB < bytes) throw new Error('the encoder stopped early');
  return bytes / MiB / seconds;

  async function* source64(): AsyncGenerator<Buffer> {
    for (let at = 0; at < 64 * MiB; at += block.length) {
      await Promise.resolve();
      yield block;
    }
  }
}

async function objectCount(site: ProcessSite): Promise<number> {
  const r = await site.pool.query<{ n: number }>(
    "SELECT count(*)::int AS n FROM data_objects WHERE name = 'object.bin' AND trash_id = 0",
  );
  return r.rows[0]!.n;
}

/** Good current rows of `table` below `dir`, each site counting only its own (its own view is first to know). */
async function ownGood(
  sites: readonly ProcessSite[],
  table: 'replicas' | 'erasure_shards',
  dir: string,
): Promise<number> {
  const checksum = table === 'replicas' ? 'r.checksum' : 'r.object_checksum';
  let n = 0;
  for (const s of sites) {
    const r = await s.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${table} r JOIN data_objects o ON o.id = r.object_id
         JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 AND r.site_id = $2 AND r.status = 'good' AND ${checksum} = o.checksum`,
      [dir, s.id],
    );
    n += r.rows[0]!.n;
  }
  return n;
}

async function wholeCopies(sites: readonly ProcessSite[], dir: string): Promise<number> {
  let n = 0;
  for (const s of sites) {
    const r = await s.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM replicas r JOIN data_objects o ON o.id = r.object_id
         JOIN collections c ON c.id = o.collection_id WHERE c.path = $1 AND r.site_id = $2`,
      [dir, s.id],
    );
    n += r.rows[0]!.n;
  }
  return n;
}

async function shardBytes(site: ProcessSite, dir: string): Promise<number> {
  const r = await site.pool.query<{ n: string }>(
    `SELECT coalesce(sum(r.size), 0)::text AS n FROM erasure_shards r JOIN data_objects o ON o.id = r.object_id
       JOIN collections c ON c.id = o.collection_id WHERE c.path = $1 AND r.object_checksum = o.checksum`,
    [dir],
  );
  return Number(r.rows[0]!.n);
}

/** Reads a whole object, checking its length and its bytes against the ETag. */
function readAll(url: string, token: string, objectPath: string, size: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}/api/v1/data?path=${encodeURIComponent(objectPath)}`, {
      headers: { authorization: `Bearer ${token}` },
    });
    req.once('error', reject);
    req.once('response', (res) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`GET ${objectPath}: ${res.statusCode}`));
        return;
      }
      const hash = createHash('sha256');
      let n = 0;
      res.on('data', (chunk: Buffer) => {
        hash.update(chunk);
        n += chunk.length;
      });
      res.once('error', reject);
      res.once('end', () => {
        const etag = String(res.headers.etag ?? '').replace(/"/g, '');
        if (n !== size || (etag && hash.digest('hex') !== etag))
          reject(new Error(`${objectPath}: ${n} bytes read, or not the bytes of the ETag`));
        else resolve();
      });
    });
  });
}

main().then(
  () => sleep(0),
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
