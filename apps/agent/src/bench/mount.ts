/**
 * `npm run bench:mount`: throughput of the FUSE mount against a plain HTTP transfer in the same run,
 * and 1000 small files through the mount (and through the `trib` CLI when it is built).
 *
 * Without TRIBUTARY_URL it starts a site of its own as a child process (`node apps/api/dist/cli/start.js`
 * with SITES=1: embedded PostgreSQL in a temp directory, removed at the end); the mount runs in a child
 * process too (dist/mount/main.js), and every file operation on it is a child process (`cp`), never
 * this process.
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
import { runCli } from '../cli';

const KiB = 1024;
const MiB = 1024 * KiB;
const AGENT_DIST = path.resolve(__dirname, '..');
const MOUNT_MAIN = path.join(AGENT_DIST, 'mount', 'main.js');
const SITE_START = path.resolve(__dirname, '../../../api/dist/cli/start.js');

const USAGE = `npm run bench:mount -- [options]

Copies a large file into and out of a FUSE mount of the namespace with cp, against a plain HTTP
upload and download of the same size in the same run; then 1000 files of 10 KB through the mount
and through the trib CLI (when built). Without TRIBUTARY_URL it starts a site of its own.

  --json            print one JSON object, nothing else on stdout
  --quick           256 MiB and 200 small files (a smoke run)
  --size-mib N      large file size (default 1024)
  --small-files N   number of 10 KB files (default 1000)
  --buffer-mib N    the mount's advance buffer (default 32)

Environment: TRIBUTARY_URL and TRIBUTARY_TOKEN (a write-scope token) to measure an existing site.`;

interface Options {
  json: boolean;
  sizeMiB: number;
  smallFiles: number;
  bufferMiB: number;
}

function options(): Options {
  const { values } = parseArgs({
    options: {
      json: { type: 'boolean', default: false },
      quick: { type: 'boolean', default: false },
      'size-mib': { type: 'string' },
      'small-files': { type: 'string' },
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
  return {
    json: values.json ?? false,
    sizeMiB: int(values['size-mib'], values.quick ? 256 : 1024),
    smallFiles: int(values['small-files'], values.quick ? 200 : 1000),
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
    log(`making a ${o.sizeMiB} MiB file and ${o.smallFiles} files of 10 KB...`);
    await makeFile(big, o.sizeMiB);
    const small = path.join(scratch, 'small');
    await makeSmallFiles(small, o.smallFiles);
    const mib = o.sizeMiB;

    log('direct HTTP (one PUT, one GET):');
    const directPutS = await timed('PUT', () => directPut(site!, `${run}/direct.bin`, big, mib * MiB));
    const directGetS = await timed('GET', () =>
      directGet(site!, `${run}/direct.bin`, path.join(scratch, 'direct-out.bin')),
    );
    await fs.rm(path.join(scratch, 'direct-out.bin'));

    log('through the mount (cp):');
    mount = await startMount(site, scratch, o.bufferMiB);
    const mnt = mount.mountpoint;
    const writeS = await timed('cp in', () => sh(`cp ${q(big)} ${q(mnt + run + '/mount.bin')}`));
    const readS = await timed('cp out', () =>
      sh(`cp ${q(mnt + run + '/direct.bin')} ${q(path.join(scratch, 'mount-out.bin'))}`),
    );
    const [a, b] = (await sh(`cmp ${q(big)} ${q(path.join(scratch, 'mount-out.bin'))} && echo same`))
      .trim()
      .split('\n');
    if (a !== 'same' || b !== undefined) throw new Error('the file read through the mount differs');
    await fs.rm(path.join(scratch, 'mount-out.bin'));
    const smallMountS = await timed(`${o.smallFiles} small files in (cp -r)`, () =>
      sh(`cp -r ${q(small)} ${q(mnt + run + '/small-mount')}`),
    );
    await mount.stop();
    mount = undefined;

    log('trib (in-process, one put and one get of each):');
    const trib = async (...args: string[]): Promise<void> => {
      let errors = '';
      const code = await runCli(['--json', ...args], {
        stdout: { write: () => true },
        stderr: { write: (chunk: string) => ((errors += chunk), true) },
        env: {
          ...process.env,
          TRIBUTARY_AGENT_HOME: path.join(scratch, 'agent-home'),
          TRIBUTARY_SITE: site!.url,
          TRIBUTARY_TOKEN: site!.token,
        },
        cwd: scratch,
      });
      if (code !== 0) throw new Error(`trib ${args.join(' ')} exited with ${code}: ${errors.trim()}`);
    };
    const cliPutS = await timed('trib put', () => trib('put', big, `${run}/cli.bin`));
    const cliGetS = await timed('trib get', () =>
      trib('get', `${run}/cli.bin`, path.join(scratch, 'cli-out.bin')),
    );
    await fs.rm(path.join(scratch, 'cli-out.bin'));
    await trib('mkdir', `${run}/small-cli`);
    const smallCliS = await timed(`${o.smallFiles} small files in (trib put -r)`, () =>
      trib('put', '-r', small, `${run}/small-cli`),
    );
    const smallCliGetS = await timed(`${o.smallFiles} small files out (trib get -r)`, () =>
      trib('get', '-r', `${run}/small-cli`, path.join(scratch, 'small-back')),
    );

    const rate = (seconds: number | null): number | null =>
      seconds === null ? null : Math.round((mib / seconds) * 10) / 10;
    const result = {
      size_mib: mib,
      small_files: o.smallFiles,
      mount_read_mib_s: rate(readS),
      mount_write_mib_s: rate(writeS),
      cli_get_mib_s: rate(cliGetS),
      cli_put_mib_s: rate(cliPutS),
      direct_get_mib_s: rate(directGetS),
      direct_put_mib_s: rate(directPutS),
      mount_read_vs_direct: Math.round((directGetS / readS) * 1000) / 1000,
      mount_write_vs_direct: Math.round((directPutS / writeS) * 1000) / 1000,
      small_files_mount_seconds: Math.round(smallMountS * 1000) / 1000,
      small_files_cli_seconds: Math.round(smallCliS * 1000) / 1000,
      small_files_cli_get_seconds: Math.round(smallCliGetS * 1000) / 1000,
      load_average: os.loadavg().map((l) => Math.round(l * 100) / 100),
      notes,
    };
    if (o.json) {
      process.stdout.write(JSON.stringify(result) + '\n');
    } else {
      const lines = [
        `mount vs direct HTTP, ${mib} MiB (goals: read >= 0.8, write >= 0.7 of direct)`,
        `  read:  mount ${result.mount_read_mib_s} MiB/s, direct GET ${result.direct_get_mib_s} MiB/s -> ${result.mount_read_vs_direct}`,
        `  write: mount ${result.mount_write_mib_s} MiB/s, direct PUT ${result.direct_put_mib_s} MiB/s -> ${result.mount_write_vs_direct}`,
        `  CLI:   get ${result.cli_get_mib_s} MiB/s, put ${result.cli_put_mib_s} MiB/s`,
        `${o.smallFiles} files of 10 KB: mount ${result.small_files_mount_seconds} s, CLI put ${result.small_files_cli_seconds} s, get ${result.small_files_cli_get_seconds} s (goal: CLI <= 2 s for 1000)`,
        `load average ${result.load_average.join(' ')}`,
        ...notes.map((n) => `note: ${n}`),
      ];
      process.stdout.write(lines.join('\n') + '\n');
    }
  } finally {
    await mount?.stop().catch(() => undefined);
    await site?.close().catch(() => undefined);
    await fs.rm(scratch, { recursive: true, force: true }).catch(() => undefined);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench:mount failed: ${(err as Error).message}\n`);
  process.exit(1);
});
