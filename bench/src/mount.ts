/**
 * `npm run bench:mount`: throughput of the FUSE mount against a plain HTTP transfer in the same run,
 * 1000 small files through the mount and through the `trib` CLI, and a tarball of 5,000 small files
 * extracted onto the mount against the detour (extract locally, then `trib put -r`), with the
 * latency of `lstat` in a directory the mount has listed.
 *
 * Without TRIBUTARY_URL it starts a site of its own as a child process (`npm start`'s script,
 * apps/api/dist/cli/start.js, with SITES=1: embedded PostgreSQL in a temp directory, removed at the
 * end); the mount runs in a child process too (the agent's dist/mount/main.js), and every file
 * operation on it is a child process (`cp`), never this process. Both scripts are exported by the
 * apps' package.json (`@tributary/api/start`, `@tributary/agent/mount`).
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes, randomFillSync } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fs } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import {
  latencySummary,
  makeTree,
  parseRequestCounts,
  requestProfile,
  type Latency,
  type RequestCounts,
  type RequestProfile,
  type Tree,
} from './small-files';
import { runTrib } from './trib';

const KiB = 1024;
const MiB = 1024 * KiB;
// The apps' process entries, as their package.json exports them (resolved, not loaded).
const MOUNT_MAIN = require.resolve('@tributary/agent/mount');
const SITE_START = require.resolve('@tributary/api/start');

const USAGE = `npm run bench:mount -- [options]

Copies a large file into and out of a FUSE mount of the namespace with cp, against a plain HTTP
upload and download of the same size in the same run; then 1000 files of 10 KB through the mount
and through the trib CLI; then a tarball of 5,000 files of 4 to 64 KB in a few levels of
directories, extracted onto the mount (tar -xf) against the detour (tar -xf to a local directory,
then trib put -r of it), read back (find, tar -cf), and lstat timed in a directory the mount has
listed. Without TRIBUTARY_URL it starts a site of its own.

  --json              print one JSON object, nothing else on stdout
  --quick             256 MiB, 200 small files, 1000 files in the tarball (a smoke run)
  --size-mib N        large file size (default 1024)
  --small-files N     number of 10 KB files (default 1000)
  --extract-files N   files in the tarball (default 5000, or BENCH_EXTRACT_FILES)
  --only PARTS        comma-separated parts to run: large, small, extract (default all three)
  --buffer-mib N      the mount's advance buffer (default 32)

Environment: TRIBUTARY_URL and TRIBUTARY_TOKEN (a write-scope token) to measure an existing site;
BENCH_EXTRACT_FILES the tarball's file count (for quick runs); BENCH_MOUNT_LOG a file for the
mount's stderr (with TRIBUTARY_MOUNT_DEBUG=trace, every operation and its duration).`;

type Part = 'large' | 'small' | 'extract';
const PARTS: readonly Part[] = ['large', 'small', 'extract'];

interface Options {
  json: boolean;
  sizeMiB: number;
  smallFiles: number;
  extractFiles: number;
  parts: Set<Part>;
  bufferMiB: number;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
      'size-mib': { type: 'string' },
      'small-files': { type: 'string' },
      'extract-files': { type: 'string' },
      only: { type: 'string' },
      'buffer-mib': { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(USAGE + '\n');
    process.exit(0);
  }
  const int = (v: string | undefined, fallback: number): number => {
    if (v === undefined) return fallback;
    if (!/^\d+$/.test(v) || Number(v) < 1) throw new Error(`not a positive integer: ${v}\n${USAGE}`);
    return Number(v);
  };
  const parts = new Set<Part>();
  for (const name of (values.only ?? PARTS.join(',')).split(',')) {
    if (!PARTS.includes(name as Part)) throw new Error(`--only takes ${PARTS.join(', ')}: ${name}\n${USAGE}`);
    parts.add(name as Part);
  }
  return {
    json: values.json ?? false,
    sizeMiB: int(values['size-mib'], values.quick ? 256 : 1024),
    smallFiles: int(values['small-files'], values.quick ? 200 : 1000),
    extractFiles: int(values['extract-files'] ?? process.env.BENCH_EXTRACT_FILES, values.quick ? 1000 : 5000),
    parts,
    bufferMiB: int(values['buffer-mib'], 32),
  };
}

const log = (line: string): void => void process.stderr.write(line + '\n');

function sh(command: string, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile('sh', ['-c', command], { env, maxBuffer: 64 * MiB }, (err, stdout, stderr) => {
      if (err) reject(new Error(`${command}: ${stderr || err.message}`));
      else resolve(String(stdout));
    });
  });
}

const q = (p: string): string => `'${p.replace(/'/g, `'\\''`)}'`;

async function timed(what: string, fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  const seconds = (performance.now() - start) / 1000;
  log(`  ${what}: ${seconds.toFixed(2)} s`);
  return seconds;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

interface Site {
  url: string;
  token: string;
  close(): Promise<void>;
}

async function waitForHealth(url: string, child: ChildProcess | undefined, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child && child.exitCode !== null) throw new Error(`the site exited with ${child.exitCode}`);
    try {
      const res = await fetch(`${url}/api/health`);
      if (res.ok) return;
    } catch {
      // not yet
    }
    if (Date.now() > deadline) throw new Error(`the site at ${url} did not come up`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/** Starts one site (npm start with SITES=1) in a temp directory and makes a write token for its admin. */
