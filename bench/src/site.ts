import 'reflect-metadata';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { promises as fs } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import type pg from 'pg';
import {
  createSiteApp,
  loadConfig,
  migrate,
  SITE_SEMI_SPACE_MB,
  startEmbeddedPostgres,
  type EmbeddedServer,
  type SiteConfig,
} from '@tributary/api/embedding';

/**
 * Where the site runs: `thread` (default) serves the API from a worker thread of this process, so
 * the API and the bench's own client each get a core; `inline` shares one event loop with the client.
 */
export type SiteMode = 'thread' | 'inline';

export interface BenchSite {
  baseUrl: string;
  /** A scratch directory on the same file system as the site's storage (for temp and baseline files). */
  scratchDir: string;
  description: string;
  /** Set for a local site: the first administrator. */
  admin?: { username: string; password: string };
  /** Set for a remote site (TRIBUTARY_TOKEN). */
  token?: string;
  /** Set for a local site: its catalog database (for benches that set up data or measure a baseline in SQL). */
  connection?: pg.ClientConfig;
  /** Stops what the bench started and removes its temp directories. */
  close(): Promise<void>;
}

/** Data passed to site-worker.ts. */
export interface SiteWorkerData {
  config: SiteConfig;
  connection: pg.ClientConfig;
}

export type SiteWorkerMessage = { kind: 'listening'; port: number } | { kind: 'error'; message: string };

/** Uses an existing site from TRIBUTARY_URL and TRIBUTARY_TOKEN (a token with write scope). */
export async function remoteSite(url: string, token: string): Promise<BenchSite> {
  const scratchDir = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-'));
  return {
    baseUrl: url.replace(/\/+$/, ''),
    scratchDir,
    token,
    description: `existing site at ${url} (TRIBUTARY_URL)`,
    close: () => fs.rm(scratchDir, { recursive: true, force: true }),
  };
}

/**
 * Starts a site of its own, as `npm start` does: embedded PostgreSQL in a temp directory (with
 * fsync on: durable commits, like a real site), migrated, bootstrapped with a known admin password,
 * listening on 127.0.0.1 at a free port. `close` stops everything and removes the directory.
 */
export async function localSite(mode: SiteMode): Promise<BenchSite> {
  const root = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-bench-'));
  // As root the embedded server runs as the `postgres` user, which must reach its data directory.
  await fs.chmod(root, 0o755);
  let embedded: EmbeddedServer | undefined;
  let stopSite: (() => Promise<void>) | undefined;
  let closing: Promise<void> | undefined;
  const close = (): Promise<void> =>
    (closing ??= (async () => {
      await stopSite?.().catch(() => undefined);
      await embedded?.stop().catch(() => undefined);
      await fs.rm(root, { recursive: true, force: true });
    })());
  try {
    embedded = await startEmbeddedPostgres(path.join(root, 'postgres'), { fast: false });
    const connection = await embedded.database('tributary_bench');
    await migrate(connection);
    const password = randomBytes(18).toString('base64url');
    const config = loadConfig({
      TRIBUTARY_DATA_DIR: path.join(root, 'data'),
      HOST: '127.0.0.1',
      PORT: '0',
      ADMIN_PASSWORD: password,
      LOG_LEVEL: 'error',
      PORTAL_DIR: path.join(root, 'no-portal'),
    });
    let port: number;
    if (mode === 'inline') {
      const { app } = await createSiteApp(config, connection);
      await app.listen(0, '127.0.0.1');
      port = (app.getHttpServer().address() as AddressInfo).port;
      stopSite = () => app.close();
    } else {
      const started = await startWorker({ config, connection });
      port = started.port;
      stopSite = started.stop;
    }
    const scratchDir = path.join(root, 'scratch');
    await fs.mkdir(scratchDir);
    return {
      baseUrl: `http://127.0.0.1:${port}`,
      scratchDir,
      admin: { username: config.adminUsername, password },
      connection,
      description: `own site (${mode === 'thread' ? 'API in a worker thread' : 'API inline'}), embedded PostgreSQL in ${root}`,
      close,
    };
  } catch (err) {
    await close();
    throw err;
  }
}

export async function startWorker(
  data: SiteWorkerData,
): Promise<{ port: number; stop: () => Promise<void> }> {
  // A worker's young generation is three semi-spaces (two and the large-object space).
  const worker = new Worker(path.join(__dirname, 'site-worker.js'), {
    workerData: data,
    resourceLimits: { maxYoungGenerationSizeMb: 3 * SITE_SEMI_SPACE_MB },
  });
  const first = await Promise.race([
    once(worker, 'message') as Promise<[SiteWorkerMessage]>,
    once(worker, 'error').then(([err]: unknown[]) => {
      throw err instanceof Error ? err : new Error(String(err));
    }),
    once(worker, 'exit').then(([code]: unknown[]) => {
      throw new Error(`the site worker exited (code ${String(code)}) before it listened`);
    }),
  ]);
  const message = first[0];
  if (message.kind === 'error') {
    await worker.terminate();
    throw new Error(`the site did not start: ${message.message}`);
  }
  return {
    port: message.port,
    stop: async () => {
      const exited = once(worker, 'exit');
      worker.postMessage('close');
      const timer = setTimeout(() => void worker.terminate(), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
