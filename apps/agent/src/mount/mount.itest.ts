import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { EntryDetailDto } from '@tributary/shared';
import { parseRequestCounts } from '@tributary/testkit';
import { describe, expect, it } from 'vitest';
import {
  GiB,
  MAIN,
  MiB,
  ok,
  q,
  sh,
  startMount,
  stopMount,
  TRIB,
  until,
  useMountedFederation,
  mounted,
  type Federation,
  type FederationSite,
  type MountProcess,
  type Run,
} from '../testing/mount-harness';
import { readMountStates } from './index';

/** Real FUSE mounts of a real two-site federation: see testing/mount-harness.ts. */

describe('FUSE mount of the namespace', () => {
  let fed: Federation;
  let lsu: FederationSite;
  let tulane: FederationSite;
  let mount: MountProcess | undefined;
  let mnt: string;
  let scratch: string;

  useMountedFederation(
    {
      federation: { ids: ['lsu', 'tulane'], cycleSeconds: 1 },
      // A long TTL: only the change feed can make changes from elsewhere show up in time.
      mount: { cacheTtlMs: 600_000 },
      scratchPrefix: 'tributary-mount-scratch-',
    },
    (suite) => {
      ({ fed, mount, scratch } = suite);
      lsu = fed.site('lsu');
      tulane = fed.site('tulane');
      mnt = suite.mount.mountpoint;
    },
  );

  /** Writes a file through a site's API, not through the mount. */
  function putFile(site: FederationSite, p: string, body: string, query: Record<string, string> = {}) {
    return site.http.request('PUT', '/api/v1/data', {
      query: { path: p, ...query },
      headers: { 'content-type': 'application/octet-stream' },
      body,
    });
  }

  async function stat(site: FederationSite, p: string) {
    return site.http.get<EntryDetailDto>('/api/v1/namespace/stat', { query: { path: p } });
  }

  it('reports itself in its state file', async () => {
    const state = await until('state mounted', async () => {
      const s = await mount!.state();
      return s?.state === 'mounted' ? s : undefined;
    });
    expect(state).toMatchObject({ pid: mount!.child.pid, mountpoint: mnt, remote: '/', site: lsu.url });
  });

  it('copies a 256 MiB file in and out with equal checksums', async () => {
    const src = path.join(scratch, 'src.bin');
    const out = path.join(scratch, 'out.bin');
    await ok(`head -c ${256 * MiB} /dev/urandom > ${q(src)}`);
    await ok(`mkdir -p ${q(mnt + '/data')} && cp ${q(src)} ${q(mnt + '/data/big.bin')}`, 180_000);
    const entry = await stat(lsu, '/data/big.bin');
    expect(entry.status).toBe(200);
    expect(entry.body.size).toBe(256 * MiB);
    await ok(`cp ${q(mnt + '/data/big.bin')} ${q(out)}`, 180_000);
    const sums = await ok(`sha256sum ${q(src)} ${q(out)} ${q(mnt + '/data/big.bin')}`, 180_000);
    const hashes = sums
      .trim()
      .split('\n')
      .map((l) => l.split(' ')[0]);
    expect(hashes).toHaveLength(3);
    expect(new Set(hashes).size).toBe(1);
    expect(entry.body.checksum).toContain(hashes[0]);
    const state = await mount!.state();
    expect(state?.stats.bytesWritten).toBeGreaterThanOrEqual(256 * MiB);
  }, 300_000);

  it('supports ls, mkdir -p, mv, rm and rmdir', async () => {
    await ok(`mkdir -p ${q(mnt + '/work/a/b/c')}`);
    expect((await stat(lsu, '/work/a/b/c')).body.kind).toBe('collection');
    await ok(`echo hello > ${q(mnt + '/work/a/b/c/f.txt')}`);
    expect((await ok(`ls ${q(mnt + '/work/a/b/c')}`)).trim()).toBe('f.txt');
    expect((await ok(`cat ${q(mnt + '/work/a/b/c/f.txt')}`)).trim()).toBe('hello');
    expect(await ok(`ls -l ${q(mnt + '/work/a/b/c')}`)).toMatch(/-rw-r--r--.* 6 .*f\.txt/);

    await ok(`mv ${q(mnt + '/work/a/b/c/f.txt')} ${q(mnt + '/work/g.txt')}`);
    expect((await stat(lsu, '/work/g.txt')).status).toBe(200);
    expect((await stat(lsu, '/work/a/b/c/f.txt')).status).toBe(404);
    expect((await ok(`ls ${q(mnt + '/work')}`)).split('\n').filter(Boolean).sort()).toEqual(['a', 'g.txt']);

    await ok(`mv ${q(mnt + '/work/a/b')} ${q(mnt + '/work/a/renamed')}`);
    expect((await stat(lsu, '/work/a/renamed/c')).body.kind).toBe('collection');
    expect((await ok(`ls ${q(mnt + '/work/a')}`)).trim()).toBe('renamed');

    // Overwriting an existing file through the mount makes new versions: the shell's `>` closes its
    // first descriptor before writing, which commits the emptied file (close-to-open), then the write.
    await ok(`echo again > ${q(mnt + '/work/g.txt')}`);
    const g = await stat(lsu, '/work/g.txt');
    expect(g.body.size).toBe(6);
    expect(g.body.version).toBeGreaterThanOrEqual(2);
    expect((await ok(`cat ${q(mnt + '/work/g.txt')}`)).trim()).toBe('again');

    const rmdir = await sh(`rmdir ${q(mnt + '/work/a')}`);
    expect(rmdir.code).not.toBe(0);
    expect(rmdir.stderr).toMatch(/not empty/i);
    await ok(`rm ${q(mnt + '/work/g.txt')}`);
    expect((await stat(lsu, '/work/g.txt')).status).toBe(404);
    await ok(`rmdir ${q(mnt + '/work/a/renamed/c')}`);
    expect((await stat(lsu, '/work/a/renamed/c')).status).toBe(404);
    const df = await ok(`df -k ${q(mnt)}`);
    expect(df).toContain(mnt);
  }, 120_000);

  it('changes existing files in place: r+b seek/write with read-back, >> append, truncate -s, ftruncate', async () => {
    const local = path.join(scratch, 'in-place.bin');
    const remote = mnt + '/patch/in-place.bin';
    const both = async (command: (file: string) => string): Promise<[string, string]> => [
      await ok(command(local)),
      await ok(command(remote)),
    ];
    const sha = async (file: string) => (await ok(`sha256sum ${q(file)}`)).split(' ')[0]!;
    /** The local file and the one behind the mount hold the same bytes, also as the API reports them. */
    const same = async (version: number): Promise<void> => {
      const expected = await sha(local);
      expect(await sha(remote)).toBe(expected);
      const entry = await stat(lsu, '/patch/in-place.bin');
      expect(entry.body).toMatchObject({ checksum: `sha256:${expected}`, version });
      expect(entry.body.size).toBe((await fs.stat(local)).size);
    };
    await ok(`head -c ${3 * MiB + 123} /dev/urandom > ${q(local)}`);
    await ok(`mkdir -p ${q(mnt + '/patch')} && cp ${q(local)} ${q(remote)}`);
    await same(1);

    // Python's r+b: writes in the middle, read back through the same handle before closing.
    const script = [
      'import sys',
      'f = open(sys.argv[1], "r+b")',
      `f.seek(${MiB + 5}); f.write(b"X" * 1000)`,
      'f.seek(7); f.write(b"hello")',
      `f.seek(${MiB}); print(f.read(2000).hex())`,
      'f.seek(0); print(f.read(20).hex())',
      'f.close()',
    ].join('\n');
    const [localRead, remoteRead] = await both((file) => `python3 -c ${q(script)} ${q(file)}`);
    expect(remoteRead).toBe(localRead);
    await same(2);

    // Appending with the shell, then truncating shorter and longer (zeros past the old end).
    await both((file) => `printf 'appended line\\n' >> ${q(file)}`);
    await same(3);
    await both((file) => `truncate -s ${2 * MiB + 1} ${q(file)}`);
    await same(4);
    await both((file) => `truncate -s ${5 * MiB} ${q(file)}`);
    await same(5);

    // ftruncate through a handle, then writes past the new end, and dd into the middle.
    const cut = [
      'import os, sys',
      'fd = os.open(sys.argv[1], os.O_RDWR)',
      'os.ftruncate(fd, 100)',
      'os.pwrite(fd, b"z" * 10, 300)',
      'print(os.pread(fd, 400, 0).hex())',
      'os.fsync(fd)',
      'os.pwrite(fd, b"after fsync", 50)',
      'os.close(fd)',
    ].join('\n');
    const [localCut, remoteCut] = await both((file) => `python3 -c ${q(cut)} ${q(file)}`);
    expect(remoteCut).toBe(localCut);
    // fsync committed one version, close the next.
    await same(7);
    await both((file) => `printf 'DD' | dd of=${q(file)} bs=1 seek=20 conv=notrunc status=none`);
    await same(8);

    // A new file written out of order ('w+b', seek back to fill in a header, read it back).
    const header = [
      'import sys',
      'f = open(sys.argv[1], "w+b")',
      'f.write(b"." * 4096); f.write(b"body" * 1000)',
      'f.seek(0); f.write(b"HEADER")',
      'f.seek(0); print(f.read(10).hex())',
      'f.close()',
    ].join('\n');
    const newLocal = path.join(scratch, 'out-of-order.bin');
    const newRemote = mnt + '/patch/out-of-order.bin';
    expect(await ok(`python3 -c ${q(header)} ${q(newRemote)}`)).toBe(
      await ok(`python3 -c ${q(header)} ${q(newLocal)}`),
    );
    expect(await sha(newRemote)).toBe(await sha(newLocal));
    expect((await stat(lsu, '/patch/out-of-order.bin')).body.checksum).toBe(`sha256:${await sha(newLocal)}`);
  }, 180_000);

  it('commits empty and truncated files at close, as a local disk does (issue 25, item 1)', async () => {
    await ok(`mkdir -p ${q(mnt + '/empty')} ${q(scratch + '/empty')}`);
    /** The same shell sequence in a local directory and on the mount: equal output and exit status. */
    const alike = async (script: string): Promise<string> => {
      const local = await sh(`cd ${q(scratch + '/empty')} && ${script}`);
      const mounted = await sh(`cd ${q(mnt + '/empty')} && ${script}`);
      expect(mounted, script).toEqual(local);
      return mounted.stdout;
    };
    // Emptied with `: >`, then appended to at once: before, the append was lost (the empty object was
    // committed by release, after close had returned, and replaced it).
    for (let i = 0; i < 5; i++) {
      expect(await alike(`printf 'old\\n' > f${i}; : > f${i}; echo new >> f${i}; cat f${i}`)).toBe('new\n');
    }
    // A file made by touch exists when touch returns (before: "No such file or directory").
    expect(await alike('touch g; echo x >> g; cat g')).toBe('x\n');
    expect(await alike('touch h; cat h; echo "[$?]"')).toBe('[0]\n');
    // Emptied and grown again by truncate: 50 zero bytes (before: EIO at close).
    expect(
      await alike(
        'printf abc > t; truncate -s 0 t; truncate -s 50 t; od -An -c t | tr -s " \\n" " "; stat -c %s t',
      ),
    ).toContain('50');
    const entry = await stat(lsu, '/empty/t');
    expect(entry.body.size).toBe(50);
  });

  it('keeps open files usable when they are unlinked or renamed, and shares one view among descriptors (issue 25, item 2)', async () => {
    await ok(`mkdir -p ${q(mnt + '/open')} ${q(scratch + '/open')}`);
    // Each step prints what it saw; the same script in a local directory and on the mount must print
    // the same. Before: TemporaryFile raised FileNotFoundError, a read after unlink gave ENOENT, an
    // unlinked file being written came back at close, a second open of a written file was ENOENT.
    const script = [
      'import os, sys, tempfile',
      'd = sys.argv[1]; os.chdir(d)',
      'def say(*a): print(*a, flush=True)',
      // TemporaryFile: O_TMPFILE, or create then unlink at once, written and read through the descriptor.
      'with tempfile.TemporaryFile(dir=d) as t:',
      '    t.write(b"scratch " * 1000); t.seek(0); say("tmp", len(t.read()), t.read() == b"")',
      '    t.seek(8); t.write(b"X"); t.seek(0); say("tmp2", t.read(10))',
      'say("tmpleft", sorted(n for n in os.listdir(d) if not n.startswith(".fuse_hidden")))',
      // Reading a committed file after unlink, through the descriptor opened before.
      'open("r", "wb").write(b"read me\\n" * 100)',
      'f = open("r", "rb"); say("r1", f.read(8)); os.unlink("r"); say("exists", os.path.exists("r"))',
      'say("r2", f.read(8), len(f.read())); f.close(); say("gone", os.path.exists("r"))',
      // Unlinking a file that is being written: it stays writable and readable, and does not come back.
      'w = open("w", "w+b"); w.write(b"one"); os.unlink("w"); w.write(b"two"); w.flush()',
      'w.seek(0); say("w", w.read()); w.close(); say("wback", os.path.exists("w"))',
      // A second descriptor sees the first one\'s writes once they returned (after fsync, and without).
      'a = open("s", "wb"); a.write(b"shared"); a.flush(); os.fsync(a.fileno())',
      'b = open("s", "rb"); say("s1", b.read())',
      'a.write(b" more"); a.flush(); b.seek(0); say("s2", b.read()); a.close(); b.close()',
      'say("s3", open("s", "rb").read())',
      // Renamed while open for writing: writes after the rename land in the new name.
      'm = open("m", "wb"); m.write(b"before "); os.rename("m", "m2"); m.write(b"after"); m.close()',
      'say("m", os.path.exists("m"), open("m2", "rb").read())',
      // Renamed over while open for reading: the reader keeps the old content.
      'open("old", "wb").write(b"old content"); open("new", "wb").write(b"new content")',
      'o = open("old", "rb"); os.rename("new", "old"); say("o", o.read()); o.close()',
      'say("o2", open("old", "rb").read(), sorted(n for n in os.listdir(d) if not n.startswith(".fuse_hidden")))',
    ].join('\n');
    await fs.writeFile(path.join(scratch, 'open-files.py'), script);
    const run = (dir: string) => sh(`python3 ${q(path.join(scratch, 'open-files.py'))} ${q(dir)}`);
    const local = await run(scratch + '/open');
    expect(local.code, local.stderr).toBe(0);
    const mounted = await run(mnt + '/open');
    expect(mounted, mount!.output().slice(-2000)).toEqual(local);
    // Nothing left behind once every descriptor is closed (the hidden names of unlinked files included).
    await until('hidden files removed', async () => {
      const names = (await ok(`ls -A ${q(mnt + '/open')}`)).split('\n').filter(Boolean).sort();
      return names.join(',') === 'm2,old,s' ? true : undefined;
    });
  });

  it('keeps symbolic links, file times and permission bits, as tar, cp -a and rsync -a need (issue 25, items 3 and 4)', async () => {
    // A tree with links (relative, absolute, dangling, to a folder), modes and old times, made locally.
    const src = path.join(scratch, 'attrs-src');
    await ok(
      [
        `rm -rf ${q(src)} && mkdir -p ${q(src + '/bin')} ${q(src + '/share/doc')}`,
        `cd ${q(src)}`,
        `printf '#!/bin/sh\\necho ran\\n' > bin/tool && chmod 755 bin/tool`,
        `echo secret > share/private && chmod 600 share/private`,
        `echo docs > share/doc/readme`,
        'ln -s ../bin/tool share/tool-link && ln -s /etc/hostname abs-link && ln -s nowhere dangling && ln -s share/doc doc-link',
        `touch -d '2020-01-02 03:04:05' share/doc/readme bin/tool`,
        `touch -h -d '2021-05-06 07:08:09' share/tool-link`,
      ].join(' && '),
    );
    // What a listing shows of each entry: type, permission bits, mtime in seconds, size, link target.
    const describe = (dir: string) =>
      ok(
        `cd ${q(dir)} && find . -mindepth 1 \\( -type l -printf '%p %y %Y %l\\n' \\) -o \\( -type f -printf '%p %y %m %T@ %s\\n' \\) | sed 's/\\.[0-9]* / /' | sort`,
      );
    const expected = await describe(src);
    expect(expected).toContain('./share/tool-link l f ../bin/tool');
    /** The same without file times (see the tar step). */
    const untimed = (listing: string) =>
      listing
        .split('\n')
        .map((l) => (/^\S+ f /.test(l) ? l.replace(/ \d+ (\d+)$/, ' $1') : l))
        .join('\n');

    // tar -xf (before: every link "Function not implemented", modes dropped). Its file times are not
    // kept: tar sets them with atime UTIME_OMIT, and libfuse 2.9 passes a time change on only when
    // both times are given (docs/mount.md, Limits); cp's and rsync's are (below), and touch's.
    await ok(`tar -C ${q(src)} -cf ${q(scratch + '/attrs.tar')} .`);
    await ok(
      `mkdir -p ${q(mnt + '/attrs/tar')} && tar -C ${q(mnt + '/attrs/tar')} -xf ${q(scratch + '/attrs.tar')}`,
    );
    expect(untimed(await describe(mnt + '/attrs/tar'))).toBe(untimed(expected));
    expect(await ok(`readlink ${q(mnt + '/attrs/tar/share/tool-link')}`)).toBe('../bin/tool\n');
    await ok(`touch -h -d '2021-05-06 07:08:09' ${q(mnt + '/attrs/tar/share/tool-link')}`);
    expect(await ok(`stat -c '%F %Y' ${q(mnt + '/attrs/tar/share/tool-link')}`)).toBe(
      `symbolic link ${Date.parse('2021-05-06T07:08:09') / 1000}\n`,
    );
    // Followed by the kernel, on the mount: through a link to a file and to a folder.
    expect(await ok(`cat ${q(mnt + '/attrs/tar/share/tool-link')}`)).toContain('echo ran');
    expect(await ok(`cat ${q(mnt + '/attrs/tar/doc-link/readme')}`)).toBe('docs\n');
    // The execute bit survives: the script runs from the mount.
    expect(await ok(`${q(mnt + '/attrs/tar/bin/tool')}`)).toBe('ran\n');

    // cp -a and a second rsync -a that finds nothing to send (before: every file was sent again).
    await ok(`cp -a ${q(src)} ${q(mnt + '/attrs/cp')}`);
    expect(await describe(mnt + '/attrs/cp')).toBe(expected);
    await ok(`rsync -a ${q(src + '/')} ${q(mnt + '/attrs/rsync/')}`);
    expect(await describe(mnt + '/attrs/rsync')).toBe(expected);
    const again = await ok(`rsync -a --itemize-changes ${q(src + '/')} ${q(mnt + '/attrs/rsync/')}`);
    expect(again.split('\n').filter((l) => /^[<>c]f/.test(l))).toEqual([]);

    // chmod and touch on files already in the catalog; another site sees them, and the link.
    await ok(`chmod 640 ${q(mnt + '/attrs/tar/share/doc/readme')}`);
    await ok(`touch -d '2019-09-09 09:09:09' ${q(mnt + '/attrs/tar/share/doc/readme')}`);
    expect(await ok(`stat -c '%a %Y' ${q(mnt + '/attrs/tar/share/doc/readme')}`)).toBe(
      `640 ${Date.parse('2019-09-09T09:09:09') / 1000}\n`,
    );
    await until('the attributes and the link at tulane', async () => {
      const [readme, link] = await Promise.all([
        stat(tulane, '/attrs/tar/share/doc/readme'),
        stat(tulane, '/attrs/tar/share/tool-link'),
      ]);
      return readme.body.mode === 0o640 &&
        Date.parse(readme.body.mtime) === Date.parse('2019-09-09T09:09:09') &&
        link.body.kind === 'symlink' &&
        link.body.linkTarget === '../bin/tool'
        ? true
        : undefined;
    });

    // Opened for writing and closed, or given one time only (touch -a, touch -m: the other is
    // UTIME_OMIT, which libfuse 2 drops with the whole call, docs/mount.md, Limits): the file keeps its
    // time, before and after the close. Before, the open file showed the time it was opened.
    const readme = q(mnt + '/attrs/tar/share/doc/readme');
    const dated = `${Date.parse('2019-09-09T09:09:09') / 1000}\n`;
    expect(await ok(`exec 3>>${readme}; stat -c '%Y' ${readme}; exec 3>&-`)).toBe(dated);
    await ok(`touch -a -d @1900000000 ${readme}`);
    expect(await ok(`stat -c '%Y' ${readme}`)).toBe(dated);
    await ok(`touch -m -d @1950000000 ${readme}`);
    expect(await ok(`stat -c '%Y' ${readme}`)).toBe(dated);
    // A truncation is a change: the time moves on.
    await ok(`truncate -s 3 ${readme}`);
    expect(Number(await ok(`stat -c '%Y' ${readme}`))).toBeGreaterThan(Date.now() / 1000 - 60);

    // Hard links stay unsupported, with the errno of file systems without them; chown is accepted.
    const link = await sh(`ln ${q(mnt + '/attrs/tar/bin/tool')} ${q(mnt + '/attrs/tar/bin/hard')}`);
    expect(link.code).not.toBe(0);
    expect(link.stderr).toMatch(/Operation not permitted/);
    await ok(`chown 12345:12345 ${q(mnt + '/attrs/tar/bin/tool')}`);
  }, 120_000);

  it('answers each refusal with the errno of a local file system: EROFS, EACCES, EEXIST, ENOTEMPTY (issue 25, item 6)', async () => {
    await ok(
      `mkdir -p ${q(mnt + '/errs/inside/full')} ${q(mnt + '/errs/outside')} ${q(mnt + '/errs/empty')}`,
    );
    await ok(`echo x > ${q(mnt + '/errs/outside/f')} && echo y > ${q(mnt + '/errs/inside/full/g')}`);
    const tokenFor = async (body: Record<string, string>) =>
      (await lsu.http.post<{ secret: string }>('/api/v1/tokens', { name: `errs-${body.scope}`, ...body }))
        .body.secret;
    /** Runs a Python snippet that prints the errno name each call ends with ('ok' if none). */
    const errnos = (calls: string[]) =>
      ok(
        `python3 -c ${q(
          [
            'import errno, os, sys',
            'def t(f):',
            '    try: f(); print("ok")',
            '    except OSError as e: print(errno.errorcode[e.errno])',
            ...calls.map((c) => `t(lambda: ${c})`),
          ].join('\n'),
        )}`,
      );
    const lines = (text: string) => text.trim().split('\n');

    // A read-only token: reading works, every change is EROFS (before: EACCES, as for a permission).
    const readOnly = await startMount(lsu.url, await tokenFor({ scope: 'read' }), { remote: '/errs' });
    try {
      const r = readOnly.mountpoint;
      expect(await ok(`cat ${q(r + '/outside/f')}`)).toBe('x\n');
      expect(
        lines(
          await errnos([
            `open(${JSON.stringify(r + '/outside/new')}, "w").close()`,
            `os.mkdir(${JSON.stringify(r + '/outside/d')})`,
            `os.unlink(${JSON.stringify(r + '/outside/f')})`,
            `os.rename(${JSON.stringify(r + '/outside/f')}, ${JSON.stringify(r + '/outside/f2')})`,
            `os.symlink("f", ${JSON.stringify(r + '/outside/l')})`,
          ]),
        ),
      ).toEqual(['EROFS', 'EROFS', 'EROFS', 'EROFS', 'EROFS']);
    } finally {
      await stopMount(readOnly);
    }

    // A user who may read /errs and write only /errs/inside: changes elsewhere are EACCES.
    const username = `reader${Date.now() % 100000}`;
    const password = 'a long enough passphrase 42';
    expect((await lsu.http.post('/api/v1/users', { username, password, isAdmin: false })).status).toBe(201);
    for (const [grantPath, level] of [
      ['/errs', 'read'],
      ['/errs/inside', 'write'],
    ])
      expect(
        (
          await lsu.http.request('PUT', '/api/v1/permissions', {
            json: { path: grantPath, user: username, level },
          })
        ).status,
      ).toBe(200);
    const login = await fetch(`${lsu.url}/api/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username, password }),
    });
    const session = (await login.json()) as { csrfToken: string };
    const cookie = login.headers
      .getSetCookie()
      .map((c) => c.split(';')[0])
      .join('; ');
    const created = await fetch(`${lsu.url}/api/v1/tokens`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', cookie, 'x-csrf-token': session.csrfToken },
      body: JSON.stringify({ name: 'errs', scope: 'write' }),
    });
    expect(created.status).toBe(201);
    const reader = await startMount(lsu.url, ((await created.json()) as { secret: string }).secret, {
      remote: '/errs',
    });
    try {
      const c = reader.mountpoint;
      expect(
        lines(
          await errnos([
            `open(${JSON.stringify(c + '/inside/new')}, "w").close()`,
            `open(${JSON.stringify(c + '/outside/new')}, "w").close()`,
            `os.mkdir(${JSON.stringify(c + '/outside/d')})`,
            `os.unlink(${JSON.stringify(c + '/outside/f')})`,
          ]),
        ),
      ).toEqual(['ok', 'EACCES', 'EACCES', 'EACCES']);
    } finally {
      await stopMount(reader);
    }

    // Names taken and folders not empty, as a local disk answers them.
    const base = mnt + '/errs';
    expect(
      lines(
        await errnos([
          `os.mkdir(${JSON.stringify(base + '/outside')})`,
          `os.symlink("x", ${JSON.stringify(base + '/outside/f')})`,
          `os.rmdir(${JSON.stringify(base + '/inside')})`,
          `os.rename(${JSON.stringify(base + '/empty')}, ${JSON.stringify(base + '/inside')})`,
          `os.link(${JSON.stringify(base + '/outside/f')}, ${JSON.stringify(base + '/outside/h')})`,
        ]),
      ),
    ).toEqual(['EEXIST', 'EEXIST', 'ENOTEMPTY', 'ENOTEMPTY', 'EPERM']);
  }, 120_000);

  it('refuses names the namespace does not allow with ENAMETOOLONG and EINVAL, not EIO (issue 25, item 6)', async () => {
    await ok(`mkdir -p ${q(mnt + '/names')}`);
    const script = [
      'import errno, os, sys',
      'for name in ["a" * 256, "line\\nbreak", "ok.txt"]:',
      '    try:',
      '        open(os.path.join(sys.argv[1], name), "w").close()',
      '        print("created")',
      '    except OSError as e:',
      '        print(errno.errorcode[e.errno])',
    ].join('\n');
    const out = await ok(`python3 -c ${q(script)} ${q(mnt + '/names')}`);
    expect(out.trim().split('\n')).toEqual(['ENAMETOOLONG', 'EINVAL', 'created']);
  });

  it('shows a write made at another site, through the change feed', async () => {
    await ok(`mkdir -p ${q(mnt + '/shared')}`);
    // Listed (and cached for ten minutes) before the other site writes.
    expect((await ok(`ls ${q(mnt + '/shared')}`)).trim()).toBe('');
    await fed.waitForConvergence(30_000);
    const put = await putFile(tulane, '/shared/from-tulane.txt', 'written at tulane\n');
    expect(put.status).toBe(201);
    const listing = await until('the file from tulane in the mount', async () => {
      const out = (await sh(`ls ${q(mnt + '/shared')}`)).stdout;
      return out.includes('from-tulane.txt') ? out : undefined;
    });
    expect(listing.trim()).toBe('from-tulane.txt');
    // Its bytes are at tulane; lsu fetches them.
    expect(await ok(`cat ${q(mnt + '/shared/from-tulane.txt')}`)).toBe('written at tulane\n');

    // A new version made there shows up here too (size and content).
    const again = await putFile(tulane, '/shared/from-tulane.txt', 'version two, longer\n', {
      overwrite: 'true',
    });
    expect(again.status).toBe(200);
    await until('the new version in the mount', async () => {
      const out = (await sh(`cat ${q(mnt + '/shared/from-tulane.txt')}`)).stdout;
      return out === 'version two, longer\n' ? out : undefined;
    });
  }, 120_000);

  /** The site's request counters (its /metrics histogram), by "METHOD route status". */
  async function requests(site: FederationSite): Promise<Map<string, number>> {
    const res = await site.http.request('GET', '/metrics');
    expect(res.status).toBe(200);
    return new Map([...parseRequestCounts(res.text)].map(([key, { count }]) => [key, count]));
  }
  const grew = (before: Map<string, number>, after: Map<string, number>, key: string): number =>
    (after.get(key) ?? 0) - (before.get(key) ?? 0);

  it('extracts a tarball of many files without asking the site about the new names, and reads them back many to a request (issue 25, item 7)', async () => {
    const src = path.join(scratch, 'tree');
    await ok(
      `mkdir -p ${q(src)} && cd ${q(src)} && for d in a b c; do mkdir -p $d/deeper; ` +
        `for i in $(seq 1 40); do head -c $((i * 97)) /dev/urandom > $d/f$i; ` +
        `head -c 100 /dev/urandom > $d/deeper/g$i; done; done`,
    );
    const tarball = path.join(scratch, 'tree.tar');
    await ok(`tar -cf ${q(tarball)} -C ${q(src)} .`);
    await ok(`mkdir ${q(mnt + '/extract')}`);
    const before = await requests(lsu);
    await ok(`tar -xf ${q(tarball)} -C ${q(mnt + '/extract')}`, 180_000);
    const after = await requests(lsu);
    // 240 files in 6 directories: each name answered from the listing the mount keeps.
    expect(grew(before, after, 'PUT /api/v1/data 201')).toBe(240);
    expect(grew(before, after, 'POST /api/v1/namespace/collections 201')).toBe(6);
    expect(grew(before, after, 'GET /api/v1/namespace/stat 404')).toBeLessThanOrEqual(2);
    expect(grew(before, after, 'GET /api/v1/namespace/children 200')).toBe(0);
    const diff = await sh(`diff -r ${q(src)} ${q(mnt + '/extract')}`);
    expect(diff.stdout + diff.stderr).toBe('');
    // The site has them all, as the mount lists them.
    const listed = await lsu.http.get<{ items: { name: string }[] }>('/api/v1/namespace/children', {
      query: { path: '/extract/b', limit: '1000' },
    });
    expect(listed.body.items.map((i) => i.name).sort()).toEqual(
      (await ok(`ls ${q(mnt + '/extract/b')}`)).split('\n').filter(Boolean).sort(),
    );

    // Read back, small files many to a request (POST /api/v1/data/batch-read), not one GET each.
    const back = path.join(scratch, 'back');
    const readBefore = await requests(lsu);
    await ok(`mkdir ${q(back)} && tar -cf - -C ${q(mnt + '/extract')} . | tar -xf - -C ${q(back)}`, 180_000);
    const readAfter = await requests(lsu);
    const diffBack = await sh(`diff -r ${q(src)} ${q(back)}`);
    expect(diffBack.stdout + diffBack.stderr).toBe('');
    const batches = grew(readBefore, readAfter, 'POST /api/v1/data/batch-read 200');
    const gets = [...readAfter.keys()]
      .filter((k) => k.startsWith('GET /api/v1/data '))
      .reduce((n, k) => n + grew(readBefore, readAfter, k), 0);
    expect(batches).toBeGreaterThanOrEqual(6);
    expect(batches + gets).toBeLessThanOrEqual(24);
  }, 240_000);

  it('lists a file another writer adds to a folder while the mount writes there (the echo race)', async () => {
    const dir = '/echo-race';
    await ok(`mkdir ${q(mnt + dir)} && ls ${q(mnt + dir)}`);
    // The mount's writes and the other writer's (the same site: its events carry no origin, as the
    // mount's own echoes do) interleave; the listing is kept for ten minutes, so only the change
    // feed can bring the other writer's files into it.
    const n = 40;
    const mountWrites = ok(
      `for i in $(seq 1 ${n}); do echo m$i > ${q(mnt + dir)}/m$i; ls ${q(mnt + dir)} > /dev/null; done`,
      120_000,
    );
    const otherWrites = (async () => {
      for (let i = 1; i <= n; i++) {
        const res = await putFile(lsu, `${dir}/o${i}`, `o${i}\n`);
        expect(res.status).toBe(201);
      }
    })();
    await Promise.all([mountWrites, otherWrites]);
    const expected = [
      ...Array.from({ length: n }, (_, i) => `m${i + 1}`),
      ...Array.from({ length: n }, (_, i) => `o${i + 1}`),
    ].sort();
    const names = await until(
      'every file in the listing',
      async () => {
        const out = (await sh(`ls ${q(mnt + dir)}`)).stdout.split('\n').filter(Boolean).sort();
        return out.length === expected.length ? out : undefined;
      },
      10_000,
    );
    expect(names).toEqual(expected);
    expect(await ok(`cat ${q(mnt + dir)}/o${n}`)).toBe(`o${n}\n`);
  }, 180_000);

  it("advances a folder's mtime and ctime when entries are created, removed or renamed in it", async () => {
    const dir = mnt + '/times';
    await ok(`mkdir ${q(dir)}`);
    // Milliseconds: the mount keeps the times of the changes it makes to the millisecond.
    const times = async (): Promise<[number, number]> => {
      const [m, c] = (await ok(`stat -c '%.3Y %.3Z' ${q(dir)}`)).trim().split(' ').map(Number);
      return [m!, c!];
    };
    let last = await times();
    const advanced = async (what: string, command: string): Promise<void> => {
      await new Promise((r) => setTimeout(r, 20));
      await ok(command);
      const now = await times();
      expect(now[0], `mtime after ${what}`).toBeGreaterThan(last[0]);
      expect(now[1], `ctime after ${what}`).toBeGreaterThan(last[1]);
      last = now;
    };
    await advanced('create', `touch ${q(dir + '/f')}`);
    await advanced('write of a new file', `echo x > ${q(dir + '/g')}`);
    await advanced('rename', `mv ${q(dir + '/g')} ${q(dir + '/h')}`);
    await advanced('unlink', `rm ${q(dir + '/h')}`);
    await advanced('mkdir', `mkdir ${q(dir + '/sub')}`);
    await advanced('rmdir', `rmdir ${q(dir + '/sub')}`);
    await advanced('symlink', `ln -s f ${q(dir + '/link')}`);
    // Not by a change to an entry's content.
    await new Promise((r) => setTimeout(r, 20));
    await ok(`echo more >> ${q(dir + '/f')}`);
    expect((await times())[0]).toBe(last[0]);
    // A time set on the folder is its time.
    await ok(`touch -d @1700000000 ${q(dir)}`);
    expect((await times())[0]).toBe(1700000000);
    // A file added by another writer, through the change feed.
    const res = await putFile(lsu, '/times/elsewhere', 'x');
    expect(res.status).toBe(201);
    await until('the folder time from the change feed', async () =>
      (await times())[0] > Date.now() / 1000 - 60 ? true : undefined,
    );
    // The catalog's collection was not changed by any of it (no replicated change per file).
    const entry = await stat(lsu, '/times');
    expect(Date.parse(entry.body.mtime)).toBe(1700000000 * 1000);
  }, 120_000);

  it('changes in place a file whose bytes another site holds (the partial update is forwarded there)', async () => {
    await ok(`mkdir -p ${q(mnt + '/remote-patch')}`);
    await fed.waitForConvergence(30_000);
    const put = await putFile(tulane, '/remote-patch/held-at-tulane.txt', 'held at tulane: 0123456789\n');
    expect(put.status).toBe(201);
    await fed.waitForConvergence(30_000);
    const file = mnt + '/remote-patch/held-at-tulane.txt';
    await until('the file from tulane in the mount', async () =>
      (await sh(`cat ${q(file)}`)).stdout === 'held at tulane: 0123456789\n' ? true : undefined,
    );
    const script = 'import sys\nf = open(sys.argv[1], "r+b")\nf.seek(5); f.write(b"AT")\nf.close()';
    await ok(`python3 -c ${q(script)} ${q(file)} && printf 'more\\n' >> ${q(file)}`);
    const expected = 'held AT tulane: 0123456789\nmore\n';
    // Read back through this site once its catalog has the version made at tulane.
    await until('the changed file in the mount', async () =>
      (await sh(`cat ${q(file)}`)).stdout === expected ? true : undefined,
    );
    const atTulane = await tulane.http.request('GET', '/api/v1/data', {
      query: { path: '/remote-patch/held-at-tulane.txt' },
    });
    expect(atTulane.text).toBe(expected);
    expect((await stat(tulane, '/remote-patch/held-at-tulane.txt')).body).toMatchObject({
      version: 3,
      size: expected.length,
    });

    // cp -a over it: the file time and mode go with the forwarded update itself. Sent as a change of
    // their own after it, they met the update as a concurrent change (a conflict to decide).
    const local = path.join(scratch, 'dated.txt');
    await ok(
      `printf 'dated\n' > ${q(local)} && chmod 640 ${q(local)} && touch -d '2018-03-04 05:06:07' ${q(local)}`,
    );
    await ok(`cp -a ${q(local)} ${q(file)}`);
    const mtime = Date.parse('2018-03-04T05:06:07');
    await fed.waitForConvergence(30_000);
    for (const site of [lsu, tulane]) {
      const entry = (await stat(site, '/remote-patch/held-at-tulane.txt')).body;
      expect({ size: entry.size, mode: entry.mode, mtime: Date.parse(entry.mtime) }).toEqual({
        size: 6,
        mode: 0o640,
        mtime,
      });
      const conflicts = await site.http.get<{ items: unknown[] }>('/api/v1/conflicts');
      expect(conflicts.body.items).toEqual([]);
    }
  }, 120_000);

  // Writes a sparse object into the local resource's files: left out of the runs whose sites keep
  // their bytes in an object store (TRIBUTARY_TEST_STORAGE=s3, docs/storage.md).
  if (process.env.TRIBUTARY_TEST_STORAGE !== 's3')
    it('handles files larger than 16 GiB (attributes and reads past 16 GiB)', async () => {
      await ok(`mkdir -p ${q(mnt + '/huge')} && echo seed > ${q(mnt + '/huge/20g.bin')}`);
      const { rows } = await lsu.query<{ physical_path: string; id: string }>(
        `SELECT r.physical_path, o.id::text AS id FROM replicas r JOIN data_objects o ON o.id = r.object_id
       JOIN collections c ON c.id = o.collection_id WHERE c.path = '/huge' AND o.name = '20g.bin' AND o.trash_id = 0`,
      );
      const key = rows[0]!.physical_path;
      const shard = key.split('.')[0]!.slice(-2).padStart(2, '0');
      const file = path.join(fed.dataDir, 'sites', 'lsu', 'storage', 'objects', shard, key);
      // A sparse 20 GiB object with a marker at 17 GiB + 5 (beyond any 32-bit or 16 GiB limit).
      const size = 20 * GiB;
      const markerAt = 17 * GiB + 5;
      const handle = await fs.open(file, 'r+');
      await handle.truncate(size);
      await handle.write(Buffer.from('MARKER-PAST-16GIB'), 0, 17, markerAt);
      await handle.close();
      await lsu.query(`UPDATE data_objects SET size = $1 WHERE id = $2`, [String(size), rows[0]!.id]);
      await lsu.query(`UPDATE replicas SET size = $1 WHERE object_id = $2`, [String(size), rows[0]!.id]);

      const reported = await until('the new size in the mount', async () => {
        const out = (await sh(`stat -c %s ${q(mnt + '/huge/20g.bin')}`)).stdout.trim();
        return out === String(size) ? out : undefined;
      });
      expect(Number(reported)).toBe(size);
      const bytes = await ok(
        `dd if=${q(mnt + '/huge/20g.bin')} bs=4096 skip=${Math.floor(markerAt / 4096)} count=1 2>/dev/null | od -An -c | tr -d ' \\n'`,
      );
      expect(bytes).toContain('MARKER-PAST-16GIB');
      const tail = await ok(`tail -c 3 ${q(mnt + '/huge/20g.bin')} | od -An -tx1 | tr -d ' \\n'`);
      expect(tail).toBe('000000');
    }, 120_000);

  it('survives an API restart: EIO while the site is down, recovers by itself', async () => {
    await ok(`echo before > ${q(mnt + '/restart.txt')}`);
    await lsu.stop();
    const failed = await sh(`cat ${q(mnt + '/restart.txt')}`, 60_000);
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toMatch(/Input\/output error/);
    const mk = await sh(`mkdir ${q(mnt + '/while-down')}`, 60_000);
    expect(mk.stderr).toMatch(/Input\/output error/);
    await until('state unreachable', async () =>
      (await mount!.state())?.state === 'unreachable' ? true : undefined,
    );

    await lsu.restart();
    const content = await until(
      'the mount working again',
      async () => {
        const run = await sh(`cat ${q(mnt + '/restart.txt')}`);
        return run.code === 0 ? run.stdout : undefined;
      },
      60_000,
    );
    expect(content).toBe('before\n');
    await until('state mounted', async () =>
      (await mount!.state())?.state === 'mounted' ? true : undefined,
    );
    await ok(`echo after > ${q(mnt + '/after-restart.txt')} && cat ${q(mnt + '/after-restart.txt')}`);
    // The change feed reconnected too: a write at the other site shows up again.
    await putFile(tulane, '/shared/after-restart.txt', 'x');
    await until('a replicated write after the restart', async () =>
      (await sh(`ls ${q(mnt + '/shared')}`)).stdout.includes('after-restart.txt') ? true : undefined,
    );
  }, 180_000);

  it('unmounts cleanly on SIGTERM and removes its state file', async () => {
    const other = await startMount(lsu.url, fed.adminToken, { remote: '/shared' });
    try {
      expect((await ok(`ls ${q(other.mountpoint)}`)).split('\n')).toContain('from-tulane.txt');
      expect((await readMountStates(other.home)).map((s) => s.state)).toEqual(['mounted']);
      other.child.kill('SIGTERM');
      expect(await other.exited).toBe(0);
      expect(await mounted(other.mountpoint)).toBe(false);
      expect(await readMountStates(other.home)).toEqual([]);
    } finally {
      await stopMount(other);
    }
  }, 60_000);

  it('trib mount starts the real mount process, trib mounts lists it, trib unmount ends it', async () => {
    const home = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-trib-home-'));
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-trib-mnt-'));
    const env = `TRIBUTARY_AGENT_HOME=${q(home)} TRIBUTARY_SITE=${q(lsu.url)} TRIBUTARY_TOKEN=${q(fed.adminToken)}`;
    const trib = `${env} node ${q(TRIB)}`;
    try {
      await ok(`${trib} mount /shared ${q(dir)}`, 60_000);
      expect(await mounted(dir)).toBe(true);
      expect((await ok(`ls ${q(dir)}`)).split('\n')).toContain('from-tulane.txt');
      const listed = JSON.parse(await ok(`${trib} mounts --json`)) as Array<{
        mountpoint: string;
        state: string;
      }>;
      expect(listed).toEqual([expect.objectContaining({ mountpoint: dir, state: 'mounted' })]);

      // The mount process crashes: its mount is left behind, dead ("Transport endpoint is not
      // connected"). A new `trib mount` clears it (issue 25, item 6; before: "not a directory").
      const [crashed] = await readMountStates(home);
      process.kill(crashed!.pid, 'SIGKILL');
      await until('the mount process to be gone', async () =>
        (await sh(`kill -0 ${crashed!.pid}`)).code !== 0 ? true : undefined,
      );
      expect((await sh(`ls ${q(dir)}`)).stderr).toMatch(/not connected/i);
      await ok(`${trib} mount /shared ${q(dir)}`, 60_000);
      expect((await ok(`ls ${q(dir)}`)).split('\n')).toContain('from-tulane.txt');
      await ok(`${trib} unmount ${q(dir)}`, 60_000);
      expect(await mounted(dir)).toBe(false);
      expect(await readMountStates(home)).toEqual([]);
    } finally {
      if (await mounted(dir)) await sh(`fusermount -u -z ${q(dir)}`);
      await fs.rm(home, { recursive: true, force: true });
      await fs.rmdir(dir).catch(() => undefined);
    }
  }, 120_000);

  it('gives a clear message and exit code 3 without FUSE, 2 for bad arguments', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-nofuse-'));
    try {
      const run = (args: string[], env: Record<string, string>) =>
        new Promise<Run>((resolve) => {
          execFile(process.execPath, [MAIN, ...args], { env: { ...env } }, (err, stdout, stderr) =>
            resolve({ code: err ? Number(err.code) : 0, stdout: String(stdout), stderr: String(stderr) }),
          );
        });
      const args = ['--site', lsu.url, '--remote', '/', '--mountpoint', path.join(dir, 'mnt')];
      // No fusermount on PATH: what a machine without the `fuse` package looks like.
      const noFuse = await run(args, { PATH: path.join(dir, 'empty-bin'), TRIBUTARY_TOKEN: fed.adminToken });
      expect(noFuse.code).toBe(3);
      expect(noFuse.stderr.trim().split('\n')).toHaveLength(1);
      expect(noFuse.stderr).toMatch(/FUSE is not available: fusermount was not found/);
      expect(await mounted(path.join(dir, 'mnt'))).toBe(false);

      const env = { PATH: process.env.PATH ?? '', TRIBUTARY_TOKEN: fed.adminToken };
      expect((await run(['--site', lsu.url], env)).code).toBe(2);
      expect((await run([...args, '--buffer-mib', 'lots'], env)).code).toBe(2);
      const noToken = await run(args, { PATH: process.env.PATH ?? '' });
      expect(noToken.code).toBe(2);
      expect(noToken.stderr).toMatch(/TRIBUTARY_TOKEN/);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
