import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, startTestSite, type TestSite, type TestUser } from '../test/test-site';

/**
 * Real WebDAV clients against a site's /dav/ (docs/webdav.md, "Testing"): the litmus compliance
 * suite, rclone's WebDAV backend and a davfs2 mount (root and /dev/fuse only, as the FUSE mount's
 * tests). scripts/setup.sh installs all three. Everything that touches the davfs2 mount runs in a
 * child process: this process serves the site the mount talks to, so it must never block on it.
 */

let site: TestSite;
let user: TestUser;
let secret: string;
let scratch: string;

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function run(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: { ...process.env, ...options.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

async function ok(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<Run> {
  const result = await run(command, args, options);
  expect(result.code, `${command} ${args.join(' ')}\n${result.stdout}\n${result.stderr}`).toBe(0);
  return result;
}

/** A tree with the shapes clients trip on: empty files, nested folders, odd names, a few MiB. */
async function makeTree(root: string): Promise<void> {
  await mkdir(path.join(root, 'a', 'b', 'c'), { recursive: true });
  await mkdir(path.join(root, 'spaces and ü'), { recursive: true });
  await mkdir(path.join(root, 'empty-dir'), { recursive: true });
  await writeFile(path.join(root, 'a', 'big.bin'), randomBytes(3 * 1024 * 1024 + 17));
  await writeFile(path.join(root, 'a', 'b', 'one.txt'), 'x');
  await writeFile(path.join(root, 'a', 'b', 'c', 'empty'), '');
  await writeFile(path.join(root, 'spaces and ü', 'naïve #1 100%.txt'), 'odd names\n');
  for (let i = 0; i < 20; i++) await writeFile(path.join(root, 'a', `small-${i}.dat`), randomBytes(i * 100));
}

/** Relative path to SHA-256 of every file under root (folders as "dir"). */
async function digest(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    const full = path.join(entry.parentPath, entry.name);
    const rel = path.relative(root, full);
    if (rel === 'lost+found' || rel.startsWith('lost+found/')) continue;
    out[rel] = entry.isDirectory()
      ? 'dir'
      : createHash('sha256')
          .update(await readFile(full))
          .digest('hex');
  }
  return out;
}

beforeAll(async () => {
  site = await startTestSite();
  user = await site.createUser();
  secret = expectStatus(
    await user.client.post<{ secret: string }>('/api/v1/tokens', { name: 'dav clients', scope: 'write' }),
    201,
  ).body.secret;
  scratch = await mkdtemp(path.join(os.tmpdir(), 'tributary-dav-clients-'));
}, 60_000);

afterAll(async () => {
  await site?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

const davUrl = (rest = ''): string => `${site.url}/dav/home/${user.username}/${rest}`;

describe('litmus', () => {
  it('passes basic, copymove, props and locks', async () => {
    const cwd = path.join(scratch, 'litmus');
    await mkdir(cwd);
    const result = await run('litmus', ['-k', davUrl(), user.username, secret], {
      cwd,
      env: { TESTS: 'basic copymove props locks' },
    });
    const summaries = [
      ...result.stdout.matchAll(/<- summary for `(\w+)': of (\d+) tests run: (\d+) passed, (\d+) failed/g),
    ].map((m) => ({ suite: m[1], run: Number(m[2]), passed: Number(m[3]), failed: Number(m[4]) }));
    const detail = `${result.stdout}\n${result.stderr}`;
    expect(
      summaries.map((s) => s.suite),
      detail,
    ).toEqual(['basic', 'copymove', 'props', 'locks']);
    for (const s of summaries) expect(s, detail).toMatchObject({ failed: 0, passed: s.run });
    // Skipped tests and warnings are reported as such; none are expected (docs/webdav.md).
    expect(detail).not.toMatch(/SKIPPED|WARNING/);
    expect(result.code, detail).toBe(0);
  }, 120_000);
});

describe('rclone', () => {
  it('copies a tree up and down; rclone check finds no difference, byte for byte', async () => {
    const tree = path.join(scratch, 'rclone-up');
    const down = path.join(scratch, 'rclone-down');
    await makeTree(tree);
    const env = { RCLONE_CONFIG: path.join(scratch, 'rclone.conf') };
    await writeFile(env.RCLONE_CONFIG, '');
    const obscured = (await ok('rclone', ['obscure', secret], { env })).stdout.trim();
    const remote = `:webdav,url='${site.url}/dav',vendor=other,user='${user.username}',pass='${obscured}':/home/${user.username}/rclone`;
    await ok('rclone', ['copy', '--create-empty-src-dirs', tree, remote], { env });
    const up = await ok('rclone', ['check', '--download', tree, remote], { env });
    expect(up.stderr).toContain('0 differences found');
    await ok('rclone', ['copy', '--create-empty-src-dirs', remote, down], { env });
    await ok('rclone', ['check', '--download', tree, down], { env });
    expect(await digest(down)).toEqual(await digest(tree));
    // What arrived is what the API serves.
    const big = await user.client.get('/api/v1/data', {
      query: { path: `/home/${user.username}/rclone/a/big.bin` },
    });
    expect(createHash('sha256').update(expectStatus(big, 200).bytes).digest('hex')).toBe(
      createHash('sha256')
        .update(await readFile(path.join(tree, 'a', 'big.bin')))
        .digest('hex'),
    );
  }, 120_000);
});

const canMount = process.getuid?.() === 0 && existsSync('/dev/fuse');

describe.skipIf(!canMount)('davfs2', () => {
  it('mounts a collection: cp, tar, mv and rm work and the bytes are equal', async () => {
    const tree = path.join(scratch, 'davfs-tree');
    const mnt = path.join(scratch, 'mnt');
    const conf = path.join(scratch, 'davfs2');
    await makeTree(tree);
    await mkdir(mnt);
    await mkdir(path.join(conf, 'cache'), { recursive: true });
    // davfs2 drops to its own user for the cache; the scratch folder is root's (and mkdtemp's 0700).
    await chmod(scratch, 0o755);
    await chmod(conf, 0o755);
    await chmod(path.join(conf, 'cache'), 0o777);
    await writeFile(path.join(conf, 'secrets'), `${davUrl()} ${user.username} ${secret}\n`, { mode: 0o600 });
    // buf_size 64: davfs2 before 1.7.2 fails every directory read on Linux 6.16 and later with the
    // default buffer (alisarctl/davfs2 issue 22).
    await writeFile(
      path.join(conf, 'davfs2.conf'),
      [
        `secrets ${path.join(conf, 'secrets')}`,
        `cache_dir ${path.join(conf, 'cache')}`,
        'buf_size 64',
        'use_locks 1',
        'delay_upload 0',
        'ask_auth 0',
        '',
      ].join('\n'),
    );
    await ok('mount', ['-t', 'davfs', davUrl(), mnt, '-o', `conf=${path.join(conf, 'davfs2.conf')}`]);
    let mounted = true;
    try {
      const work = path.join(mnt, 'work');
      await ok('mkdir', [work]);
      // cp in, and read back through the mount.
      await ok('cp', ['-r', tree, path.join(work, 'copied')]);
      // tar: an archive of the tree unpacked into the mount, and one made from the mount.
      const archive = path.join(scratch, 'tree.tar');
      await ok('tar', ['-C', tree, '-cf', archive, '.']);
      await ok('mkdir', [path.join(work, 'untarred')]);
      await ok('tar', ['-C', path.join(work, 'untarred'), '-xf', archive]);
      // mv within the mount, rm of a whole tree.
      await ok('mv', [path.join(work, 'copied'), path.join(work, 'moved')]);
      await ok('rm', ['-r', path.join(work, 'untarred', 'a')]);
      const fromMount = path.join(scratch, 'from-mount');
      await mkdir(fromMount);
      const outTar = path.join(scratch, 'from-mount.tar');
      // davfs2 refreshes a folder's attributes from the server when it first lists it, which tar
      // reports as "file changed as we read it": list once first.
      await ok('find', [path.join(work, 'moved')]);
      await ok('tar', ['-C', path.join(work, 'moved'), '-cf', outTar, '.']);
      await ok('tar', ['-C', fromMount, '-xf', outTar]);
      expect(await digest(fromMount)).toEqual(await digest(tree));
      await ok('umount', [mnt]);
      mounted = false;
    } finally {
      if (mounted) await run('umount', ['-l', mnt]);
    }
    // After the unmount (davfs2 has sent everything), the catalog holds what was written.
    const base = `/home/${user.username}/work`;
    const listing = async (p: string): Promise<string[]> =>
      expectStatus(
        await user.client.get<{ items: { name: string }[] }>('/api/v1/namespace/children', {
          query: { path: p },
        }),
        200,
      ).body.items.map((i) => i.name);
    expect((await listing(base)).sort()).toEqual(['moved', 'untarred']);
    expect((await listing(`${base}/untarred`)).sort()).toEqual(['empty-dir', 'spaces and ü']);
    for (const rel of ['a/big.bin', 'a/small-7.dat', 'spaces and ü/naïve #1 100%.txt']) {
      const res = await user.client.get('/api/v1/data', { query: { path: `${base}/moved/${rel}` } });
      expect(expectStatus(res, 200).bytes.equals(await readFile(path.join(tree, rel))), rel).toBe(true);
    }
  }, 180_000);
});
