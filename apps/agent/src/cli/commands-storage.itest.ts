import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CreatedTokenDto, StorageMoveDto, StorageResourceListDto } from '@tributary/shared';
import { startSite, type SiteProcess } from '@tributary/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tribInProcess } from '../testing/cli-harness';
import { ExitCode } from './errors';

/**
 * `trib storage` against a real site process with a second local resource: the resources listed,
 * a collection moved there with progress and verified, the moves listed, refusals as exit codes.
 */
describe('trib storage', () => {
  let site: SiteProcess;
  let root: string;
  let env: NodeJS.ProcessEnv;
  let userEnv: NodeJS.ProcessEnv;

  const trib = (e: NodeJS.ProcessEnv, ...argv: string[]) => tribInProcess(argv, { env: e, cwd: root });

  beforeAll(async () => {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-storage-'));
    site = await startSite({
      env: {
        LOGIN_RATE_LIMIT: '1000',
        STORAGE_RESOURCES: JSON.stringify([{ name: 'bulk', kind: 'local', root: path.join(root, 'bulk') }]),
        STORAGE_DEFAULT_RESOURCE: 'default',
      },
    });
    const admin = await site.admin();
    const token = await admin.post<CreatedTokenDto>('/api/v1/tokens', { name: 'storage', scope: 'admin' });
    expect(token.status).toBe(201);
    env = {
      TRIBUTARY_AGENT_HOME: path.join(root, 'home'),
      TRIBUTARY_SITE: site.url,
      TRIBUTARY_TOKEN: token.body.secret,
    };
    const alice = await site.createUser();
    const mine = await alice.client.post<CreatedTokenDto>('/api/v1/tokens', { name: 'mine', scope: 'write' });
    userEnv = {
      TRIBUTARY_AGENT_HOME: path.join(root, 'home2'),
      TRIBUTARY_SITE: site.url,
      TRIBUTARY_TOKEN: mine.body.secret,
    };
    await fs.writeFile(path.join(root, 'a.bin'), Buffer.alloc(300_000, 7));
    for (const p of ['/projects/run/a.bin', '/projects/run/sub/b.bin']) {
      expect((await trib(env, 'mkdir', '-p', path.posix.dirname(p))).code).toBe(0);
      expect((await trib(env, 'put', path.join(root, 'a.bin'), p)).code).toBe(0);
    }
  }, 120_000);
  afterAll(async () => {
    await site?.close();
    if (root) await fs.rm(root, { recursive: true, force: true });
  });

  it('lists the resources, moves a collection with --wait, and lists the move', async () => {
    const listed = (await trib(env, 'storage', 'resources', '--json')).json<StorageResourceListDto>();
    expect(listed.items.map((r) => [r.name, r.kind, r.default])).toEqual([
      ['default', 'local', true],
      ['bulk', 'local', false],
    ]);
    const table = (await trib(env, 'storage', 'resources')).stdout.split('\n');
    expect(table[0]).toMatch(/^NAME\s+KIND\s+STATUS\s+OBJECTS\s+SIZE\s+WHERE\s+ERROR$/);
    expect(table[1]).toMatch(/^default \(default\)\s+local\s+ok\s+2\s/);

    const moved = await trib(env, 'storage', 'move', '/projects/run', 'bulk', '--wait', '--interval', '100');
    expect(moved.code, moved.stderr).toBe(0);
    expect(moved.stdout).toMatch(/^Move \d+ of \/projects\/run to bulk: done, 2 of 2 objects/);
    const after = (await trib(env, 'storage', 'resources', '--json')).json<StorageResourceListDto>();
    expect(after.items.find((r) => r.name === 'bulk')).toMatchObject({ objects: 2, bytes: 600_000 });
    const moves = (await trib(env, 'storage', 'moves', '--json')).json<{ items: StorageMoveDto[] }>();
    expect(moves.items[0]).toMatchObject({
      path: '/projects/run',
      resource: 'bulk',
      status: 'done',
      objectsMoved: 2,
    });
    expect((await trib(env, 'storage', 'moves', moves.items[0]!.id)).stdout).toContain('/projects/run');
    const got = await trib(env, 'get', '/projects/run/sub/b.bin', path.join(root, 'b.bin'));
    expect(got.code, got.stderr).toBe(0);
    expect((await fs.readFile(path.join(root, 'b.bin'))).equals(Buffer.alloc(300_000, 7))).toBe(true);
  });

  it('refuses what the site refuses, with the exit code for it', async () => {
    const unknown = await trib(env, 'storage', 'move', '/projects/run', 'tape');
    expect(unknown.code).toBe(ExitCode.Usage);
    expect(unknown.stderr).toContain('bulk');
    expect((await trib(env, 'storage', 'move', '/projects/nowhere', 'bulk')).code).toBe(ExitCode.NotFound);
    expect((await trib(userEnv, 'storage', 'resources')).code).toBe(ExitCode.Auth);
    expect((await trib(env, 'storage', 'moves', 'x')).code).toBe(ExitCode.Usage);
  });
});
