import { fork, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import {
  createTributaryClient,
  type CatalogDigestDto,
  type ReplicationStatusDto,
  type SiteReady,
  type TributaryClient,
} from '@tributary/shared';
import pg from 'pg';
import { inject } from 'vitest';
import { ADMIN_PASSWORD, ADMIN_USERNAME, signIn, TestClient } from './http-client';
import { adminConnection, cloneTemplate, dropDatabase, withClient } from './postgres';
import { testStorageEnv } from './s3-server';
/** Output kept per site process (the tail), for failure messages. */
const OUTPUT_LIMIT = 400_000;

export interface FederationOptions {
  /** Site ids, founder first. */
  ids: string[];
  /** How many of them (founder first) start now; the rest wait for `site.start()`, joining from the founder. */
  startNow?: number;
  /** Extra settings for every site. */
  env?: Record<string, string>;
  /** Replication cycle in seconds (1 by default). */
  cycleSeconds?: number;
  /**
   * The URL site `from` reaches peer `to` at, given the peer's own URL (default: that URL). The WAN
   * harness puts a link in between: `(from, to, url) => wan.link(`${from}-${to}`, url).then((l) => l.url)`.
   */
  peerUrl?: (from: string, to: string, url: string) => string | Promise<string>;
}

export interface FederationSite {
  readonly id: string;
  /** SITE_INDEX: the site's position in `ids`, from 1. */
  readonly index: number;
  readonly url: string;
  readonly database: string;
  /** The environment the site process runs with (kept for restarts). */
  readonly env: Record<string, string>;
  /** The current process id (undefined before the first start and after an exit). */
  readonly pid: number | undefined;
  /** True while a process is running (stopped with SIGSTOP counts as running, see `paused`). */
  readonly running: boolean;
  /** True between SIGSTOP and SIGCONT. */
  readonly paused: boolean;
  /** What the last start reported. */
  readonly ready: SiteReady | undefined;
  /** Typed API client with the federation's admin token (valid at every site: tokens replicate). */
  readonly client: TributaryClient;
  /** Raw HTTP client with the same admin token, for routes the typed client does not cover. */
  readonly http: TestClient;
  /** Everything the site's processes wrote to stdout and stderr (the tail, across restarts). */
  output(): string;
  /** Starts a site that has not started yet (it joins from the founder) or has exited. */
  start(): Promise<SiteReady>;
  /** Sends a signal; SIGKILL/SIGTERM/SIGINT resolve once the process has exited. */
  kill(signal: NodeJS.Signals): Promise<void>;
  /**
   * Starts the site again on the same database, data directory, port and settings. A joiner keeps
   * JOIN_FROM: joinIfNew does nothing once the catalog has a local site, so it does not join again.
   */
  restart(): Promise<SiteReady>;
  /** Stops the site gracefully (SIGTERM; SIGKILL after 15 s). */
  stop(): Promise<void>;
  status(): Promise<ReplicationStatusDto>;
  digest(): Promise<CatalogDigestDto>;
  /** Runs SQL on the site's catalog database. */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<R>>;
}

export interface Federation {
  readonly sites: FederationSite[];
  readonly dataDir: string;
  readonly adminToken: string;
  site(id: string): FederationSite;
  /** The key sites `a` and `b` share. */
  keyFor(a: string, b: string): string;
  /**
   * Polls every running site (or `sites`) until their digests are equal and no site has a backlog
   * for, or unapplied changes from, another of them, nor uncaptured local changes. Returns the digest.
   */
  waitForConvergence(timeoutMs: number, sites?: FederationSite[]): Promise<CatalogDigestDto>;
  /** The tail of every site's output, for failure messages. */
  outputs(maxCharsPerSite?: number): string;
  close(): Promise<void>;
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Ports free right now on the loopback interface (held open together so they differ). */
async function freePorts(n: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<net.Server>((resolve, reject) => {
          const server = net.createServer();
          server.once('error', reject);
          server.listen(0, '127.0.0.1', () => resolve(server));
        }),
    ),
  );
  const ports = servers.map((s) => (s.address() as net.AddressInfo).port);
  await Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  return ports;
}

