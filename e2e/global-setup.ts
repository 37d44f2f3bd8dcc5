import { spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

export const ADMIN_PASSWORD = 'e2e-admin-password';

/**
 * Starts one real site from the built API (`npm run build` first) with its embedded PostgreSQL in a
 * temporary directory, waits until it answers, and returns the teardown that stops it.
 */
export default async function globalSetup(): Promise<() => Promise<void>> {
  const entry = path.resolve(__dirname, '../apps/api/dist/cli/start.js');
  if (!existsSync(entry)) throw new Error(`${entry} is missing: run "npm run build" first`);
  const dataDir = mkdtempSync(path.join(tmpdir(), 'tributary-e2e-'));
  // mkdtemp makes it 0700; as root the embedded PostgreSQL runs as `postgres` and must enter it.
  chmodSync(dataDir, 0o755);
  const port = 18_000 + Math.floor(Math.random() * 2000);
  const site = spawn(process.execPath, [entry], {
    env: {
      ...process.env,
      TRIBUTARY_DATA_DIR: dataDir,
      PORT: String(port),
      ADMIN_PASSWORD,
      LOG_LEVEL: 'warn',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  site.stdout.on('data', (c: Buffer) => (output += c.toString()));
  site.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const baseUrl = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (site.exitCode !== null) throw new Error(`the site exited early:\n${output}`);
    const ok = await fetch(`${baseUrl}/api/health`).then(
      (r) => r.ok,
      () => false,
    );
    if (ok) break;
    if (Date.now() > deadline) throw new Error(`the site did not answer within 60 s:\n${output}`);
    await new Promise((r) => setTimeout(r, 250));
  }
  process.env.E2E_BASE_URL = baseUrl;
  return async () => {
    const exited = new Promise((r) => site.once('exit', r));
    site.kill('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 15_000))]);
    if (site.exitCode === null) site.kill('SIGKILL');
    rmSync(dataDir, { recursive: true, force: true });
  };
}
