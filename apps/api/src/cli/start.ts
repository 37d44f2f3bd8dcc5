import 'reflect-metadata';
import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ConfigError, loadConfig, SITE_SEMI_SPACE_MB } from '../config/config';
import { startEmbeddedPostgres, type EmbeddedServer } from '../database/embedded-postgres';
import { fail, runSite, siteBanner, type SiteReady } from './site';

/** The demo federation's sites, in start order; the first founds it and the others join. */
const DEFAULT_SITES = ['lsu', 'tulane', 'uno'];

interface FederationFile {
  /** One shared secret per pair of sites, keyed "a:b" with a < b. */
  keys: Record<string, string>;
}

/**
 * `npm start`: a federation of several sites on this machine (three by default: lsu, tulane, uno),
 * each an API process with its own catalog database on one embedded PostgreSQL (or on the server
 * of DATABASE_URL) and its own storage, peers of each other with generated per-pair keys. `SITES=1`
 * (or a DATABASE_URL without SITES) starts one site in this process, as before.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const ids = siteList(process.env.SITES, Boolean(config.databaseUrl));
  if (ids.length === 1 && (!process.env.SITES || ids[0] === config.siteId)) {
    const site = await runSite(config);
    console.log(siteBanner([site.ready]));
    const shutdown = async (): Promise<void> => {
      await site.stop();
      process.exit(0);
    };
    process.once('SIGINT', () => void shutdown());
    process.once('SIGTERM', () => void shutdown());
    return;
  }

  let embedded: EmbeddedServer | undefined;
  let urlFor: (site: string) => Promise<string>;
  if (config.databaseUrl) {
    const base = new URL(config.databaseUrl);
    urlFor = (site) => {
      const u = new URL(base);
      u.pathname = `/tributary_${site.replace(/-/g, '_')}`;
      return Promise.resolve(u.toString());
    };
  } else {
    const pgServer = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'), {
      onNotice: (m) => console.log(m),
    });
    embedded = pgServer;
    urlFor = async (site) => {
      const c = await pgServer.database(`tributary_${site.replace(/-/g, '_')}`);
      return `postgresql://${String(c.user)}:${String(c.password)}@${String(c.host)}:${String(c.port)}/${String(c.database)}`;
    };
  }
  const keys = federationKeys(config.dataDir, ids);
  const children: ChildProcess[] = [];
  let stopping = false;
  const stopAll = async (code: number): Promise<void> => {
    if (stopping) return;
    stopping = true;
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
          }),
      ),
    );
    await embedded?.stop();
    process.exit(code);
  };
  process.once('SIGINT', () => void stopAll(0));
  process.once('SIGTERM', () => void stopAll(0));

  const startSite = async (id: string, index: number): Promise<SiteReady> => {
    const port = config.port + index;
    const peers = ids
      .filter((p) => p !== id)
      .map((p) => ({
        id: p,
        url: `http://${config.host}:${config.port + ids.indexOf(p)}`,
        key: pairKey(keys, id, p),
      }));
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: await urlFor(id),
      SITE_ID: id,
      SITE_NAME: id.toUpperCase(),
      SITE_INDEX: String(index + 1),
      PORT: String(port),
      PUBLIC_URL: `http://${config.host}:${port}`,
      REPLICATION_PEERS: JSON.stringify(peers),
      JOIN_FROM: index === 0 ? '' : ids[0],
    };
    const child = fork(path.join(__dirname, 'site.js'), [], {
      env,
      execArgv: [...process.execArgv, `--max-semi-space-size=${SITE_SEMI_SPACE_MB}`],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    children.push(child);
    return new Promise<SiteReady>((resolve, reject) => {
      child.once('message', (m: SiteReady) => resolve(m));
      child.once('exit', (code) => {
        if (!stopping) {
          const error = new Error(`site ${id} exited (code ${code ?? 'signal'})`);
          reject(error);
          console.error(`${error.message}; stopping the other sites`);
          void stopAll(1);
        }
      });
    });
  };

  const founder = await startSite(ids[0] as string, 0);
  const others = await Promise.all(ids.slice(1).map((id, i) => startSite(id, i + 1)));
  console.log(siteBanner([founder, ...others]));
  console.log(
    `  ${ids.length} sites replicate every ${config.replication.cycleMs / 1000} s. Stop with Ctrl+C.\n`,
  );
}

function siteList(value: string | undefined, external: boolean): string[] {
  if (!value) return external ? [loadConfig().siteId] : DEFAULT_SITES;
  if (/^\d+$/.test(value)) {
    const n = Number(value);
    if (n < 1 || n > 9)
      throw new ConfigError('invalid settings:\n  SITES: a number from 1 to 9, or a list of site ids');
    const names = [...DEFAULT_SITES, 'lsuhsc', 'southern', 'ull', 'latech', 'tigers', 'uno2'];
    return n === 1 ? [loadConfig().siteId] : names.slice(0, n);
  }
  const ids = value
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (
    ids.length === 0 ||
    new Set(ids).size !== ids.length ||
    ids.some((s) => !/^[a-z][a-z0-9-]{1,31}$/.test(s))
  ) {
    throw new ConfigError(
      'invalid settings:\n  SITES: distinct site ids (2-32 lower-case letters, digits or "-"), comma-separated',
    );
  }
  return ids;
}

/** Per-pair keys, generated once and kept (owner-only) in the data directory. */
function federationKeys(dataDir: string, ids: string[]): FederationFile {
  const file = path.join(dataDir, 'federation.json');
  const current: FederationFile = existsSync(file)
    ? (JSON.parse(readFileSync(file, 'utf8')) as FederationFile)
    : { keys: {} };
  let changed = false;
  for (const a of ids)
    for (const b of ids)
      if (a < b && !current.keys[`${a}:${b}`]) {
        current.keys[`${a}:${b}`] = randomBytes(32).toString('base64url');
        changed = true;
      }
  if (changed) {
    mkdirSync(dataDir, { recursive: true });
    writeFileSync(file, JSON.stringify(current, null, 2) + '\n', { mode: 0o600 });
  }
  return current;
}

function pairKey(file: FederationFile, a: string, b: string): string {
  const key = file.keys[a < b ? `${a}:${b}` : `${b}:${a}`];
  if (!key) throw new Error(`no key for ${a} and ${b}`);
  return key;
}

main().catch(fail);