function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

function waitForExit(child: ChildProcess): Promise<void> {
  if (exited(child)) return Promise.resolve();
  return new Promise((resolve) => child.once('exit', () => resolve()));
}

/**
 * Starts a federation of real site processes (the built site entry the integration run's global setup
 * names, `apps/api/dist/cli/site.js`), each on a free
 * port with a fresh catalog database cloned from the integration template, sharing one data
 * directory (each site stores under <dir>/sites/<id>/storage), with a random key per pair of
 * sites and a 1 s cycle. The founder starts first; the others join from it (JOIN_FROM). Every site
 * lists every other as a peer from the beginning, so a site started later is already expected.
 */
export async function startFederation(options: FederationOptions): Promise<Federation> {
  const { ids } = options;
  const startNow = options.startNow ?? ids.length;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tributary-federation-'));
  const ports = await freePorts(ids.length);
  const keys = new Map<string, string>();
  const pairName = (a: string, b: string): string => (a < b ? `${a}:${b}` : `${b}:${a}`);
  for (const a of ids)
    for (const b of ids) if (a < b) keys.set(pairName(a, b), randomBytes(32).toString('base64url'));
  const keyFor = (a: string, b: string): string => {
    const key = keys.get(pairName(a, b));
    if (!key) throw new Error(`no key for ${a} and ${b}`);
    return key;
  };
  const urls = ports.map((p) => `http://127.0.0.1:${p}`);
  const pgInfo = inject('postgres');
  const founderId = ids[0] as string;
  let adminToken = '';
  const databases: string[] = [];
  const sites: SiteHandle[] = [];

  class SiteHandle implements FederationSite {
    child: ChildProcess | undefined;
    paused = false;
    ready: SiteReady | undefined;
    private log = '';
    private clientCache: TributaryClient | undefined;

    constructor(
      readonly id: string,
      readonly index: number,
      readonly url: string,
      readonly database: string,
      readonly env: Record<string, string>,
    ) {}

    get pid(): number | undefined {
      return this.child && !exited(this.child) ? this.child.pid : undefined;
    }

    get running(): boolean {
      return this.child !== undefined && !exited(this.child);
    }

    get client(): TributaryClient {
      this.clientCache ??= createTributaryClient({ baseUrl: this.url, token: adminToken });
      return this.clientCache;
    }

    get http(): TestClient {
      return new TestClient(this.url, { kind: 'token', secret: adminToken });
    }

    output(): string {
      return this.log;
    }

    private append(chunk: Buffer): void {
      this.log += chunk.toString('utf8');
      if (this.log.length > OUTPUT_LIMIT) this.log = this.log.slice(-OUTPUT_LIMIT);
    }

    start(): Promise<SiteReady> {
      if (this.running) return Promise.reject(new Error(`site ${this.id} is already running`));
      this.log += `\n===== starting ${this.id} (${new Date().toISOString()}) =====\n`;
      const child = fork(inject('siteEntry'), [], {
        env: { ...process.env, ...this.env },
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      });
      this.child = child;
      this.paused = false;
      child.stdout?.on('data', (c: Buffer) => this.append(c));
      child.stderr?.on('data', (c: Buffer) => this.append(c));
      child.on('exit', (code, signal) => {
        this.log += `\n===== ${this.id} exited (${signal ?? `code ${code ?? '?'}`}) =====\n`;
      });
      return new Promise<SiteReady>((resolve, reject) => {
        const timer = setTimeout(() => {
          child.kill('SIGKILL');
          reject(new Error(`site ${this.id} did not start within 90 s:\n${this.log.slice(-5000)}`));
        }, 90_000);
        const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
          clearTimeout(timer);
          reject(
            new Error(
              `site ${this.id} exited before it was ready (${signal ?? `code ${code ?? '?'}`}):\n${this.log.slice(-5000)}`,
            ),
          );
        };
        child.once('exit', onExit);
        child.on('message', (m: unknown) => {
          if ((m as { type?: unknown } | null)?.type !== 'ready') return;
          clearTimeout(timer);
          child.off('exit', onExit);
          this.ready = m as SiteReady;
          resolve(this.ready);
        });
      });
    }

    async kill(signal: NodeJS.Signals): Promise<void> {
      const child = this.child;
      if (!child || exited(child)) throw new Error(`site ${this.id} is not running`);
      if (signal === 'SIGSTOP') this.paused = true;
      if (signal === 'SIGCONT') this.paused = false;
      child.kill(signal);
      if (signal === 'SIGKILL' || signal === 'SIGTERM' || signal === 'SIGINT') {
        if (this.paused && signal !== 'SIGKILL') child.kill('SIGCONT');
        await waitForExit(child);
        this.paused = false;
      }
    }

    async restart(): Promise<SiteReady> {
      if (this.running) await this.stop();
      return this.start();
    }

    async stop(): Promise<void> {
      const child = this.child;
      if (!child || exited(child)) return;
      if (this.paused) child.kill('SIGCONT');
      this.paused = false;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await waitForExit(child);
      clearTimeout(timer);
    }

    async status(): Promise<ReplicationStatusDto> {
      const res = await this.http.get<ReplicationStatusDto>('/api/v1/replication/status');
      if (res.status !== 200) throw new Error(`${this.id} status: ${res.status} ${res.text.slice(0, 300)}`);
      return res.body;
    }

    async digest(): Promise<CatalogDigestDto> {
      const res = await this.http.get<CatalogDigestDto>('/api/v1/replication/digest');
      if (res.status !== 200) throw new Error(`${this.id} digest: ${res.status} ${res.text.slice(0, 300)}`);
      return res.body;
    }

    query<R extends pg.QueryResultRow = pg.QueryResultRow>(
      sql: string,
      params?: unknown[],
    ): Promise<pg.QueryResult<R>> {
      return withClient(adminConnection(this.database), (client) => client.query<R>(sql, params));
    }
  }

  for (const [i, id] of ids.entries()) {
    const database = `fed_${id.replace(/-/g, '_')}_${randomBytes(6).toString('hex')}`;
    const peers = [];
    for (const p of ids.filter((x) => x !== id)) {
      const direct = urls[ids.indexOf(p)] as string;
      peers.push({
        id: p,
        url: options.peerUrl ? await options.peerUrl(id, p, direct) : direct,
        key: keyFor(id, p),
      });
    }
    const env: Record<string, string> = {
      DATABASE_URL: `postgresql://${encodeURIComponent(pgInfo.user)}:${encodeURIComponent(pgInfo.password)}@${pgInfo.host}:${pgInfo.port}/${database}`,
      HOST: '127.0.0.1',
      PORT: String(ports[i]),
      PUBLIC_URL: urls[i] as string,
      SITE_ID: id,
      SITE_NAME: id.toUpperCase(),
      SITE_INDEX: String(i + 1),
      TRIBUTARY_DATA_DIR: dataDir,
      REPLICATION_PEERS: JSON.stringify(peers),
      REPLICATION_CYCLE_SECONDS: String(options.cycleSeconds ?? 1),
      LOG_LEVEL: 'log',
      LOG_FORMAT: 'text',
      LOGIN_RATE_LIMIT: '1000',
      NO_COLOR: '1',
      // TRIBUTARY_TEST_STORAGE=s3: the site's bytes in a bucket of its own on the run's S3 server.
      ...testStorageEnv(inject('s3'), `fed-${id}`),
      ...options.env,
    };
    if (i === 0) env.ADMIN_PASSWORD = ADMIN_PASSWORD;
    else env.JOIN_FROM = founderId;
    sites.push(new SiteHandle(id, i + 1, urls[i] as string, database, env));
  }

  const outputs = (maxChars = 8000): string =>
    sites.map((s) => `----- ${s.id} output (tail) -----\n${s.output().slice(-maxChars)}`).join('\n');

  const close = async (): Promise<void> => {
    await Promise.all(
      sites.map(async (s) => {
        if (s.child && !exited(s.child)) {
          s.child.kill('SIGKILL');
          await waitForExit(s.child);
        }
      }),
    );
    for (const name of databases) await dropDatabase(name).catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
  };

  try {
    for (const s of sites) {
      await cloneTemplate(s.database);
      databases.push(s.database);
    }
    const founder = sites[0] as SiteHandle;
    await founder.start();
    adminToken = await createAdminToken(founder.url);
    // Joiners one at a time: each copies the founder's catalog, then registers itself.
    for (const s of sites.slice(1, startNow)) await s.start();
  } catch (err) {
    await close();
    throw err;
  }

  const waitForConvergence = async (
    timeoutMs: number,
    only?: FederationSite[],
  ): Promise<CatalogDigestDto> => {
    const group = (only ?? sites).filter((s) => s.running && !s.paused);
    const ids = new Set(group.map((s) => s.id));
    const deadline = Date.now() + timeoutMs;
    let last = '';
    for (;;) {
      try {
        const states = await Promise.all(
          group.map(async (s) => ({ site: s.id, status: await s.status(), digest: await s.digest() })),
        );
        const digests = new Set(states.map((x) => x.digest.digest));
        const busy = states.flatMap((x) => {
          const issues: string[] = [];
          if (x.status.pendingCapture > 0) issues.push(`${x.site}: ${x.status.pendingCapture} uncaptured`);
          for (const p of x.status.peers) {
            if (!ids.has(p.peer)) continue;
            if (p.backlog.txs > 0 || p.incoming.txs > 0)
              issues.push(`${x.site}->${p.peer}: backlog ${p.backlog.txs}, incoming ${p.incoming.txs}`);
          }
          return issues;
        });
        if (digests.size === 1 && busy.length === 0) return (states[0] as (typeof states)[number]).digest;
        last = describeDifference(
          states.map((x) => ({ site: x.site, digest: x.digest })),
          busy,
        );
      } catch (err) {
        last = `polling failed: ${err instanceof Error ? err.message : String(err)}`;
      }
      if (Date.now() > deadline) {
        throw new Error(
          `sites ${[...ids].join(', ')} did not converge within ${timeoutMs} ms: ${last}\n${outputs(4000)}`,
        );
      }
      await sleep(250);
    }
  };

  return {
    sites,
    dataDir,
    get adminToken() {
      return adminToken;
    },
    site(id: string): FederationSite {
      const s = sites.find((x) => x.id === id);
      if (!s) throw new Error(`no site ${id}`);
      return s;
    },
    keyFor,
    waitForConvergence,
    outputs,
    close,
  };
}

/** Signs in as the founder's administrator and creates an admin-scope token (it replicates). */
async function createAdminToken(url: string): Promise<string> {
  const session = await signIn(url, ADMIN_USERNAME, ADMIN_PASSWORD);
  const created = await session.post<{ secret: string }>('/api/v1/tokens', {
    name: 'federation test admin',
    scope: 'admin',
  });
  if (created.status !== 201) throw new Error(`creating a token failed: ${created.status} ${created.text}`);
  return created.body.secret;
}

function describeDifference(states: { site: string; digest: CatalogDigestDto }[], busy: string[]): string {
  const lines = [`digests: ${states.map((s) => `${s.site}=${s.digest.digest.slice(0, 12)}`).join(' ')}`];
  const tables = new Set(states.flatMap((s) => Object.keys(s.digest.tables)));
  for (const t of tables) {
    const per = states.map((s) => s.digest.tables[t]);
    if (new Set(per.map((x) => x?.digest)).size > 1)
      lines.push(`  ${t}: ${states.map((s, i) => `${s.site}=${per[i]?.rows ?? '-'} rows`).join(', ')}`);
  }
  if (busy.length) lines.push(`busy: ${busy.join('; ')}`);
  return lines.join('\n');
}
