import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startFederation, type Federation, type FederationOptions } from '@tributary/testkit';
import { afterAll, beforeAll, expect } from 'vitest';
import { readMountStates, type MountState } from '../mount/index';

/**
 * What the mount's integration tests share: real FUSE mounts of a real two-site federation (site
 * processes from apps/api, real PostgreSQL, real HTTP). The mount runs in a child process
 * (dist/mount/main.js: build the agent first), and the test process touches the mount only through
 * other child processes (cp, ls, sha256sum...), never with a synchronous call.
 */

export { startFederation, type Federation, type FederationSite } from '@tributary/testkit';

export const MAIN = path.resolve(__dirname, '../../dist/mount/main.js');
export const TRIB = path.resolve(__dirname, '../../dist/cli/main.js');
export const MiB = 1024 * 1024;
export const GiB = 1024 * MiB;

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a shell command in a child process (never in this one: the mount must not be touched synchronously). */
export function sh(command: string, timeoutMs = 120_000): Promise<Run> {
  return new Promise((resolve) => {
    execFile('sh', ['-c', command], { timeout: timeoutMs, maxBuffer: 16 * MiB }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

/** The mount under test: its output (errors it answered) goes into failure messages. */
let current: MountProcess | undefined;

/** The mount whose output goes into the failure messages of `ok`. */
export function setCurrentMount(m: MountProcess | undefined): void {
  current = m;
}

export async function ok(command: string, timeoutMs?: number): Promise<string> {
  if (process.env.MOUNT_ITEST_TRACE) console.log(new Date().toISOString(), command);
  const run = await sh(command, timeoutMs);
  const log = current?.output().slice(-3000) ?? '';
  expect(run, `${command}\n${run.stderr}\nmount output:\n${log}`).toMatchObject({ code: 0 });
  return run.stdout;
}

export const q = (p: string): string => `'${p.replace(/'/g, `'\\''`)}'`;

export async function until<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

export async function mounted(mountpoint: string): Promise<boolean> {
  const table = await fs.readFile('/proc/self/mounts', 'utf8');
  return table.split('\n').some((line) => line.split(' ')[1] === mountpoint);
}

export interface MountProcess {
  child: ChildProcess;
  mountpoint: string;
  home: string;
  output(): string;
  exited: Promise<number | null>;
  state(): Promise<MountState | undefined>;
}

export interface MountOptions {
  /** --cache-ttl-ms (default 3000, the mount's own default). */
  cacheTtlMs?: number;
  /** --remote (default `/`). */
  remote?: string;
  /** The agent home (TRIBUTARY_AGENT_HOME); default: a new one under a temporary folder. */
  home?: string;
  /** The local directory, created if missing; default: a new one under a temporary folder. */
  mountpoint?: string;
  /** More flags for dist/mount/main.js (its timeouts, say). */
  args?: string[];
}

/** Starts the mount in a child process and waits until it is mounted. */
export async function startMount(
  site: string,
  token: string,
  options: MountOptions = {},
): Promise<MountProcess> {
  let root: string | undefined;
  const temporary = async (name: string) =>
    path.join((root ??= await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-mount-itest-'))), name);
  const home = options.home ?? (await temporary('home'));
  const mountpoint = options.mountpoint ?? (await temporary('mnt'));
  await fs.mkdir(mountpoint, { recursive: true });
  const child = spawn(
    process.execPath,
    [
      MAIN,
      '--site',
      site,
      '--remote',
      options.remote ?? '/',
      '--mountpoint',
      mountpoint,
      '--cache-ttl-ms',
      String(options.cacheTtlMs ?? 3000),
      ...(options.args ?? []),
    ],
    {
      env: {
        ...process.env,
        TRIBUTARY_TOKEN: token,
        TRIBUTARY_AGENT_HOME: home,
        TRIBUTARY_MOUNT_DEBUG: process.env.MOUNT_ITEST_DEBUG ?? '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let log = '';
  child.stdout?.on('data', (d: Buffer) => (log += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (log += d.toString()));
  // Debugging aid: MOUNT_ITEST_LOG=<file> keeps the whole output (MOUNT_ITEST_DEBUG=trace: every operation).
  if (process.env.MOUNT_ITEST_LOG)
    child.stderr?.on('data', (d: Buffer) => void fs.appendFile(process.env.MOUNT_ITEST_LOG!, d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const handle: MountProcess = {
    child,
    mountpoint,
    home,
    output: () => log,
    exited,
    // This process's own state file: a home may also hold one left by an earlier mount that crashed.
    state: async () => (await readMountStates(home)).find((s) => s.pid === child.pid),
  };
  await until(
    `the mount (${log})`,
    async () => {
      if (child.exitCode !== null) throw new Error(`the mount exited ${child.exitCode}: ${log}`);
      return log.includes('mounted ') && (await mounted(mountpoint)) ? true : undefined;
    },
    30_000,
  );
  return handle;
}

export async function stopMount(m: MountProcess | undefined): Promise<void> {
  if (!m) return;
  if (m.child.exitCode === null) {
    m.child.kill('SIGTERM');
    const timer = setTimeout(() => m.child.kill('SIGKILL'), 15_000);
    await m.exited;
    clearTimeout(timer);
  }
  // Last resort, so no stale mount is left behind.
  if (await mounted(m.mountpoint)) await sh(`fusermount -u -z ${q(m.mountpoint)}`);
}

/** What `useMountedFederation` hands a suite. */
export interface MountedFederation {
  fed: Federation;
  /** The mount of the federation's first site, as the administrator. */
  mount: MountProcess;
  /** A local folder for the suite's own files. */
  scratch: string;
}

/**
 * A federation and a mount of its first site for the tests of a `describe`: started before them
 * (handed to `started`; the mount's output goes into the failure messages of `ok`), the mount
 * stopped, the federation closed and the scratch folder removed (unless `keepScratch`) after them.
 */
export function useMountedFederation(
  options: {
    federation: FederationOptions;
    mount?: MountOptions;
    /** The scratch folder's name in the temporary folder, before its random suffix. */
    scratchPrefix: string;
    keepScratch?: boolean;
  },
  started: (suite: MountedFederation) => void,
): void {
  let fed: Federation | undefined;
  let mount: MountProcess | undefined;
  let scratch: string | undefined;

  beforeAll(async () => {
    fed = await startFederation(options.federation);
    mount = await startMount(fed.site(options.federation.ids[0]!).url, fed.adminToken, options.mount);
    setCurrentMount(mount);
    scratch = await fs.mkdtemp(path.join(os.tmpdir(), options.scratchPrefix));
    started({ fed, mount, scratch });
  }, 180_000);

  afterAll(async () => {
    await stopMount(mount);
    await fed?.close();
    if (scratch && !options.keepScratch) await fs.rm(scratch, { recursive: true, force: true });
  }, 60_000);
}
