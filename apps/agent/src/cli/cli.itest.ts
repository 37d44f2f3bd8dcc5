import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, promises as fs } from 'node:fs';
import path from 'node:path';
import type {
  CreatedTokenDto,
  EntryDetailDto,
  EntryDto,
  TokenDto,
  TrashEntryDto,
  TripleDto,
  UserDto,
  UploadSessionDto,
} from '@tributary/shared';
import { describe, expect, it, onTestFinished } from 'vitest';
import {
  expectStatus,
  recordUpdateConflict,
  type SiteProcess,
  startDelayProxy,
  type TestUser,
} from '@tributary/testkit';
import { listTransfers } from '../transfers/transfer-records';
import { CLI_MAIN, sha256Hex, treeHashes, tribInProcess, tribProcess } from '../testing/cli-harness';
import { useCliSite } from '../testing/cli-site';
import { ExitCode } from './errors';
import { uploadResumeFile } from './tree-transfer';

/**
 * `trib` end to end against a real site (real API, real PostgreSQL, real storage): the commands
 * through runCli in this process, exit codes and output through the built executable.
 */
describe('trib against a real site', () => {
  let site: SiteProcess;
  let alice: TestUser;
  let token: string;
  let home: string;
  let work: string;
  let env: NodeJS.ProcessEnv;
  let remoteHome: string;

  const { trib, ok } = useCliSite('cli-test', (cli) => {
    ({ site, alice, token, home, work, env } = cli);
    remoteHome = alice.user.homePath;
  });

  it('refuses commands before login, refuses a wrong token, then logs in without printing the token', async () => {
    const before = await trib('ls');
    expect(before.code).toBe(ExitCode.Auth);
    expect(before.stderr).toContain('trib login');

    const wrong = await trib('login', '--site', site.url, '--token', 'trib_not_a_real_token');
    expect(wrong.code).toBe(ExitCode.Auth);
    expect(existsSync(path.join(home, 'config.json'))).toBe(false);

    const run = await tribInProcess(['login', '--site', `${site.url}/api/v1/`, '--token', '-'], {
      env,
      cwd: work,
      stdin: `${token}\n`,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout + run.stderr).not.toContain(token);
    expect(run.stdout).toContain(alice.username);
    const stat = await fs.stat(path.join(home, 'config.json'));
    expect(stat.mode & 0o777).toBe(0o600);
    const config = JSON.parse(await fs.readFile(path.join(home, 'config.json'), 'utf8')) as {
      current: string;
      sites: Record<string, { url: string }>;
    };
    expect(config.current).toBe('lsu');
    expect(config.sites.lsu?.url).toBe(site.url);

    const me = (await ok('whoami', '--json')).json<{ user: UserDto; site: string }>();
    expect(me.user.username).toBe(alice.username);
    expect(me.site).toBe('lsu');
    expect((await ok('pwd')).stdout.trim()).toBe(remoteHome);
    const shown = await ok('site', '--json');
    expect(shown.stdout).not.toContain(token);
    expect(shown.json<{ name: string; loggedIn: boolean }>()).toMatchObject({ name: 'lsu', loggedIn: true });
  });

  it('makes collections, lists and stats them, with relative paths and cd', async () => {
    await ok('mkdir', '-p', 'proj/raw/deep');
    await ok('mkdir', '-p', 'proj/raw'); // existing is fine with -p
    const again = await trib('mkdir', 'proj');
    expect(again.code).toBe(ExitCode.Conflict);
    expect(again.stderr).toMatch(/exists|taken/i);

    const listing = (await ok('ls', '--json', 'proj')).json<EntryDto[]>();
    expect(listing.map((e) => e.name)).toEqual(['raw']);
    expect((await ok('ls', 'proj')).stdout).toBe('raw/\n');
    const rec = await ok('ls', '-R', 'proj');
    expect(rec.stdout).toBe('raw/\nraw/deep/\n');

    await ok('cd', 'proj');
    expect((await ok('pwd')).stdout.trim()).toBe(`${remoteHome}/proj`);
    const stat = (await ok('stat', '--json', 'raw/deep/..')).json<EntryDetailDto>();
    expect(stat).toMatchObject({ kind: 'collection', path: `${remoteHome}/proj/raw` });
    await ok('cd');
    expect((await ok('pwd')).stdout.trim()).toBe(remoteHome);
  });

  it('puts and gets a file and a directory tree, checksums equal, and skips what is identical', async () => {
    const src = path.join(work, 'tree');
    await fs.mkdir(path.join(src, 'a', 'b'), { recursive: true });
    await fs.mkdir(path.join(src, 'empty'), { recursive: true });
    const files: Record<string, Buffer> = {
      'top.txt': Buffer.from('hello federation\n'),
      'a/one.bin': randomBytes(70_000),
      'a/b/two.bin': randomBytes(1234),
      'a/b/large.bin': randomBytes(5 * 1024 * 1024 + 17), // above the small-file limit: upload session, ranged download
      'zero.dat': Buffer.alloc(0),
    };
    for (const [rel, data] of Object.entries(files)) await fs.writeFile(path.join(src, rel), data);

    const put = await ok('put', '-r', '--json', 'tree', 'proj/');
    const summary = put.json<{ files: number; transferred: number }>();
    expect(summary).toMatchObject({ files: 5, transferred: 5 });
    const remote = (await ok('ls', '-R', '--json', 'proj/tree')).json<
      Array<EntryDto & { relative: string }>
    >();
    const byRel = new Map(remote.map((e) => [e.relative, e]));
    for (const [rel, data] of Object.entries(files))
      expect(byRel.get(rel)?.checksum).toBe(`sha256:${sha256Hex(data)}`);
    expect(byRel.get('empty')?.kind).toBe('collection');

    // Back again, into a new local directory.
    await fs.mkdir(path.join(work, 'back'));
    await ok('get', '-r', 'proj/tree', 'back/');
    expect(await treeHashes(path.join(work, 'back', 'tree'))).toEqual(await treeHashes(src));
    expect(existsSync(path.join(work, 'back', 'tree', 'empty'))).toBe(true);

    // One file each way, under a new name.
    await ok('put', path.join(src, 'top.txt'), 'proj/renamed.txt');
    await ok('get', 'proj/renamed.txt', 'copy.txt');
    expect(await fs.readFile(path.join(work, 'copy.txt'), 'utf8')).toBe('hello federation\n');

    // Again: nothing to send. Changed locally: refused without --force, replaced with it.
    const again = await ok('put', '-r', '--json', 'tree', 'proj/');
    expect(again.json<{ transferred: number; unchanged: number }>()).toMatchObject({
      transferred: 0,
      unchanged: 5,
    });
    await fs.writeFile(path.join(src, 'a', 'one.bin'), 'changed');
    const clash = await trib('put', '-r', 'tree', 'proj/');
    expect(clash.code).toBe(ExitCode.Conflict);
    expect(clash.stderr).toContain('--force');
    await ok('put', '-r', '--force', 'tree', 'proj/');
    const one = (await ok('stat', '--json', 'proj/tree/a/one.bin')).json<EntryDetailDto>();
    expect(one.checksum).toBe(`sha256:${sha256Hex(Buffer.from('changed'))}`);
    const getClash = await trib('get', '-r', 'proj/tree', 'back/');
    expect(getClash.code).toBe(ExitCode.Conflict);
    await ok('get', '-r', '-f', 'proj/tree', 'back/');
    expect(await fs.readFile(path.join(work, 'back', 'tree', 'a', 'one.bin'), 'utf8')).toBe('changed');

    // The transfers were recorded for the local UI.
    const records = await listTransfers(env);
    expect(records.some((r) => r.direction === 'put' && r.state === 'done' && r.filesTotal === 5)).toBe(true);
    expect(records.some((r) => r.state === 'failed')).toBe(true);
  });

  it('resumes an interrupted upload of a large file from the last acknowledged byte', async () => {
    const data = randomBytes(6 * 1024 * 1024 + 5);
    const local = path.join(work, 'resume.bin');
    await fs.writeFile(local, data);
    const remote = `${remoteHome}/resume.bin`;
    // What an interrupted `trib put` leaves: a session holding the first MiB, its id in uploads/.
    const asAlice = site.asToken(token);
    const session = await asAlice.post<UploadSessionDto>('/api/v1/uploads', {
      path: remote,
      size: data.length,
      sha256: sha256Hex(data),
    });
    expect(session.status).toBe(201);
    const first = data.subarray(0, 1024 * 1024);
    const chunk = await asAlice.request<UploadSessionDto>('PUT', `/api/v1/uploads/${session.body.id}`, {
      query: { offset: 0 },
      body: first,
      headers: { 'content-type': 'application/octet-stream', 'x-chunk-sha256': sha256Hex(first) },
    });
    expect(chunk.body.received).toBe(first.length);
    const stat = await fs.stat(local);
    const resumeFile = uploadResumeFile(env, site.url, local, remote);
    await fs.mkdir(path.dirname(resumeFile), { recursive: true });
    await fs.writeFile(
      resumeFile,
      JSON.stringify({ sessionId: session.body.id, size: stat.size, mtimeMs: stat.mtimeMs }),
    );

    await ok('put', 'resume.bin', '.', '--chunk-mib', '1');
    // That very session was completed (a new one would have left it open), and its note is gone.
    expect((await asAlice.get(`/api/v1/uploads/${session.body.id}`)).status).toBe(404);
    expect(existsSync(resumeFile)).toBe(false);
    const entry = (await ok('stat', '--json', 'resume.bin')).json<EntryDetailDto>();
    expect(entry).toMatchObject({ size: data.length, checksum: `sha256:${sha256Hex(data)}` });
  });

  it('moves, copies, trashes and restores', async () => {
    await ok('mkdir', 'shelf');
    await fs.writeFile(path.join(work, 'note.txt'), 'note');
    await ok('put', 'note.txt', 'shelf/');
    await ok('mv', 'shelf/note.txt', 'shelf/memo.txt');
    await ok('cp', 'shelf/memo.txt', 'shelf/memo-copy.txt');
    await ok('mkdir', 'shelf/box');
    await ok('mv', 'shelf/memo-copy.txt', 'shelf/box');
    await ok('cp', '-r', 'shelf/box', 'shelf/box2');
    const names = (await ok('ls', '-R', '--json', 'shelf'))
      .json<Array<{ relative: string }>>()
      .map((e) => e.relative);
    expect(names.sort()).toEqual(['box', 'box/memo-copy.txt', 'box2', 'box2/memo-copy.txt', 'memo.txt']);
    const copy = (await ok('stat', '--json', 'shelf/box2/memo-copy.txt')).json<EntryDetailDto>();
    expect(copy.checksum).toBe(`sha256:${sha256Hex(Buffer.from('note'))}`);

    const refused = await trib('rm', 'shelf/box');
    expect(refused.code).toBe(ExitCode.Usage);
    expect(refused.stderr).toContain('-r');
    const trashed = (await ok('rm', '-r', '--json', 'shelf/box', 'shelf/memo.txt')).json<TrashEntryDto[]>();
    expect(trashed).toHaveLength(2);
    expect((await trib('stat', 'shelf/memo.txt')).code).toBe(ExitCode.NotFound);
    const trash = (await ok('trash', 'list', '--json')).json<TrashEntryDto[]>();
    expect(trash.map((t) => t.originalPath)).toEqual(
      expect.arrayContaining([`${remoteHome}/shelf/box`, `${remoteHome}/shelf/memo.txt`]),
    );
    await ok('restore', 'shelf/memo.txt', trashed[0]!.id);
    expect((await ok('ls', 'shelf')).stdout).toBe('box/\nbox2/\nmemo.txt\n');
    expect((await trib('rm', '-f', 'shelf/nothing-here')).code).toBe(0);
    expect((await trib('restore', 'shelf/never-deleted')).code).toBe(ExitCode.NotFound);
  });

  it('ls -l shows modes, file times and link targets; stat, cp and get keep links as links', async () => {
    await ok('mkdir', '-p', 'links');
    const dir = `${remoteHome}/links`;
    await fs.writeFile(path.join(work, 'tool.sh'), '#!/bin/sh\necho hi\n');
    await ok('put', 'tool.sh', `${dir}/tool.sh`);
    expectStatus(
      await alice.client.patch('/api/v1/namespace/attributes', {
        path: `${dir}/tool.sh`,
        mode: 0o750,
        mtime: '2001-02-03T04:05:06.5Z',
      }),
      200,
    );
    expectStatus(
      await alice.client.post('/api/v1/namespace/symlinks', {
        path: `${dir}/latest`,
        target: 'tool.sh',
        mtime: '2002-01-01T00:00:00Z',
      }),
      201,
    );
    expectStatus(
      await alice.client.post('/api/v1/namespace/symlinks', { path: `${dir}/odd`, target: 'a\nb' }),
      201,
    );
    const lines = (await ok('ls', '-l', 'links')).stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^MODE\s+SIZE\s+MODIFIED\s+OWNER\s+SITE\s+NAME$/);
    expect(lines.find((l) => l.includes('latest'))).toMatch(
      /^lrwxrwxrwx\s+7\s+2002-01-01 00:00\s+\S+\s+-\s+latest -> tool\.sh$/,
    );
    expect(lines.find((l) => l.includes('tool.sh') && !l.includes('->'))).toMatch(
      /^-rwxr-x---\s+\d+ B\s+2001-02-03 04:05\s+\S+\s+lsu\s+tool\.sh$/,
    );
    // A newline in a target is shown escaped, never printed raw.
    expect(lines.find((l) => l.includes('odd'))).toContain('odd -> a\\x0ab');
    expect((await ok('ls', '-l', remoteHome)).stdout).toMatch(/^drwxr-xr-x\s.*\slinks\/$/m);
    // Sorted by file time, as ls -t.
    const byTime = (await ok('ls', '--sort', 'modified', 'links')).stdout.split('\n');
    expect(byTime.indexOf('tool.sh')).toBeLessThan(byTime.indexOf('latest'));

    const stat = (await ok('stat', 'links/latest')).stdout;
    expect(stat).toMatch(/kind:\s+symlink/);
    expect(stat).toMatch(/target:\s+tool\.sh/);
    expect(stat).toMatch(/mode:\s+lrwxrwxrwx \(0777\)/);
    expect(stat).toMatch(/mtime:\s+2002-01-01T00:00:00\.000000000Z/);
    expect((await ok('stat', '--json', 'links/latest')).json<EntryDetailDto>()).toMatchObject({
      kind: 'symlink',
      linkTarget: 'tool.sh',
      mode: 0o777,
    });

    await ok('cp', 'links/latest', 'links/copy');
    expect((await ok('stat', '--json', 'links/copy')).json<EntryDetailDto>()).toMatchObject({
      kind: 'symlink',
      linkTarget: 'tool.sh',
      mtime: '2002-01-01T00:00:00.000000000Z',
    });
    const local = path.join(work, 'links-down');
    await ok('get', '-r', 'links', local);
    expect(await fs.readlink(path.join(local, 'latest'))).toBe('tool.sh');
    expect(await fs.readFile(path.join(local, 'latest'), 'utf8')).toContain('echo hi');
  });

  it('adds, lists, queries and removes metadata', async () => {
    await fs.writeFile(path.join(work, 'sky.fits'), 'not really fits');
    await ok('put', 'sky.fits', 'proj/');
    await ok('meta', 'add', 'proj/sky.fits', 'filetype', 'fits');
    await ok('meta', 'add', 'proj/sky.fits', 'resolution', '0.5', 'arcsec', '--type', 'number');
    const triples = (await ok('meta', 'ls', '--json', 'proj/sky.fits')).json<{ triples: TripleDto[] }>()
      .triples;
    expect(triples.map((t) => [t.attribute, t.value, t.unit])).toEqual(
      expect.arrayContaining([
        ['filetype', 'fits', null],
        ['resolution', 0.5, 'arcsec'],
      ]),
    );
    const found = (
      await ok('query', '--json', 'filetype = fits and resolution < 1', '--scope', remoteHome)
    ).json<{ total: number; items: Array<{ path: string }> }>();
    expect(found.items.map((i) => i.path)).toEqual([`${remoteHome}/proj/sky.fits`]);
    expect((await ok('query', 'resolution > 1', '--scope', remoteHome)).stdout).toBe('');
    const bad = await trib('query', 'resolution >>> 1');
    expect(bad.code).toBe(ExitCode.Usage);
    await ok('meta', 'rm', 'proj/sky.fits', 'filetype');
    expect(
      (await ok('meta', 'ls', '--json', 'proj/sky.fits'))
        .json<{ triples: TripleDto[] }>()
        .triples.map((t) => t.attribute),
    ).toEqual(['resolution']);
    expect((await trib('meta', 'rm', 'proj/sky.fits', 'filetype')).code).toBe(ExitCode.NotFound);
    expect((await trib('meta', 'add', 'proj/sky.fits', 'size', 'big', '--type', 'number')).code).toBe(
      ExitCode.Usage,
    );
  });

  it('creates, lists and revokes tokens; a revoked token is refused', async () => {
    const created = (
      await ok('token', 'create', 'ci-read', '--scope', 'read', '--days', '7', '--json')
    ).json<CreatedTokenDto>();
    expect(created.secret).toMatch(/^trib_/);
    const list = (await ok('token', 'list', '--json')).json<TokenDto[]>();
    expect(list.find((t) => t.id === created.id)).toMatchObject({
      name: 'ci-read',
      scope: 'read',
      revokedAt: null,
    });
    expect(JSON.stringify(list)).not.toContain(created.secret);
    // The new token works for reading, and not for writing.
    const asRead = { ...env, TRIBUTARY_TOKEN: created.secret };
    expect((await tribInProcess(['ls', remoteHome], { env: asRead, cwd: work })).code).toBe(0);
    expect((await tribInProcess(['mkdir', `${remoteHome}/nope`], { env: asRead, cwd: work })).code).toBe(
      ExitCode.Auth,
    );
    await ok('token', 'revoke', created.id);
    const revoked = await tribInProcess(['ls', remoteHome], { env: asRead, cwd: work });
    expect(revoked.code).toBe(ExitCode.Auth);
    expect(revoked.stderr).toMatch(/revoked/i);
    expect((await trib('token', 'revoke', 'abc')).code).toBe(ExitCode.Usage);
  });

  it('lists groups and switches the active one; a group the user is not in is refused', async () => {
    const admin = await site.admin();
    const name = `grp${randomBytes(3).toString('hex')}`;
    expect((await admin.post('/api/v1/groups', { name })).status).toBe(201);
    expect((await admin.put(`/api/v1/groups/${name}/members`, { username: alice.username })).status).toBe(
      200,
    );
    const other = `grp${randomBytes(3).toString('hex')}`;
    expect((await admin.post('/api/v1/groups', { name: other })).status).toBe(201);

    const switched = (await ok('group', 'switch', name, '--json')).json<{ active: string }>();
    expect(switched.active).toBe(name);
    expect((await ok('group', 'list')).stdout).toContain(`* ${name}`);
    const refused = await trib('group', 'switch', other);
    expect(refused.code).toBe(ExitCode.Auth);
  });

  it('lists, shows and decides conflicts; bad filters and ids are usage errors', async () => {
    expect((await ok('conflicts', 'list')).stdout).toContain('No conflicts');
    expect((await ok('conflicts', '--json')).json<unknown[]>()).toEqual([]);

    await fs.writeFile(path.join(work, 'disputed.csv'), 'a,b\n');
    await ok('put', 'disputed.csv', 'proj/');
    const entry = (await ok('stat', '--json', 'proj/disputed.csv')).json<EntryDetailDto>();
    const id = await recordUpdateConflict(site, entry.id);
    const listed = await ok('conflicts', 'list');
    expect(listed.stdout).toMatch(
      new RegExp(`${id}\\s+update\\s+open\\s+in \\d+h \\d+m\\s+lsu\\*,tulane\\s+${entry.path}`),
    );
    const shown = await ok('conflicts', 'show', id);
    expect(shown.stdout).toContain('differs in: content_type');
    expect(shown.stdout).toContain('version 1: tulane');
    expect((await trib('conflicts', 'decide', id, 'choose')).code).toBe(ExitCode.Usage);
    expect((await trib('conflicts', 'decide', id, 'flip')).code).toBe(ExitCode.Usage);
    await ok('conflicts', 'decide', id, 'choose', '1');
    const decided = (await ok('conflicts', 'show', '--json', id)).json<{
      status: string;
      decision: { action: string };
    }>();
    expect(decided).toMatchObject({ status: 'decided', decision: { action: 'choose' } });
    const again = await trib('conflicts', 'decide', id, 'keep');
    expect(again.code).toBe(ExitCode.Conflict);
    expect(
      (await ok('conflicts', '--json', '--status', 'decided')).json<Array<{ id: string }>>().map((c) => c.id),
    ).toContain(id);

    expect((await trib('conflicts', 'list', '--status', 'bogus')).code).toBe(ExitCode.Usage);
    expect((await trib('conflicts', 'decide', 'not-an-id', 'keep')).code).toBe(ExitCode.Usage);
    expect((await trib('conflicts', 'show', '0'.repeat(32))).code).toBe(ExitCode.NotFound);
  });

  it('moves 1000 small files each way in one command (no timing asserted here: see bench:mount)', async () => {
    const dir = path.join(work, 'small');
    await fs.mkdir(dir);
    for (let i = 0; i < 1000; i++)
      await fs.writeFile(path.join(dir, `f${String(i).padStart(4, '0')}.dat`), randomBytes(10 * 1024));
    const put = (await ok('put', '-r', '--json', 'small', remoteHome + '/')).json<{
      transferred: number;
      seconds: number;
    }>();
    expect(put.transferred).toBe(1000);
    await fs.mkdir(path.join(work, 'small-back'));
    const get = (await ok('get', '-r', '--json', `${remoteHome}/small`, 'small-back')).json<{
      transferred: number;
      seconds: number;
    }>();
    expect(get.transferred).toBe(1000);
    expect(await treeHashes(path.join(work, 'small-back', 'small'))).toEqual(await treeHashes(dir));
    console.log(`1000 x 10 KiB in-process: put ${put.seconds.toFixed(2)} s, get ${get.seconds.toFixed(2)} s`);
  });

  describe('the executable', () => {
    const run = (argv: string[], extra: NodeJS.ProcessEnv = {}) =>
      tribProcess(argv, { env: { ...env, ...extra }, cwd: work });

    it('exists (npm run build -w @tributary/agent)', () => {
      expect(existsSync(CLI_MAIN)).toBe(true);
    });

    it('prints help for every command and exits 0', async () => {
      for (const command of [
        '',
        'put',
        'get',
        'ls',
        'meta add',
        'conflicts decide',
        'token create',
        'mount',
        'ui',
      ]) {
        const res = await run([...command.split(' ').filter(Boolean), '--help']);
        expect(res.code, command).toBe(0);
        expect(res.stdout).toContain('Usage: trib');
      }
    });

    it('exits 2 with a helpful message on bad arguments', async () => {
      const cases: Array<[string[], RegExp]> = [
        [['frobnicate'], /unknown command/],
        [['lss'], /Did you mean ls/],
        [['put', 'only-one'], /give local sources and a remote target/],
        [['get', '--parallel', '0', 'a', 'b'], /--parallel must be a whole number from 1 to 64/],
        [['ls', '--sort', 'colour'], /--sort must be one of name, size, modified/],
        [['stat'], /missing required argument/],
        [['ls', 'a\u0001b'], /control characters/],
        [['completion', 'fish'], /use bash or zsh/],
        [['config', 'set', 'parallel', '1000'], /from 1 to 64/],
      ];
      for (const [argv, message] of cases) {
        const res = await run(argv);
        expect(res.code, argv.join(' ') + '\n' + res.stderr).toBe(ExitCode.Usage);
        expect(res.stderr).toMatch(message);
      }
    });

    it('exits 3 for a path that does not exist, 4 for a bad token, 6 for an unreachable site', async () => {
      const missing = await run(['stat', `${remoteHome}/no/such/thing`]);
      expect(missing.code).toBe(ExitCode.NotFound);
      expect(missing.stderr).toContain('trib:');
      const missingJson = await run(['--json', 'ls', `${remoteHome}/nothing`]);
      expect(missingJson.code).toBe(ExitCode.NotFound);
      expect(JSON.parse(missingJson.stderr)).toMatchObject({ error: { code: 'NOT_FOUND', exitCode: 3 } });

      const badToken = await run(['ls'], { TRIBUTARY_TOKEN: 'trib_wrong' });
      expect(badToken.code).toBe(ExitCode.Auth);

      // A port nothing listens on: bind one, then close it.
      const probe = (await import('node:net')).createServer();
      await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
      const port = (probe.address() as import('node:net').AddressInfo).port;
      await new Promise((resolve) => probe.close(resolve));
      const down = await run(['ls', '/'], {
        TRIBUTARY_SITE: `http://127.0.0.1:${port}`,
        TRIBUTARY_TOKEN: 'trib_any',
      });
      expect(down.code).toBe(ExitCode.Unreachable);
      expect(down.stderr).toMatch(/did not answer/);
      expect(down.stderr).toContain('ECONNREFUSED');
    });

    it('writes JSON that parses, and never the token', async () => {
      const res = await run(['ls', '-l', '--json', remoteHome]);
      expect(res.code).toBe(0);
      const entries = JSON.parse(res.stdout) as EntryDto[];
      expect(entries.map((e) => e.name)).toEqual(expect.arrayContaining(['proj', 'shelf', 'small']));
      const table = await run(['ls', '-l', remoteHome]);
      expect(table.stdout.split('\n')[0]).toMatch(/^MODE\s+SIZE\s+MODIFIED\s+OWNER\s+SITE\s+NAME$/);
      for (const r of [res, table]) expect(r.stdout + r.stderr).not.toContain(token);
    });

    it('stops cleanly on Ctrl-C (exit 130, transfer recorded as interrupted), and the next put resumes', async () => {
      const data = randomBytes(24 * 1024 * 1024);
      await fs.writeFile(path.join(work, 'interrupted.bin'), data);
      // Through 100 ms of added round trip, the 24 one-MiB chunks take seconds, so the transfer is
      // still running when it is interrupted however fast the machine is.
      const { hostname, port } = new URL(site.url);
      const slow = await startDelayProxy({ host: hostname, port: Number(port) }, 100);
      onTestFinished(() => slow.close());
      const viaSlow = { TRIBUTARY_SITE: slow.url, TRIBUTARY_TOKEN: token };
      const child = spawn(
        process.execPath,
        [CLI_MAIN, 'put', '--chunk-mib', '1', 'interrupted.bin', remoteHome + '/'],
        {
          env: { PATH: process.env.PATH, ...env, ...viaSlow },
          cwd: work,
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
      // Interrupt once bytes are moving (its transfer record shows it running with progress).
      await expect
        .poll(
          async () =>
            (await listTransfers(env)).some(
              (r) => r.pid === child.pid && r.state === 'running' && r.bytesDone > 0,
            ),
          { timeout: 20_000, interval: 50 },
        )
        .toBe(true);
      child.kill('SIGINT');
      expect(await exited, stderr).toBe(ExitCode.Interrupted);
      expect(stderr).toContain('interrupted');
      const record = (await listTransfers(env)).find((r) => r.pid === child.pid);
      expect(record?.state).toBe('interrupted');
      const resumeFile = uploadResumeFile(
        env,
        slow.url,
        path.join(work, 'interrupted.bin'),
        `${remoteHome}/interrupted.bin`,
      );
      const saved = JSON.parse(await fs.readFile(resumeFile, 'utf8')) as { sessionId: string };
      const resumed = await tribInProcess(['put', 'interrupted.bin', remoteHome + '/'], {
        env: { ...env, ...viaSlow },
        cwd: work,
      });
      expect(resumed.code, resumed.stderr).toBe(0);
      expect((await site.asToken(token).get(`/api/v1/uploads/${saved.sessionId}`)).status).toBe(404);
      const entry = (await ok('stat', '--json', 'interrupted.bin')).json<EntryDetailDto>();
      expect(entry.checksum).toBe(`sha256:${sha256Hex(data)}`);
    });

    it('prints shell completion', async () => {
      const bash = await run(['completion', 'bash']);
      expect(bash.code).toBe(0);
      expect(bash.stdout).toContain('complete -o default -F _trib trib');
      expect(bash.stdout).toMatch(/"conflicts"\) words="[^"]*decide/);
    });
  });
});
