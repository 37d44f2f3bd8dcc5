import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

/**
 * A real S3 server for tests and benchmarks: SeaweedFS (`weed server -s3`, Apache-2.0), built from
 * its Go module by scripts/setup-seaweedfs.sh, started here on loopback ports in a directory of its
 * own, as PostgreSQL is (docs/storage.md, "Tests"). Not a mock: the same server a site would use.
 */

/** The module version scripts/setup-seaweedfs.sh builds (keep the two in step). */
export const SEAWEEDFS_VERSION = 'v0.0.0-20261109003541-7506e5f91cd6';

/** The `weed` binary: SEAWEEDFS_BIN, else the build cache of scripts/setup-seaweedfs.sh. */
export function seaweedfsBinary(): string {
  const explicit = process.env.SEAWEEDFS_BIN;
  if (explicit) return explicit;
  const cache =
    process.env.SEAWEEDFS_CACHE ??
    path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'tributary', 'seaweedfs');
  const bin = path.join(cache, SEAWEEDFS_VERSION, 'weed');
  if (!existsSync(bin))
    throw new Error(`SeaweedFS is not built (${bin} is missing): run bash scripts/setup-seaweedfs.sh`);
  return bin;
}

export interface S3Server {
  /** `http://127.0.0.1:<port>` */
  readonly endpoint: string;
  readonly region: string;
  readonly accessKeyId: string;
  readonly secretAccessKey: string;
  /** The server's process id while it runs. */
  pid(): number | undefined;
  /** Stops the server (SIGTERM, then SIGKILL); its data stays for `start`. */
  stop(): Promise<void>;
  /** SIGKILL: the store vanishes mid-request. */
  kill(): Promise<void>;
  /** Starts it again on the same ports and data (after `stop` or `kill`). */
  start(): Promise<void>;
  /** The last lines the server printed (for failure messages). */
  output(): string;
  /** Stops it and removes its data. */
  close(): Promise<void>;
}

export interface S3ServerOptions {
  /** Where its data goes; a fresh temporary directory by default (removed by `close`). */
  dir?: string;
  /** Longest wait for the S3 port to answer. */
  startTimeoutMs?: number;
}

