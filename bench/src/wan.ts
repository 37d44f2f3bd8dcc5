import 'reflect-metadata';
import type { ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { freePort, migrate, startEmbeddedPostgres, type EmbeddedServer } from '@tributary/api/embedding';
import { ApiConnection, downloadFile } from '@tributary/buffer';
import { prng } from '@tributary/testkit/prng';
import { startWan, WAN_PROFILES, type Wan, type WanProfile } from '@tributary/testkit/wan';
import { median } from './bench-kit';
import { BenchClient, httpTransport } from './client';
import { pairKeys, siteSettings } from './federation-settings';
import { startSiteProcess, stopSiteProcess } from './site-process';
import { runTrib } from './trib';

const USAGE = `npm run bench:wan -- [--json] [--quick] [--only write,read,latency,parallel]

The seed's Tables 1 to 4 (PetaShare: writing and reading at a local and a remote site, for a central
catalog and asynchronous replication) over an emulated WAN (Toxiproxy, the regional profile: 10 ms
round trip), with trib put -r / get -r as the client (the seed used pcommands):
  central   one site whose catalog (DATABASE_URL) is reached across the WAN; replication off
  async     two sites, each on its own catalog, replicating with each other across the WAN (ours)
  sync      left out (docs/wan.md says why); the seed's figures are printed beside ours
Local: the client talks to its site directly. Remote: the client's requests cross the WAN.
Data sets: 1000 x 10 KB and one 10 MB file, 1000 x 100 KB and 100 MB, 1000 x 1 MB and 1 GB.
  write_<local|remote>_<set>_<setup>_s     seconds, and the same for read_
  central_over_async_write_local_small     the seed: 3.19 (63.51 s / 19.92 s)
  async_regional_over_campus_write_local_small   goal <= 1.1 (median of alternating runs)
  seed_over_async_min                      the smallest seed-async / our-async over every row; goal >= 10
  parallel_over_single_wan                 one object over a 100 ms link limited per connection
                                           (2,000 kB/s): 8 parallel ranged streams against one; goal >= 3
  --json    one JSON object on stdout, nothing else
  --quick   100 files per set (and single files of 100 x the size), a smaller parallel object: a smoke run
  --only    steps to run (write, read, latency, parallel; read needs write); the others print null`;

const KB = 1000;
const MB = 1000 * KB;
const SETUPS = ['central', 'async'] as const;
type Setup = (typeof SETUPS)[number];
const WHERE = ['local', 'remote'] as const;
type Where = (typeof WHERE)[number];
const STEPS = ['write', 'read', 'latency', 'parallel'] as const;

/** The seed's Tables 1 to 4 (seconds): [central ("No Replication"), synchronous, asynchronous]. */
const SEED: Record<'write' | 'read', Record<Where, Record<string, [number, number, number]>>> = {
  write: {
    remote: {
      '10KBx1000': [75.94, 240.32, 38.81],
      '10MBx1': [1.38, 1.48, 1.34],
      '100KBx1000': [83.53, 247.43, 47.76],
      '100MBx1': [2.51, 2.96, 2.83],
      '1MBx1000': [156.61, 320.96, 144.53],
      '1GBx1': [9.91, 11.68, 10.31],
    },
    local: {
      '10KBx1000': [63.51, 221.33, 19.92],
      '10MBx1': [0.25, 0.46, 0.15],
      '100KBx1000': [64.42, 223.06, 21.38],
      '100MBx1': [0.58, 1.02, 0.47],
      '1MBx1000': [75.02, 232.48, 36.75],
      '1GBx1': [5.16, 9.18, 8.37],
    },
  },
  read: {
    remote: {
      '10KBx1000': [46, 40.75, 26.51],
      '10MBx1': [1.58, 1.74, 1.47],
      '100KBx1000': [55, 48.92, 34.13],
      '100MBx1': [3.44, 3.54, 3.29],
      '1MBx1000': [166.98, 157.43, 144.98],
      '1GBx1': [14.47, 11.55, 9.57],
    },
    local: {
      '10KBx1000': [24.33, 23.63, 17.8],
      '10MBx1': [0.2, 0.36, 0.14],
      '100KBx1000': [25.57, 25.23, 19.43],
      '100MBx1': [0.42, 1.4, 0.43],
      '1MBx1000': [31.94, 38.08, 25.43],
      '1GBx1': [7.34, 14.06, 3.25],
    },
  },
};
const TABLES: { op: 'write' | 'read'; where: Where; title: string }[] = [
  { op: 'write', where: 'remote', title: 'Table 1: writing to a remote site' },
  { op: 'write', where: 'local', title: 'Table 2: writing to the local site' },
  { op: 'read', where: 'remote', title: 'Table 3: reading from a remote site' },
  { op: 'read', where: 'local', title: 'Table 4: reading from the local site' },
];

/** One of the seed's data sets: `count` files of `size` bytes, or one file of their total size. */
interface DataSet {
  /** Its name in the seed's tables (`10KBx1000`). */
  seedKey: string;
  /** Its name in our figures (the seed's unless --quick makes it smaller). */
  key: string;
  count: number;
  size: number;
}

function dataSets(files: number): DataSet[] {
  const label = (bytes: number): string =>
    bytes >= 1000 * MB ? `${bytes / (1000 * MB)}GB` : bytes >= MB ? `${bytes / MB}MB` : `${bytes / KB}KB`;
  const sets: DataSet[] = [];
  for (const size of [10 * KB, 100 * KB, MB]) {
    const seedKeyMany = `${label(size)}x1000`;
    sets.push({ seedKey: seedKeyMany, key: `${label(size)}x${files}`, count: files, size });
    sets.push({
      seedKey: `${label(size * 1000)}x1`,
      key: `${label(size * files)}x1`,
      count: 1,
      size: size * files,
    });
  }
  return sets;
}

interface Site {
  id: string;
  child: ChildProcess;
}

interface Federation {
  setup: Setup;
  /** Where the client reaches the site it writes to and reads from, by where it is. */
  url: Record<Where, string>;
  token: string;
  home: string;
  sites: Site[];
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean' },
      quick: { type: 'boolean' },
      only: { type: 'string' },
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
  const steps = new Set(values.only ? values.only.split(',').map((s) => s.trim()) : STEPS);
  for (const s of steps)
    if (!(STEPS as readonly string[]).includes(s)) throw new Error(`--only: no step ${s}`);
  if (steps.has('read') && !steps.has('write')) throw new Error('--only: read needs write');
  const files = quick ? 100 : 1000;
  const sets = dataSets(files);

  // The machine's load when the run starts and ends (other work on it shows in every figure).
  const loadStart = round(os.loadavg()[0]!);
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-wan-'));
  await fs.chmod(root, 0o755);
  let server: EmbeddedServer | undefined;
  let wan: Wan | undefined;
  const running: Site[] = [];
  const figures: Record<string, number | null> = {};
  try {
    server = await startEmbeddedPostgres(path.join(root, 'postgres'), { fast: false });
    wan = await startWan({ profile: 'regional', seed: 32 });
    say(`embedded PostgreSQL (fsync on) and Toxiproxy in ${root}; links: regional (10 ms round trip)`);
    const password = 'bench-wan-' + Math.random().toString(36).slice(2, 14);

    for (const setup of SETUPS) {
      if (!steps.has('write') && !(setup === 'async' && (steps.has('latency') || steps.has('parallel'))))
        continue;
      const fed = await startSetup(setup, server, wan, root, password, running);
      say(`\n${setup}: ${describeSetup(setup)}`);
      if (steps.has('write')) {
        await warmUp(fed, root);
        for (const set of sets) {
          const dir = path.join(root, 'data', set.key);
          await makeDataSet(dir, set);
          // Sets up to 100 MB are written and read three times (the median is kept), the 1 GB ones once.
          const repeats = set.count * set.size <= 100 * MB ? 3 : 1;
          for (const where of WHERE) {
            const writes: number[] = [];
            const reads: number[] = [];
            for (let k = 0; k < repeats; k++) {
              const remote = `${fed.home}/${setup}-${where}-${set.key}-${k}`;
              writes.push(await timed(() => trib(fed, where, root, put(dir, set, remote))));
              if (steps.has('read')) {
                const target = path.join(root, 'read', `${setup}-${where}-${set.key}-${k}`);
                await fs.mkdir(target, { recursive: true });
                reads.push(await timed(() => trib(fed, where, root, get(set, remote, target))));
                await fs.rm(target, { recursive: true, force: true });
              }
            }
            const w = median(writes);
            const r = reads.length ? median(reads) : null;
            figures[`write_${where}_${set.key}_${setup}_s`] = round(w);
            figures[`read_${where}_${set.key}_${setup}_s`] = r === null ? null : round(r);
            say(
              `  ${set.key.padEnd(11)} ${where.padEnd(6)} write ${fmt(w)} s   read ${r === null ? '-' : fmt(r)} s` +
                (repeats > 1
                  ? `   (writes ${writes.map(fmt).join(', ')}; reads ${reads.map(fmt).join(', ')})`
                  : ''),
            );
          }
          await fs.rm(dir, { recursive: true, force: true });
        }
      }
      if (setup === 'async' && steps.has('latency')) {
        const small = sets[0]!;
        const { campus, regional } = await latencyStep(fed, wan, root, small, quick ? 4 : 6, say);
        figures[`write_local_${small.key}_async_campus_s`] = round(campus);
        figures[`write_local_${small.key}_async_regional_s`] = round(regional);
        figures.async_regional_over_campus_write_local_small = round(regional / campus);
      }
      if (setup === 'async' && steps.has('parallel')) {
        const p = await parallelStep(fed, wan, root, quick ? 8 * MB : 32 * MB, say);
        figures.parallel_object_bytes = p.bytes;
        figures.parallel_single_stream_s = round(p.single);
        figures.parallel_8_streams_s = round(p.parallel);
        figures.parallel_over_single_wan = round(p.single / p.parallel);
      }
      await Promise.all(fed.sites.map((s) => stopSiteProcess(s.child)));
    }

    const small = sets[0]!;
    const ratio = (a: number | null | undefined, b: number | null | undefined): number | null =>
      a && b ? round(a / b) : null;
    figures.central_over_async_write_local_small = ratio(
      figures[`write_local_${small.key}_central_s`],
      figures[`write_local_${small.key}_async_s`],
    );
    figures.sync_over_async_write_local_small = null;
    // Our asynchronous figures against the seed's: for every row measured, seed / ours.
    let min: number | null = null;
    for (const t of TABLES)
      for (const set of sets) {
        const ours = figures[`${t.op}_${t.where}_${set.key}_async_s`];
        const seed = SEED[t.op][t.where][set.seedKey]?.[2];
        if (ours && seed && !quick) min = Math.min(min ?? Infinity, seed / ours);
      }
    figures.seed_over_async_min = min === null ? null : round(min);

    const out = {
      load_average_start: loadStart,
      load_average_end: round(os.loadavg()[0]!),
      profile: 'regional',
      rtt_ms: WAN_PROFILES.regional.rttMs,
      files_per_set: files,
      ...figures,
      seed_central_over_async_write_local_small: round(63.51 / 19.92),
      seed_sync_over_async_write_local_small: round(221.33 / 19.92),
      goals: {
        async_regional_over_campus_write_local_small: 1.1,
        seed_over_async_min: 10,
        parallel_over_single_wan: 3,
      },
    };
    if (values.json) console.log(JSON.stringify(out));
    else {
      printTables(say, sets, figures, quick);
      say(`load average (1 min): ${loadStart} at the start, ${out.load_average_end} at the end`);
    }
  } finally {
    await Promise.all(running.map((s) => stopSiteProcess(s.child)));
    await wan?.close().catch(() => undefined);
    await server?.stop().catch(() => undefined);
    await fs.rm(root, { recursive: true, force: true }).catch(() => undefined);
  }
}

function describeSetup(setup: Setup): string {
  return setup === 'central'
    ? 'one site, its catalog across the WAN (every query pays 10 ms), replication off'
    : 'lsu and tulane, each on its own catalog, replicating across the WAN (30 s cycle)';
}

/**
 * Starts a setup's sites as processes (each reports SiteReady over IPC) and the links the client
 * and the sites use: in `central` the site's catalog connection crosses the WAN; in `async` the two
 * sites' replication does. The remote client reaches the site it writes to across a WAN link.
 */
async function startSetup(
  setup: Setup,
  server: EmbeddedServer,
  wan: Wan,
  root: string,
  password: string,
  running: Site[],
): Promise<Federation> {
  const ids = setup === 'central' ? ['lsu'] : ['lsu', 'tulane'];
  const ports = await Promise.all(ids.map(() => freePort()));
  const key = pairKeys();
  const sites: Site[] = [];
  // Each site's peers through a WAN link of their own.
  const peerPorts = new Map<string, number>();
  for (const from of ids)
    for (const to of ids.filter((x) => x !== from)) {
      const link = await wan.link(`${setup}-${from}-${to}`, `127.0.0.1:${ports[ids.indexOf(to)]}`);
      peerPorts.set(`${from}-${to}`, link.port);
    }
  for (const [index, id] of ids.entries()) {
    const connection = await server.database(`bench_wan_${setup}_${id}`);
    await migrate(connection);
    let dbHost = '127.0.0.1';
    let dbPort = Number(connection.port);
    if (setup === 'central') {
      const link = await wan.link(`${setup}-catalog`, `127.0.0.1:${dbPort}`);
      dbHost = link.host;
      dbPort = link.port;
    }
    const env: Record<string, string> = {
      DATABASE_URL: `postgresql://${encodeURIComponent(String(connection.user))}:${encodeURIComponent(String(connection.password))}@${dbHost}:${dbPort}/${String(connection.database)}`,
      ...siteSettings({
        id,
        index,
        portOf: (p) => ports[ids.indexOf(p)]!,
        peers: ids.filter((p) => p !== id),
        key,
        dataDir: path.join(root, `sites-${setup}`),
        portalDir: path.join(root, 'no-portal'),
        password,
        cycleSeconds: 30,
        joinFrom: index > 0 ? 'lsu' : '',
      }),
      // The seed's sites had no mover and no scrub: the scrub would hash the bytes being measured,
      // and the mover's passes (no rules here) would query the catalog every 2 s.
      SCRUB_RATE_MIBS: '0',
      PLACEMENT_ENABLED: 'false',
    };
    if (setup === 'central') env.REPLICATION_ENABLED = 'false';
    else
      env.REPLICATION_PEERS = JSON.stringify(
        ids
          .filter((p) => p !== id)
          .map((p) => ({ id: p, url: `http://127.0.0.1:${peerPorts.get(`${id}-${p}`)}`, key: key(id, p) })),
      );
    const child = await startSiteProcess(id, env);
    const site = { id, child };
    sites.push(site);
    running.push(site);
  }
  // The client: local at lsu; remote at the last site (tulane, or the central setup's one site),
  // across a WAN link.
  const localUrl = `http://127.0.0.1:${ports[0]}`;
  const remoteSite = ports[ports.length - 1]!;
  const clientLink = await wan.link(`${setup}-client`, `127.0.0.1:${remoteSite}`);
  const token = await BenchClient.createWriteToken(httpTransport(localUrl, 2), 'admin', password);
  const client = new BenchClient(httpTransport(localUrl, 2), token);
  const home = await client.homePath();
  if (setup === 'async') {
    // The token and the home reach tulane with a replication round: wait for them there.
    await until(async () => {
      const res = await fetch(`${clientLink.url}/api/v1/me`, {
        headers: { authorization: `Bearer ${token}` },
      });
      return res.status === 200;
    }, 90_000);
  }
  return { setup, url: { local: localUrl, remote: clientLink.url }, token, home, sites };
}

async function until(check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return;
    if (Date.now() > deadline) throw new Error(`gave up after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** A first put and get each way, so that no measured run pays for cold caches and compilation. */
async function warmUp(fed: Federation, root: string): Promise<void> {
  const set: DataSet = { seedKey: '', key: 'warm-up', count: 50, size: 10 * KB };
  const dir = path.join(root, 'data', 'warm-up');
  await makeDataSet(dir, set);
  for (const where of WHERE) {
    const remote = `${fed.home}/warm-up-${where}`;
    await trib(fed, where, root, put(dir, set, remote));
    const target = path.join(root, 'read', `warm-up-${where}`);
    await fs.mkdir(target, { recursive: true });
    await trib(fed, where, root, get(set, remote, target));
    await fs.rm(target, { recursive: true, force: true });
  }
  await fs.rm(dir, { recursive: true, force: true });
}

/** Files of random bytes (a seeded stream, so no two files are alike and nothing compresses). */
async function makeDataSet(dir: string, set: DataSet): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  const next = prng(set.size + set.count);
  const block = Buffer.alloc(Math.min(set.size, 8 * MB));
  const fill = (): void => {
    for (let i = 0; i + 4 <= block.length; i += 4) block.writeUInt32LE((next() * 2 ** 32) >>> 0, i);
  };
  for (let i = 0; i < set.count; i++) {
    const handle = await fs.open(path.join(dir, name(set, i)), 'w');
    try {
      for (let written = 0; written < set.size; written += block.length) {
        fill();
        await handle.write(block, 0, Math.min(block.length, set.size - written));
      }
    } finally {
      await handle.close();
    }
  }
}

function name(set: DataSet, i: number): string {
  return set.count === 1 ? 'single.bin' : `f${String(i).padStart(4, '0')}.bin`;
}

/** trib's arguments to write a data set: the directory's files into a new collection, or the one file. */
function put(dir: string, set: DataSet, remote: string): string[] {
  return set.count === 1 ? ['put', path.join(dir, name(set, 0)), remote] : ['put', '-r', dir, remote];
}

function get(set: DataSet, remote: string, target: string): string[] {
  return set.count === 1 ? ['get', remote, path.join(target, 'single.bin')] : ['get', '-r', remote, target];
}

/** Runs trib in this process against the setup's site, local or across the WAN. */
function trib(fed: Federation, where: Where, root: string, args: string[]): Promise<void> {
  return runTrib(
    { siteUrl: fed.url[where], token: fed.token, agentHome: path.join(root, 'agent-home'), cwd: root },
    args,
  );
}

async function timed(run: () => Promise<void>): Promise<number> {
  const t0 = performance.now();
  await run();
  return (performance.now() - t0) / 1000;
}

/**
 * The small set written at the local site with the replication links at `campus` and at `regional`,
 * alternating (the links carry replication only, so a local write should not feel them); medians.
 */
async function latencyStep(
  fed: Federation,
  wan: Wan,
  root: string,
  set: DataSet,
  runs: number,
  say: (l: string) => void,
): Promise<{ campus: number; regional: number }> {
  const dir = path.join(root, 'data', `latency-${set.key}`);
  await makeDataSet(dir, set);
  const times: Record<'campus' | 'regional', number[]> = { campus: [], regional: [] };
  const links = wan.links.filter(
    (l) => l.name.startsWith('async-lsu-') || l.name.startsWith('async-tulane-'),
  );
  for (let i = 0; i < runs; i++) {
    // Alternating which goes first, so a trend in the machine's load weighs on both alike.
    const order = i % 2 === 0 ? (['campus', 'regional'] as const) : (['regional', 'campus'] as const);
    for (const profile of order) {
      await Promise.all(links.map((l) => l.setProfile(profile)));
      const remote = `${fed.home}/latency-${profile}-${i}`;
      times[profile].push(await timed(() => trib(fed, 'local', root, put(dir, set, remote))));
    }
  }
  await fs.rm(dir, { recursive: true, force: true });
  const campus = median(times.campus);
  const regional = median(times.regional);
  say(
    `  latency: ${set.key} written locally, replication links campus ${fmt(campus)} s, regional ${fmt(regional)} s (medians of ${runs}: ${times.campus.map(fmt).join(', ')} / ${times.regional.map(fmt).join(', ')})`,
  );
  return { campus, regional };
}

/** The object transfer over a 100 ms link whose connections each carry at most 2,000 kB/s. */
const PARALLEL_LINK: WanProfile = { rttMs: 100, jitterMs: 0, resetFraction: 0, bandwidthKBs: 2000 };
const PARALLEL_STREAMS = 8;

async function parallelStep(
  fed: Federation,
  wan: Wan,
  root: string,
  bytes: number,
  say: (l: string) => void,
): Promise<{ bytes: number; single: number; parallel: number }> {
  const set: DataSet = { seedKey: '', key: 'parallel', count: 1, size: bytes };
  const dir = path.join(root, 'data', 'parallel');
  await makeDataSet(dir, set);
  const remote = `${fed.home}/parallel.bin`;
  await trib(fed, 'local', root, put(dir, set, remote));
  await fs.rm(dir, { recursive: true, force: true });
  const link = await wan.link('parallel', new URL(fed.url.local).host);
  await link.setProfile(PARALLEL_LINK);
  const api = new ApiConnection({ baseUrl: link.url, token: fed.token });
  const target = path.join(root, 'parallel.bin');
  const chunkBytes = Math.ceil(bytes / PARALLEL_STREAMS);
  const run = (streams: number): Promise<number> =>
    timed(async () => {
      const result = await downloadFile(api, remote, target, { streams, chunkBytes });
      if (result.size !== bytes) throw new Error(`parallel step: ${result.size} bytes, not ${bytes}`);
    });
  // Same engine, same ranges: one stream fetches them one after another, eight at once.
  const single = await run(1);
  const parallel = await run(PARALLEL_STREAMS);
  await fs.rm(target, { force: true });
  say(
    `  parallel: ${bytes / MB} MB over 100 ms, ${PARALLEL_LINK.bandwidthKBs} kB/s per connection: one stream ${fmt(single)} s, ${PARALLEL_STREAMS} streams ${fmt(parallel)} s`,
  );
  return { bytes, single, parallel };
}

function printTables(
  say: (l: string) => void,
  sets: DataSet[],
  figures: Record<string, number | null>,
  quick: boolean,
): void {
  const cell = (v: number | null | undefined, w = 9): string =>
    (v === null || v === undefined ? '-' : fmt(v)).padStart(w);
  for (const t of TABLES) {
    say(`\n${t.title} (seconds; the seed's LONI testbed beside ours at a 10 ms round trip)`);
    say(
      `  ${'data set'.padEnd(11)} ${'seed central'.padStart(12)} ${'seed sync'.padStart(9)} ${'seed async'.padStart(10)} | ${'central'.padStart(9)} ${'sync'.padStart(5)} ${'async'.padStart(9)} ${'seed/async'.padStart(10)}`,
    );
    for (const set of sets) {
      const seed = SEED[t.op][t.where][set.seedKey];
      const central = figures[`${t.op}_${t.where}_${set.key}_central_s`];
      const async = figures[`${t.op}_${t.where}_${set.key}_async_s`];
      say(
        `  ${set.key.padEnd(11)} ${cell(seed?.[0], 12)} ${cell(seed?.[1])} ${cell(seed?.[2], 10)} | ${cell(central)} ${'-'.padStart(5)} ${cell(async)} ${quick || !seed || !async ? '-'.padStart(10) : cell(seed[2] / async, 10)}`,
      );
    }
  }
  say('');
  for (const k of [
    'central_over_async_write_local_small',
    'async_regional_over_campus_write_local_small',
    'seed_over_async_min',
    'parallel_over_single_wan',
  ])
    say(`${k.padEnd(46)} ${figures[k] ?? '-'}`);
  say(`(the seed: central_over_async 3.19, sync_over_async 11.11; goals: <= 1.1, >= 10, >= 3)`);
}

function round(x: number): number {
  return Math.round(x * 1000) / 1000;
}

function fmt(x: number): string {
  return x >= 100 ? x.toFixed(1) : x >= 10 ? x.toFixed(2) : x.toFixed(3);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? (err.stack ?? err.message) : String(err));
  process.exit(1);
});
