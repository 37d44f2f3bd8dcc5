import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const ADMIN_PASSWORD = 'e2e-admin-password';

/** The three sites the tests run against, in start order (the first founds the federation). */
export const SITE_IDS = ['lsu', 'tulane', 'uno'] as const;

/**
 * Starts a real three-site federation from the built API (`npm run build` first), like `npm start`:
 * one embedded PostgreSQL in a temporary directory, three site processes on consecutive ports. The
 * replication cycle is an hour long, so nothing is exchanged until a test runs a cycle
 * (`POST /api/v1/replication/cycle`): the conflict test makes two changes "in one cycle" on purpose.
 * Waits until every site answers and returns the teardown that stops them.
 */
export default async function globalSetup(): Promise<() => Promise<void>> {
  const entry = path.resolve(__dirname, '../apps/api/dist/cli/start.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run "npm run build" first`);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tributary-e2e-'));
  // mkdtemp makes it 0700; as root the embedded PostgreSQL runs as `postgres` and must enter it.
  chmodSync(dataDir, 0o755);
  const port = 18_000 + Math.floor(Math.random() * 2000) * 3;
  const site = spawn(process.execPath, [entry], {
    env: {
      ...process.env,
      TRIBUTARY_DATA_DIR: dataDir,
      PORT: String(port),
      ADMIN_PASSWORD,
      SITES: SITE_IDS.join(','),
      REPLICATION_CYCLE_SECONDS: '3600',
      // Every test signs in (in the browser and over HTTP, at several sites): more than the default
      // 10 attempts a minute per address and username.
      LOGIN_RATE_LIMIT: '1000',
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  site.stdout.on('data', (c: Buffer) => (output += c.toString()));
  site.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const urls = SITE_IDS.map((_, i) => `http://127.0.0.1:${port + i}`);
  const deadline = Date.now() + 120_000;
  for (const url of urls) {
    for (;;) {
      if (site.exitCode !== null) throw new Error(`the federation exited early:\n${output}`);
      const ok = await fetch(`${url}/api/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) throw new Error(`${url} did not answer within 120 s:\n${output}`);
      await new Promise((r) => setTimeout(r, 250));
    }
  }
  process.env.E2E_BASE_URL = urls[0];
  process.env.E2E_SITE_URLS = urls.join(',');
  return async () => {
    const exited = new Promise((r) => site.once('exit', r));
    site.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (site.exitCode === null) site.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
}