/** Starts SeaweedFS with its master, volume, filer and S3 gateway in one process. */
export async function startS3Server(options: S3ServerOptions = {}): Promise<S3Server> {
  const bin = seaweedfsBinary();
  const owned = options.dir === undefined;
  const dir = options.dir ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-s3-')));
  await fs.mkdir(path.join(dir, 'data'), { recursive: true });
  const accessKeyId = `trib${randomBytes(6).toString('hex')}`;
  const secretAccessKey = randomBytes(24).toString('base64url');
  const config = path.join(dir, 's3.json');
  await fs.writeFile(
    config,
    JSON.stringify({
      identities: [
        {
          name: 'tributary',
          credentials: [{ accessKey: accessKeyId, secretKey: secretAccessKey }],
          actions: ['Admin', 'Read', 'Write', 'List', 'Tagging'],
        },
      ],
    }),
    { mode: 0o600 },
  );
  // Each service has an HTTP port and a gRPC port; both are chosen free here.
  const ports = await freePorts(8);
  const [master, masterGrpc, volume, volumeGrpc, filer, filerGrpc, s3, s3Grpc] = ports as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  const args = [
    'server',
    `-dir=${path.join(dir, 'data')}`,
    '-ip=127.0.0.1',
    '-ip.bind=127.0.0.1',
    `-master.port=${master}`,
    `-master.port.grpc=${masterGrpc}`,
    `-volume.port=${volume}`,
    `-volume.port.grpc=${volumeGrpc}`,
    `-filer.port=${filer}`,
    `-filer.port.grpc=${filerGrpc}`,
    '-s3',
    `-s3.port=${s3}`,
    `-s3.port.grpc=${s3Grpc}`,
    '-s3.port.iceberg=0',
    '-s3.port.lance=0',
    `-s3.config=${config}`,
    '-metricsPort=0',
    // SeaweedFS grows 7 volumes per bucket and allows free disk / volume size of them: small
    // volumes leave room for the many buckets of a test run.
    '-master.volumeSizeLimitMB=256',
    '-volume.max=0',
  ];
  const endpoint = `http://127.0.0.1:${s3}`;
  let child: ChildProcess | undefined;
  let log = '';
  const timeout = options.startTimeoutMs ?? 60_000;

  const start = async (): Promise<void> => {
    if (child && child.exitCode === null && child.signalCode === null) return;
    const proc = spawn(bin, args, { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    child = proc;
    const keep = (b: Buffer): void => {
      log = (log + b.toString()).slice(-20_000);
    };
    proc.stdout.on('data', keep);
    proc.stderr.on('data', keep);
    const deadline = Date.now() + timeout;
    // Up when the S3 gateway answers anything (an anonymous request is refused with 403) and the
    // filer behind it has a volume to write to.
    while (!(await answers(endpoint))) {
      if (proc.exitCode !== null)
        throw new Error(`SeaweedFS exited (${proc.exitCode}):\n${log.slice(-4000)}`);
      if (Date.now() > deadline) {
        proc.kill('SIGKILL');
        throw new Error(`SeaweedFS's S3 port did not answer within ${timeout} ms:\n${log.slice(-4000)}`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  };

  const stopWith = async (signal: NodeJS.Signals): Promise<void> => {
    const proc = child;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(signal);
    const timer = setTimeout(() => proc.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
  };

  await start();
  return {
    endpoint,
    region: 'us-east-1',
    accessKeyId,
    secretAccessKey,
    pid: () => (child && child.exitCode === null && child.signalCode === null ? child.pid : undefined),
    stop: () => stopWith('SIGTERM'),
    kill: () => stopWith('SIGKILL'),
    start,
    output: () => log,
    async close() {
      await stopWith('SIGTERM');
      if (owned) await fs.rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * The settings that give a site an s3 resource named `name` on `server`, as its default unless
 * `asDefault` is false: STORAGE_RESOURCES, STORAGE_DEFAULT_RESOURCE and the key variables.
 */
export function s3ResourceEnv(
  server: Pick<S3Server, 'endpoint' | 'region' | 'accessKeyId' | 'secretAccessKey'>,
  options: {
    name?: string;
    bucket: string;
    prefix?: string;
    asDefault?: boolean;
    extra?: Record<string, unknown>;
  },
): Record<string, string> {
  const name = options.name ?? 's3';
  const stem = `STORAGE_${name.toUpperCase().replace(/-/g, '_')}`;
  return {
    STORAGE_RESOURCES: JSON.stringify([
      {
        name,
        kind: 's3',
        endpoint: server.endpoint,
        bucket: options.bucket,
        region: server.region,
        prefix: options.prefix ?? '',
        createBucket: true,
        ...options.extra,
      },
    ]),
    ...(options.asDefault === false ? {} : { STORAGE_DEFAULT_RESOURCE: name }),
    [`${stem}_ACCESS_KEY_ID`]: server.accessKeyId,
    [`${stem}_SECRET_ACCESS_KEY`]: server.secretAccessKey,
  };
}

/** A bucket name of its own for one test site (lower case, 3-63 characters). */
export function testBucket(stem = 'site'): string {
  return `${stem
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
    .slice(0, 40)}-${randomBytes(6).toString('hex')}`;
}

async function answers(endpoint: string): Promise<boolean> {
  try {
    const res = await fetch(endpoint + '/', { signal: AbortSignal.timeout(1000) });
    await res.arrayBuffer();
    return res.status < 500;
  } catch {
    return false;
  }
}

/** `n` distinct free loopback ports. */
async function freePorts(n: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    for (let i = 0; i < n; i++) {
      const server = net.createServer();
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, '127.0.0.1', () => resolve());
      });
      servers.push(server);
    }
    return servers.map((s) => (s.address() as net.AddressInfo).port);
  } finally {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))));
  }
}

/**
 * The settings that put a test site's bytes on the run's S3 server (TRIBUTARY_TEST_STORAGE=s3) as
 * its default resource: one bucket for the run, a prefix of its own per site (as sites sharing an
 * institution's bucket would); none when the run keeps bytes on local disk.
 */
export function testStorageEnv(
  s3: Pick<S3Server, 'endpoint' | 'region' | 'accessKeyId' | 'secretAccessKey'> | undefined,
  site: string,
): Record<string, string> {
  if (!s3) return {};
  return s3ResourceEnv(s3, { bucket: 'tributary-tests', prefix: `${testBucket(site)}/` });
}
