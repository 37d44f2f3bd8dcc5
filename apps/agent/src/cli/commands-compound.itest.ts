import { createHash, randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CreatedTokenDto, EntryDetailDto } from '@tributary/shared';
import { startSite, waitFor, type SiteProcess } from '@tributary/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tribInProcess } from '../testing/cli-harness';

const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/**
 * `trib stat` and `trib get` against a real site process whose default resource is a compound one
 * (docs/storage.md, "Compound resources"): the tiers shown, and a download of an object evicted from
 * the cache shown as "staging" with its progress, then equal to what was written.
 */
describe('trib with a compound resource', () => {
  let site: SiteProcess;
  let root: string;
  let env: NodeJS.ProcessEnv;
  const files = new Map<string, Buffer>();

  const trib = (...argv: string[]) => tribInProcess(argv, { env, cwd: root });

  beforeAll(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-compound-'));
    site = await startSite({
      env: {
        LOGIN_RATE_LIMIT: '1000',
        STORAGE_RESOURCES: JSON.stringify([
          { name: 'fast', kind: 'local', root: path.join(root, 'fast') },
          { name: 'tape', kind: 'local', root: path.join(root, 'tape') },
          { name: 'tiered', kind: 'compound', cache: 'fast', archive: 'tape', cacheMaxBytes: 400_000 },
        ]),
        STORAGE_DEFAULT_RESOURCE: 'tiered',
        STORAGE_COMPOUND_PASS_MS: '100',
      },
    });
    const admin = await site.admin();
    const token = await admin.post<CreatedTokenDto>('/api/v1/tokens', { name: 'tiers', scope: 'write' });
    expect(token.status).toBe(201);
    env = {
      TRIBUTARY_AGENT_HOME: path.join(root, 'home'),
      TRIBUTARY_SITE: site.url,
      TRIBUTARY_TOKEN: token.body.secret,
    };
    expect((await trib('mkdir', '-p', '/projects/tiers')).code).toBe(0);
    for (let i = 0; i < 3; i++) {
      const bytes = randomBytes(300_000 + i);
      const local = path.join(root, `f${i}.bin`);
      await fs.writeFile(local, bytes);
      files.set(`/projects/tiers/f${i}.bin`, bytes);
      const put = await trib('put', local, `/projects/tiers/f${i}.bin`);
      expect(put.code, put.stderr).toBe(0);
    }
  }, 120_000);

  afterAll(async () => {
    await site?.close();
    if (root) await fs.rm(root, { recursive: true, force: true });
  });

  it('shows the tiers in stat and "staging" in get, and gets the bytes back equal', async () => {
    const detail = async (p: string) => (await trib('stat', '--json', p)).json<EntryDetailDto>();
    let evicted: string[] = [];
    const settled = await waitFor(async () => {
      const tiers = await Promise.all(
        [...files.keys()].map(async (p) => [p, (await detail(p)).replicas[0]?.tier] as const),
      );
      evicted = tiers.filter(([, t]) => t && !t.cache).map(([p]) => p);
      return tiers.every(([, t]) => t?.archive === 'archived') && evicted.length >= 2;
    }, 30_000);
    expect(settled, `evicted: ${evicted.join(', ')}`).toBe(true);

    const shown = await trib('stat', evicted[0]!);
    expect(shown.stdout).toMatch(/replicas:\s+lsu:tiered \(good, archive only, archived\)/);

    const target = path.join(root, 'back.bin');
    const got = await trib('get', evicted[0]!, target);
    expect(got.code, got.stderr).toBe(0);
    expect(got.stderr).toMatch(
      new RegExp(`staging ${evicted[0]!.replace(/\//g, '\\/')} from the archive: \\d+%`),
    );
    expect(sha256(await fs.readFile(target))).toBe(sha256(files.get(evicted[0]!)!));
    const after = await trib('stat', evicted[0]!);
    expect(after.stdout).toMatch(/lsu:tiered \(good, cached, archived\)/);

    // Several at once (one batch read): the site waits for the staging itself.
    const all = path.join(root, 'all');
    await fs.mkdir(all);
    const many = await trib('get', '-r', '/projects/tiers', all);
    expect(many.code, many.stderr).toBe(0);
    for (const [p, bytes] of files)
      expect(sha256(await fs.readFile(path.join(all, 'tiers', path.basename(p)))), p).toBe(sha256(bytes));
  }, 120_000);
});