async function localSite(scratch: string): Promise<Site> {
  const port = await freePort();
  const password = randomBytes(18).toString('base64url');
  const dataDir = path.join(scratch, 'site');
  await fs.mkdir(dataDir, { recursive: true });
  // As root the embedded PostgreSQL runs as `postgres`, which must reach its data directory.
  await fs.chmod(scratch, 0o755);
  await fs.chmod(dataDir, 0o755);
  const child = spawn(process.execPath, [SITE_START], {
    env: {
      ...process.env,
      SITES: '1',
      PORT: String(port),
      TRIBUTARY_DATA_DIR: dataDir,
      ADMIN_PASSWORD: password,
      LOG_LEVEL: 'warn',
      REPLICATION_ENABLED: 'false',
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr?.on('data', (d: Buffer) => (stderr = (stderr + d.toString()).slice(-4000)));
  const url = `http://127.0.0.1:${port}`;
  const close = async (): Promise<void> => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  };
  try {
    await waitForHealth(url, child, 120_000);
    const login = await fetch(`${url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password }),
    });
    if (!login.ok) throw new Error(`login failed: ${login.status}`);
    const cookie = login.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .find((c) => c?.startsWith('trib_session='));
    const { csrfToken } = (await login.json()) as { csrfToken: string };
    const created = await fetch(`${url}/api/v1/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie: cookie ?? '', 'x-csrf-token': csrfToken },
      body: JSON.stringify({ name: 'bench:mount', scope: 'write' }),
    });
    if (!created.ok) throw new Error(`creating a token failed: ${created.status} ${await created.text()}`);
    const { secret } = (await created.json()) as { secret: string };
    return { url, token: secret, close };
  } catch (err) {
    await close();
    throw new Error(`${(err as Error).message}\n${stderr}`);
  }
}

/** A plain HTTP upload (PUT, streamed from the file) and download (GET, streamed to a file). */
function directPut(site: Site, remote: string, file: string, size: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${site.url}/api/v1/data?path=${encodeURIComponent(remote)}&overwrite=true`);
    const req = http.request(url, {
      method: 'PUT',
      headers: {
        authorization: `Bearer ${site.token}`,
        'content-type': 'application/octet-stream',
        'content-length': String(size),
      },
    });
    req.on('response', (res) => {
      res.resume();
      res.on('end', () =>
        res.statusCode && res.statusCode < 300 ? resolve() : reject(new Error(`PUT ${res.statusCode}`)),
      );
    });
    req.on('error', reject);
    createReadStream(file).pipe(req);
  });
}

function directGet(site: Site, remote: string, file: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const url = new URL(`${site.url}/api/v1/data?path=${encodeURIComponent(remote)}`);
    http
      .get(url, { headers: { authorization: `Bearer ${site.token}` } }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET ${res.statusCode}`));
          return;
        }
        pipeline(res, createWriteStream(file)).then(resolve, reject);
      })
      .on('error', reject);
  });
}

