import { fork, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import { freePort, migrate, type EmbeddedServer } from '@tributary/api/embedding';
import { pairKeys, siteSettings } from './federation-settings';

/**
 * Starts one site as a process from the API's declared site script (`@tributary/api/site`), with
 * `env` added to this process's environment; resolves when it reports SiteReady over IPC. Its
 * stdout is discarded and its stderr shared with this process; `execArgv` goes to its node.
 */
export async function startSiteProcess(
  id: string,
  env: Record<string, string>,
  execArgv: string[] = [],
): Promise<ChildProcess> {
  const child = fork(require.resolve('@tributary/api/site'), [], {
    env: { ...process.env, ...env },
    execArgv,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`site ${id} did not start within 120 s`)), 120_000);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`site ${id} exited before it was ready (${signal ?? `code ${code ?? '?'}`})`));
    });
    child.on('message', (m: unknown) => {
      if ((m as { type?: unknown } | null)?.type !== 'ready') return;
      clearTimeout(timer);
      resolve();
    });
  });
  child.removeAllListeners('exit');
  return child;
}

/** Stops a site process (resumed first if stopped with SIGSTOP): SIGTERM, then SIGKILL after 15 s. */
export async function stopSiteProcess(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGCONT');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(timer);
}

/** One site of a federation of site processes. */
export interface ProcessSite<Id extends string = string> {
  id: Id;
  url: string;
  /** A small pool on the site's catalog, for the benchmark's own checks. */
  pool: pg.Pool;
  child: ChildProcess;
}

export interface ProcessFederationOptions<Id extends string> {
  server: EmbeddedServer;
  /** The scratch directory: the sites' data under `<root>/data`. */
  root: string;
  /** The administrator's password at every site. */
  password: string;
  /** The sites, the first founding the federation and the others joining from it. */
  ids: readonly Id[];
  /** Names the catalogs: `<databasePrefix>_<id>`. */
  databasePrefix: string;
  /** The replication cycle; default 1 s. */
  cycleSeconds?: number;
  /** More settings for a site (placement pace, cache size, a storage resource ...). */
  env?: (id: Id) => Record<string, string>;
}

/**
 * A federation of site processes on one embedded PostgreSQL, a catalog each, replicating with every
 * other site: the first site starts and founds it, the others then join from it together. Each site's
 * node gets BENCH_SITE_NODE_ARGS (for example "--cpu-prof --cpu-prof-dir=/tmp/prof").
 */
export async function startProcessFederation<Id extends string>(
  o: ProcessFederationOptions<Id>,
): Promise<ProcessSite<Id>[]> {
  const ports = await Promise.all(o.ids.map(() => freePort()));
  const key = pairKeys();
  const sites: ProcessSite<Id>[] = [];
  const start = async (id: Id, index: number): Promise<void> => {
    const connection = await o.server.database(`${o.databasePrefix}_${id}`);
    await migrate(connection);
    const env: Record<string, string> = {
      DATABASE_URL: `postgresql://${encodeURIComponent(String(connection.user))}:${encodeURIComponent(String(connection.password))}@127.0.0.1:${connection.port}/${String(connection.database)}`,
      ...siteSettings({
        id,
        index,
        portOf: (p) => ports[o.ids.indexOf(p as Id)]!,
        peers: o.ids.filter((p) => p !== id),
        key,
        dataDir: path.join(o.root, 'data'),
        portalDir: path.join(o.root, 'no-portal'),
        password: o.password,
        cycleSeconds: o.cycleSeconds ?? 1,
        joinFrom: index > 0 ? o.ids[0]! : '',
      }),
      ...o.env?.(id),
    };
    const child = await startSiteProcess(
      id,
      env,
      process.env.BENCH_SITE_NODE_ARGS?.split(' ').filter(Boolean) ?? [],
    );
    const pool = new pg.Pool({ ...connection, max: 2 });
    pool.on('error', () => undefined);
    sites[index] = { id, url: `http://127.0.0.1:${ports[index]}`, pool, child };
  };
  try {
    await start(o.ids[0]!, 0);
    await Promise.all(o.ids.slice(1).map((id, i) => start(id, i + 1)));
  } catch (err) {
    await stopProcessFederation(sites.filter(Boolean));
    throw err;
  }
  return sites;
}

/** Closes the sites' pools and stops their processes. */
export async function stopProcessFederation(sites: readonly ProcessSite[]): Promise<void> {
  await Promise.all(sites.map((s) => s.pool.end().catch(() => undefined)));
  await Promise.all(sites.map((s) => stopSiteProcess(s.child)));
}
