import { randomBytes, timingSafeEqual } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { agentHome } from '../agent-home';

/** The local UI's per-install secret: 32 random bytes (hex) in agentHome()/ui-secret, mode 0600. */
export async function uiSecret(env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const file = path.join(agentHome(env), 'ui-secret');
  try {
    const existing = (await fs.readFile(file, 'utf8')).trim();
    if (/^[0-9a-f]{64}$/.test(existing)) return existing;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const secret = randomBytes(32).toString('hex');
  await fs.writeFile(file, secret + '\n', { mode: 0o600 });
  await fs.chmod(file, 0o600);
  return secret;
}

/** Constant-time comparison of a presented secret with the real one. */
export function secretMatches(presented: string | undefined, secret: string): boolean {
  if (typeof presented !== 'string' || presented.length !== secret.length) return false;
  return timingSafeEqual(Buffer.from(presented), Buffer.from(secret));
}