async function apiJson(site: Site, method: string, url: string, body?: unknown): Promise<unknown> {
  const res = await fetch(`${site.url}${url}`, {
    method,
    headers: { authorization: `Bearer ${site.token}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok && res.status !== 409) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? undefined : res.json();
}

async function mounted(mountpoint: string): Promise<boolean> {
  const table = await fs.readFile('/proc/self/mounts', 'utf8');
  return table.split('\n').some((line) => line.split(' ')[1] === mountpoint);
}

interface Mount {
  mountpoint: string;
  stop(): Promise<void>;
}

async function startMount(site: Site, scratch: string, bufferMiB: number): Promise<Mount> {
  const mountpoint = path.join(scratch, 'mnt');
  await fs.mkdir(mountpoint, { recursive: true });
  const child = spawn(
    process.execPath,
    [
      MOUNT_MAIN,
      '--site',
      site.url,
      '--remote',
      '/',
      '--mountpoint',
      mountpoint,
      '--buffer-mib',
      String(bufferMiB),
    ],
    {
      env: { ...process.env, TRIBUTARY_TOKEN: site.token, TRIBUTARY_AGENT_HOME: path.join(scratch, 'agent') },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout?.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (output += d.toString()));
  // Debugging aid: BENCH_MOUNT_LOG=<file> keeps the mount's output (with TRIBUTARY_MOUNT_DEBUG=trace, every operation).
  if (process.env.BENCH_MOUNT_LOG) child.stderr?.pipe(createWriteStream(process.env.BENCH_MOUNT_LOG));
  const deadline = Date.now() + 30_000;
  while (!(output.includes('mounted ') && (await mounted(mountpoint)))) {
    if (child.exitCode !== null) throw new Error(`the mount exited with ${child.exitCode}: ${output}`);
    if (Date.now() > deadline) throw new Error(`the mount did not come up: ${output}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    mountpoint,
    async stop() {
      if (child.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      if (await mounted(mountpoint)) await sh(`fusermount -u -z ${q(mountpoint)}`).catch(() => undefined);
    },
  };
}

/** A file of `sizeMiB` MiB of random bytes (one random 16 MiB block repeated: nothing compresses it here). */
async function makeFile(file: string, sizeMiB: number): Promise<void> {
  const block = randomFillSync(Buffer.allocUnsafe(16 * MiB));
  const handle = await fs.open(file, 'w');
  try {
    for (let written = 0; written < sizeMiB * MiB;) {
      const n = Math.min(block.length, sizeMiB * MiB - written);
      block.writeUInt32LE(written / MiB, 0);
      await handle.write(block, 0, n);
      written += n;
    }
  } finally {
    await handle.close();
  }
}

async function makeSmallFiles(dir: string, count: number): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  for (let i = 0; i < count; i++)
    await fs.writeFile(path.join(dir, `f${String(i).padStart(5, '0')}.bin`), randomBytes(10_000));
}

/** The site's request counters (GET /metrics; needs an administrator's token), or undefined. */
async function requestCounts(site: Site): Promise<RequestCounts | undefined> {
  try {
    const res = await fetch(`${site.url}/metrics`, { headers: { authorization: `Bearer ${site.token}` } });
    if (!res.ok) return undefined;
    return parseRequestCounts(await res.text());
  } catch {
    return undefined;
  }
}

function describeProfile(profile: RequestProfile | null): string[] {
  if (!profile) return ['    (no request counts: the token cannot read /metrics)'];
  const rows = Object.entries(profile);
  if (rows.length === 0) return ['    no requests'];
  return rows.map(
    ([key, r]) => `    ${key}: ${r.requests} (${r.per_file} per file), ${r.mean_ms} ms each on average`,
  );
}

/**
 * lstat latency as a program sees it, measured in a child process (this process never touches the
 * mount): `rounds` times, list the directory, then lstat each `page-*` file in it, timing each call.
 * Between rounds it sleeps `pauseMs`, so the kernel's own caches of the mount's entries and
 * attributes (1 s) have expired and every lstat reaches the file system.
 */
const STAT_CHILD = `
const fs = require('node:fs');
const path = require('node:path');
const [dir, rounds, pauseMs] = process.argv.slice(1);
const sleeper = new Int32Array(new SharedArrayBuffer(4));
const samples = [];
for (let r = 0; r < Number(rounds); r++) {
  if (r > 0 && Number(pauseMs) > 0) Atomics.wait(sleeper, 0, 0, Number(pauseMs));
  const names = fs.readdirSync(dir).filter((n) => n.startsWith('page-'));
  for (const name of names) {
    const file = path.join(dir, name);
    const start = process.hrtime.bigint();
    fs.lstatSync(file);
    samples.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
}
process.stdout.write(JSON.stringify(samples));
`;

function statLatency(dir: string, rounds: number, pauseMs: number): Promise<Latency> {
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['-e', STAT_CHILD, dir, String(rounds), String(pauseMs)],
      { maxBuffer: 64 * MiB },
      (err, stdout, stderr) => {
        if (err) {
          reject(new Error(`lstat timing in ${dir}: ${stderr || err.message}`));
          return;
        }
        const ms = JSON.parse(String(stdout)) as number[];
        if (ms.length === 0) reject(new Error(`lstat timing in ${dir}: no files`));
        else resolve(latencySummary(ms));
      },
    );
  });
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000;

