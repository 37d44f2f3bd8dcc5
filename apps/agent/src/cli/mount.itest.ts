import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CreatedTokenDto } from '@tributary/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSite, type SiteProcess } from '@tributary/testkit';
import { listMounts, type MountView } from '../mount/state';
import { processAlive } from '../transfers/transfer-records';
import { tribInProcess, type CliRun } from '../testing/cli-harness';
import { ExitCode } from './errors';

const FAKE_MAIN = path.resolve(__dirname, '../testing/fake-mount.cjs');

/**
 * `trib mount`, `trib mounts` and `trib unmount` against a real site, with a stand-in for the mount
 * process that keeps the same contract (the real FUSE process is tested in src/mount).
 */
describe('trib mount and unmount (stand-in mount process)', () => {
  let site: SiteProcess;
  let home: string;
  let dir: string;
  let token: string;
  let remote: string;
  const started: number[] = [];

  const trib = (argv: string[], mode = 'ok'): Promise<CliRun> =>
    tribInProcess(argv, {
      env: { TRIBUTARY_AGENT_HOME: home, TRIBUTARY_MOUNT_MAIN: FAKE_MAIN, FAKE_MOUNT_MODE: mode },
      cwd: dir,
    });

  beforeAll(async () => {
    site = await startSite({ env: { LOGIN_RATE_LIMIT: '1000' } });
    const alice = await site.createUser();
    token = (await alice.client.post<CreatedTokenDto>('/api/v1/tokens', { name: 'mount', scope: 'write' }))
      .body.secret;
    remote = alice.user.homePath;
    home = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-mount-home-'));
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-mount-dir-'));
    const login = await trib(['login', '--site', site.url, '--token', token]);
    expect(login.code, login.stderr).toBe(0);
  });
  afterEach(async () => {
    for (const m of await listMounts({ TRIBUTARY_AGENT_HOME: home })) started.push(m.pid);
    for (const pid of started.splice(0)) if (processAlive(pid)) process.kill(pid, 'SIGKILL');
    await fs.rm(path.join(home, 'mounts'), { recursive: true, force: true });
  });
  afterAll(async () => {
    await site?.close();
    if (home) await fs.rm(home, { recursive: true, force: true });
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('starts the mount process detached, with the token in its environment only, and waits until it is mounted', async () => {
    const mountpoint = path.join(dir, 'fed');
    await fs.mkdir(mountpoint);
    const run = await trib(['mount', remote, 'fed', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const state = run.json<MountView>();
    expect(state).toMatchObject({ state: 'mounted', mountpoint, remote, site: site.url });
    // What the stand-in saw: its arguments and its environment.
    const raw = JSON.parse(await fs.readFile(path.join(home, 'mounts', `${state.id}.json`), 'utf8')) as {
      fake: { argv: string[]; token: string };
    };
    // The trib settings' defaults (32 MiB buffer, 5 s cache) reach the mount process as flags.
    expect(raw.fake.argv).toEqual([
      '--site',
      site.url,
      '--remote',
      remote,
      '--mountpoint',
      mountpoint,
      '--buffer-mib',
      '32',
      '--cache-ttl-ms',
      '5000',
    ]);
    expect(raw.fake.argv.join(' ')).not.toContain(token);
    expect(raw.fake.token).toBe(token);
    expect(processAlive(state.pid)).toBe(true);
    const log = await fs.readFile(path.join(home, 'logs', `mount-${state.id}.log`), 'utf8');
    expect(log).toContain('fake mount');

    const listed = await trib(['mounts']);
    expect(listed.stdout).toMatch(new RegExp(`${mountpoint}\\s+${remote}\\s+\\S+\\s+mounted`));
    expect((await trib(['mount', '--list', '--json'])).json<MountView[]>()).toHaveLength(1);

    const twice = await trib(['mount', remote, 'fed']);
    expect(twice.code).toBe(ExitCode.Conflict);
    expect(twice.stderr).toContain('already mounted');

    const down = await trib(['unmount', 'fed']);
    expect(down.code, down.stderr).toBe(0);
    expect(await listMounts({ TRIBUTARY_AGENT_HOME: home })).toEqual([]);
    await expect.poll(() => processAlive(state.pid)).toBe(false);
    expect((await trib(['unmount', 'fed'])).code).toBe(ExitCode.NotFound);
  });

  it('reports FUSE missing (the process exits 3) with its message and exit code 8', async () => {
    await fs.mkdir(path.join(dir, 'nofuse'));
    const run = await trib(['mount', remote, 'nofuse'], 'nofuse');
    expect(run.code).toBe(ExitCode.Unsupported);
    expect(run.stderr).toContain('FUSE is not available');
    expect(run.stderr).toContain('/dev/fuse is missing');
  });

  it('shows the log tail when the mount fails, and gives up after --timeout', async () => {
    await fs.mkdir(path.join(dir, 'bad'));
    const failed = await trib(['mount', remote, 'bad'], 'fail');
    expect(failed.code).toBe(ExitCode.Error);
    expect(failed.stderr).toContain('the site did not answer');

    const hung = await trib(['mount', remote, 'bad', '--timeout', '1'], 'hang');
    expect(hung.code).toBe(ExitCode.Error);
    expect(hung.stderr).toContain('did not come up within 1 s');
    expect(hung.stderr).toContain('fake mount');
  });

  it('checks its arguments before starting anything', async () => {
    expect((await trib(['mount', remote])).code).toBe(ExitCode.Usage);
    expect((await trib(['mount', remote, 'no-such-dir'])).code).toBe(ExitCode.NotFound);
    expect((await trib(['mount', `${remote}/missing`, '.'])).code).toBe(ExitCode.NotFound);
    expect((await trib(['mount', remote, '.', '--timeout', 'soon'])).code).toBe(ExitCode.Usage);
    expect(await listMounts({ TRIBUTARY_AGENT_HOME: home })).toEqual([]);
  });

  it('clears the state of a mount whose process died', async () => {
    await fs.mkdir(path.join(home, 'mounts'), { recursive: true });
    const now = new Date().toISOString();
    const stale = {
      id: 'gone',
      pid: 2 ** 22 + 12345,
      mountpoint: path.join(dir, 'stale'),
      remote,
      site: site.url,
      state: 'mounted',
      startedAt: now,
      updatedAt: now,
      stats: { bytesRead: 0, bytesWritten: 0, operations: 0, errors: 0 },
    };
    await fs.writeFile(path.join(home, 'mounts', 'gone.json'), JSON.stringify(stale));
    expect((await trib(['mounts'])).stdout).toContain('mounted (process gone)');
    const run = await trib(['unmount', path.join(dir, 'stale')]);
    expect(run.code, run.stderr).toBe(0);
    expect(await listMounts({ TRIBUTARY_AGENT_HOME: home })).toEqual([]);
  });
});