async function main(): Promise<void> {
  const o = options();
  const scratch = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-mount-'));
  const notes: string[] = [];
  let site: Site | undefined;
  let mount: Mount | undefined;
  try {
    if (process.env.TRIBUTARY_URL && process.env.TRIBUTARY_TOKEN) {
      site = {
        url: process.env.TRIBUTARY_URL.replace(/\/+$/, ''),
        token: process.env.TRIBUTARY_TOKEN,
        close: async () => {},
      };
      log(`existing site at ${site.url}`);
    } else {
      log('starting a site of its own (SITES=1, embedded PostgreSQL in a temp directory)...');
      site = await localSite(scratch);
    }
    const run = `/bench-mount-${randomBytes(3).toString('hex')}`;
    await apiJson(site, 'POST', '/api/v1/namespace/collections', { path: run, parents: true });
    const big = path.join(scratch, 'big.bin');
    const small = path.join(scratch, 'small');
    const mib = o.sizeMiB;
    if (o.parts.has('large')) {
      log(`making a ${mib} MiB file...`);
      await makeFile(big, mib);
    }
    if (o.parts.has('small')) {
      log(`making ${o.smallFiles} files of 10 KB...`);
      await makeSmallFiles(small, o.smallFiles);
    }
    let tree: Tree | undefined;
    const tarball = path.join(scratch, 'tree.tar');
    if (o.parts.has('extract')) {
      log(`making a tarball of ${o.extractFiles} files of 4 to 64 KB...`);
      tree = await makeTree(path.join(scratch, 'gen'), o.extractFiles);
      await sh(
        `tar -cf ${q(tarball)} --sort=name --mtime=@1700000000 --owner=0 --group=0 --numeric-owner ` +
          `-C ${q(path.join(scratch, 'gen'))} tree`,
      );
      log(
        `  ${tree.files} files, ${(tree.bytes / MiB).toFixed(1)} MiB, ${tree.dirs} directories; ` +
          `most files in one directory: ${tree.largestDirFiles} (${tree.largestDir})`,
      );
    }

    const trib = (...args: string[]): Promise<void> =>
      runTrib(
        { siteUrl: site!.url, token: site!.token, agentHome: path.join(scratch, 'agent-home'), cwd: scratch },
        args,
      );

    let directPutS: number | null = null;
    let directGetS: number | null = null;
    if (o.parts.has('large')) {
      log('direct HTTP (one PUT, one GET):');
      directPutS = await timed('PUT', () => directPut(site!, `${run}/direct.bin`, big, mib * MiB));
      directGetS = await timed('GET', () =>
        directGet(site!, `${run}/direct.bin`, path.join(scratch, 'direct-out.bin')),
      );
      await fs.rm(path.join(scratch, 'direct-out.bin'));
    }

    mount = await startMount(site, scratch, o.bufferMiB);
    const mnt = mount.mountpoint;
    let writeS: number | null = null;
    let readS: number | null = null;
    if (o.parts.has('large')) {
      log('through the mount (cp):');
      writeS = await timed('cp in', () => sh(`cp ${q(big)} ${q(mnt + run + '/mount.bin')}`));
      readS = await timed('cp out', () =>
        sh(`cp ${q(mnt + run + '/direct.bin')} ${q(path.join(scratch, 'mount-out.bin'))}`),
      );
      const [a, b] = (await sh(`cmp ${q(big)} ${q(path.join(scratch, 'mount-out.bin'))} && echo same`))
        .trim()
        .split('\n');
      if (a !== 'same' || b !== undefined) throw new Error('the file read through the mount differs');
      await fs.rm(path.join(scratch, 'mount-out.bin'));
    }
    let smallMountS: number | null = null;
    if (o.parts.has('small')) {
      smallMountS = await timed(`${o.smallFiles} small files in (cp -r)`, () =>
        sh(`cp -r ${q(small)} ${q(mnt + run + '/small-mount')}`),
      );
    }

    const extract = tree && (await extractFigures(site, mnt, run, scratch, tarball, tree, trib, notes));
    await mount.stop();
    mount = undefined;

    let cliPutS: number | null = null;
    let cliGetS: number | null = null;
    let smallCliS: number | null = null;
    let smallCliGetS: number | null = null;
    if (o.parts.has('large')) {
      log('trib (in-process, one put and one get of each):');
      cliPutS = await timed('trib put', () => trib('put', big, `${run}/cli.bin`));
      cliGetS = await timed('trib get', () =>
        trib('get', `${run}/cli.bin`, path.join(scratch, 'cli-out.bin')),
      );
      await fs.rm(path.join(scratch, 'cli-out.bin'));
    }
    if (o.parts.has('small')) {
      await trib('mkdir', `${run}/small-cli`);
      smallCliS = await timed(`${o.smallFiles} small files in (trib put -r)`, () =>
        trib('put', '-r', small, `${run}/small-cli`),
      );
      smallCliGetS = await timed(`${o.smallFiles} small files out (trib get -r)`, () =>
        trib('get', '-r', `${run}/small-cli`, path.join(scratch, 'small-back')),
      );
    }

    const rate = (seconds: number | null): number | null =>
      seconds === null ? null : Math.round((mib / seconds) * 10) / 10;
    const ratio = (baseline: number | null, measured: number | null): number | null =>
      baseline === null || measured === null ? null : round3(baseline / measured);
    const seconds = (s: number | null): number | null => (s === null ? null : round3(s));
    const result = {
      size_mib: o.parts.has('large') ? mib : null,
      small_files: o.parts.has('small') ? o.smallFiles : null,
      mount_read_mib_s: rate(readS),
      mount_write_mib_s: rate(writeS),
      cli_get_mib_s: rate(cliGetS),
      cli_put_mib_s: rate(cliPutS),
      direct_get_mib_s: rate(directGetS),
      direct_put_mib_s: rate(directPutS),
      mount_read_vs_direct: ratio(directGetS, readS),
      mount_write_vs_direct: ratio(directPutS, writeS),
      small_files_mount_seconds: seconds(smallMountS),
      small_files_cli_seconds: seconds(smallCliS),
      small_files_cli_get_seconds: seconds(smallCliGetS),
      ...(extract ?? emptyExtractFigures()),
      load_average: os.loadavg().map((l) => Math.round(l * 100) / 100),
      notes,
    };
    if (o.json) {
      process.stdout.write(JSON.stringify(result) + '\n');
    } else {
      const lines: string[] = [];
      if (o.parts.has('large'))
        lines.push(
          `mount vs direct HTTP, ${mib} MiB (goals: read >= 0.8, write >= 0.7 of direct)`,
          `  read:  mount ${result.mount_read_mib_s} MiB/s, direct GET ${result.direct_get_mib_s} MiB/s -> ${result.mount_read_vs_direct}`,
          `  write: mount ${result.mount_write_mib_s} MiB/s, direct PUT ${result.direct_put_mib_s} MiB/s -> ${result.mount_write_vs_direct}`,
          `  CLI:   get ${result.cli_get_mib_s} MiB/s, put ${result.cli_put_mib_s} MiB/s`,
        );
      if (o.parts.has('small'))
        lines.push(
          `${o.smallFiles} files of 10 KB: mount ${result.small_files_mount_seconds} s, CLI put ${result.small_files_cli_seconds} s, get ${result.small_files_cli_get_seconds} s (goal: CLI <= 2 s for 1000)`,
        );
      if (extract) lines.push(...describeExtract(extract));
      lines.push(`load average ${result.load_average.join(' ')}`, ...notes.map((n) => `note: ${n}`));
      process.stdout.write(lines.join('\n') + '\n');
    }
  } finally {
    await mount?.stop().catch(() => undefined);
    await site?.close().catch(() => undefined);
    await fs.rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

interface ExtractFigures {
  extract_files: number;
  extract_mib: number;
  extract_dirs: number;
  /** tar -xf onto the mount. */
  small_files_extract_mount_seconds: number;
  /** The detour: tar -xf to a local directory, then trib put -r of it. */
  small_files_extract_local_seconds: number;
  small_files_extract_put_seconds: number;
  small_files_extract_detour_seconds: number;
  /** Detour time / mount time (goal >= 1.0). */
  small_files_extract_vs_local: number;
  /** find over the extracted tree on the mount (its listings no longer cached), and the same locally. */
  small_files_find_seconds: number;
  /** tar -cf of the extracted tree from the mount to a local file, against trib get -r of the detour's copy. */
  small_files_read_seconds: number;
  small_files_cli_get_tree_seconds: number;
  /** trib get -r time / mount tar -cf time. */
  small_files_read_vs_cli: number;
  /** lstat of the files of a directory the mount has listed (goal: p95 <= 1 ms), and the same locally. */
  stat_dir: string;
  stat_samples: number;
  stat_p50_ms: number;
  stat_p95_ms: number;
  stat_max_ms: number;
  stat_local_p95_ms: number;
  /** Mount p95 / local p95. */
  stat_p95_times_local: number;
  /** What each phase cost the site (from its /metrics), per kind of request. */
  requests: Record<'extract_mount' | 'extract_detour' | 'find' | 'read', RequestProfile | null>;
}

function emptyExtractFigures(): Record<keyof ExtractFigures, null> {
  return {
    extract_files: null,
    extract_mib: null,
    extract_dirs: null,
    small_files_extract_mount_seconds: null,
    small_files_extract_local_seconds: null,
    small_files_extract_put_seconds: null,
    small_files_extract_detour_seconds: null,
    small_files_extract_vs_local: null,
    small_files_find_seconds: null,
    small_files_read_seconds: null,
    small_files_cli_get_tree_seconds: null,
    small_files_read_vs_cli: null,
    stat_dir: null,
    stat_samples: null,
    stat_p50_ms: null,
    stat_p95_ms: null,
    stat_max_ms: null,
    stat_local_p95_ms: null,
    stat_p95_times_local: null,
    requests: null,
  };
}

/**
 * The small-files figures: the tarball extracted onto the mount, then the detour (extracted to a
 * local directory, then `trib put -r` of it into a collection of the same site); find and tar -cf
 * of the mount's copy (checked against the generated tree), against `trib get -r` of the detour's;
 * lstat latency in the tree's fullest directory, on the mount and locally.
 */
async function extractFigures(
  site: Site,
  mnt: string,
  run: string,
  scratch: string,
  tarball: string,
  tree: Tree,
  trib: (...args: string[]) => Promise<void>,
  notes: string[],
): Promise<ExtractFigures> {
  const files = tree.files;
  const onMount = mnt + run + '/extract-mount';
  const local = path.join(scratch, 'extract-local');
  await apiJson(site, 'POST', '/api/v1/namespace/collections', { path: `${run}/extract-mount` });
  await apiJson(site, 'POST', '/api/v1/namespace/collections', { path: `${run}/extract-detour` });
  await fs.mkdir(local);

  log(`${files} small files from a tarball:`);
  let before = await requestCounts(site);
  const mountS = await timed('tar -xf onto the mount', () => sh(`tar -xf ${q(tarball)} -C ${q(onMount)}`));
  let after = await requestCounts(site);
  const extractMount = requestProfile(before, after, files);
  log(describeProfile(extractMount).join('\n'));
  if (!after)
    notes.push('no request counts: the token cannot read the site /metrics (an administrator token can)');

  before = after;
  const localS = await timed('detour: tar -xf to a local directory', () =>
    sh(`tar -xf ${q(tarball)} -C ${q(local)}`),
  );
  const putS = await timed('detour: trib put -r', () =>
    trib('put', '-r', path.join(local, 'tree'), `${run}/extract-detour`),
  );
  after = await requestCounts(site);
  const extractDetour = requestProfile(before, after, files);
  log(describeProfile(extractDetour).join('\n'));

  // Reading back: the mount's listings have expired by now (the detour took longer than its TTL).
  before = after;
  const findS = await timed('find on the mount', async () => {
    const found = (await sh(`find ${q(onMount + '/tree')} | wc -l`)).trim();
    if (Number(found) !== tree.files + tree.dirs)
      throw new Error(`find on the mount saw ${found} entries, not ${tree.files + tree.dirs}`);
  });
  after = await requestCounts(site);
  const find = requestProfile(before, after, files);
  log(describeProfile(find).join('\n'));

  before = after;
  const readback = path.join(scratch, 'readback.tar');
  const readS = await timed('tar -cf of the tree on the mount', () =>
    sh(`tar -cf ${q(readback)} -C ${q(onMount)} tree`),
  );
  after = await requestCounts(site);
  const read = requestProfile(before, after, files);
  log(describeProfile(read).join('\n'));
  await fs.mkdir(path.join(scratch, 'readback'));
  await sh(`tar -xf ${q(readback)} -C ${q(path.join(scratch, 'readback'))}`);
  const diff = await sh(
    `diff -r ${q(tree.root)} ${q(path.join(scratch, 'readback', 'tree'))} && echo same`,
  ).catch((err: Error) => err.message);
  if (diff.trim() !== 'same')
    throw new Error(`the tree read back through the mount differs: ${diff.slice(0, 2000)}`);
  await fs.rm(path.join(scratch, 'readback'), { recursive: true });
  await fs.rm(readback);

  const getS = await timed('trib get -r of the detour copy', () =>
    trib('get', '-r', `${run}/extract-detour`, path.join(scratch, 'detour-back')),
  );
  await fs.rm(path.join(scratch, 'detour-back'), { recursive: true });

  // lstat: enough rounds for about 1000 samples; a pause between rounds lets the kernel's 1 s
  // caches expire, so each lstat is answered by the mount (from the listing it has cached).
  const rounds = Math.max(5, Math.ceil(1000 / tree.largestDirFiles));
  const statDir = tree.largestDir;
  log(`lstat of the ${tree.largestDirFiles} files in ${statDir}, ${rounds} rounds:`);
  const mountStat = await statLatency(path.join(onMount, statDir), rounds, 1100);
  log(`  mount: p50 ${mountStat.p50_ms} ms, p95 ${mountStat.p95_ms} ms, max ${mountStat.max_ms} ms`);
  const localStat = await statLatency(path.join(local, statDir), rounds, 0);
  log(`  local: p50 ${localStat.p50_ms} ms, p95 ${localStat.p95_ms} ms, max ${localStat.max_ms} ms`);

  return {
    extract_files: files,
    extract_mib: Math.round((tree.bytes / MiB) * 10) / 10,
    extract_dirs: tree.dirs,
    small_files_extract_mount_seconds: round3(mountS),
    small_files_extract_local_seconds: round3(localS),
    small_files_extract_put_seconds: round3(putS),
    small_files_extract_detour_seconds: round3(localS + putS),
    small_files_extract_vs_local: round3((localS + putS) / mountS),
    small_files_find_seconds: round3(findS),
    small_files_read_seconds: round3(readS),
    small_files_cli_get_tree_seconds: round3(getS),
    small_files_read_vs_cli: round3(getS / readS),
    stat_dir: statDir,
    stat_samples: mountStat.samples,
    stat_p50_ms: mountStat.p50_ms,
    stat_p95_ms: mountStat.p95_ms,
    stat_max_ms: mountStat.max_ms,
    stat_local_p95_ms: localStat.p95_ms,
    stat_p95_times_local: round3(mountStat.p95_ms / localStat.p95_ms),
    requests: { extract_mount: extractMount, extract_detour: extractDetour, find, read },
  };
}

function describeExtract(x: ExtractFigures): string[] {
  return [
    `${x.extract_files} files of 4 to 64 KB (${x.extract_mib} MiB, ${x.extract_dirs} directories) from a tarball`,
    `  small_files_extract_vs_local: detour ${x.small_files_extract_detour_seconds} s (tar -xf locally ${x.small_files_extract_local_seconds} s + trib put -r ${x.small_files_extract_put_seconds} s), mount tar -xf ${x.small_files_extract_mount_seconds} s -> ${x.small_files_extract_vs_local} (goal >= 1.0)`,
    `  read back: find ${x.small_files_find_seconds} s, tar -cf ${x.small_files_read_seconds} s; trib get -r ${x.small_files_cli_get_tree_seconds} s -> ${x.small_files_read_vs_cli}`,
    `  stat_p95_ms: ${x.stat_p95_ms} ms (p50 ${x.stat_p50_ms}, max ${x.stat_max_ms}, ${x.stat_samples} lstat in ${x.stat_dir}); local p95 ${x.stat_local_p95_ms} ms -> ${x.stat_p95_times_local} times (goal <= 1 ms)`,
    '  site requests while extracting onto the mount:',
    ...describeProfile(x.requests.extract_mount),
    '  while find ran on the mount:',
    ...describeProfile(x.requests.find),
    '  while tar -cf read the mount:',
    ...describeProfile(x.requests.read),
  ];
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:mount failed: ${(err as Error).message}\n`);
  process.exit(1);
});
