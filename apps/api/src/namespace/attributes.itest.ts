import { createHash } from 'node:crypto';
import {
  ErrorCode,
  mtimeToNs,
  type EntryDetailDto,
  type EntryDto,
  type Page,
  type TrashEntryDto,
  type TripleDto,
  type UploadSessionDto,
} from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '@tributary/testkit';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

/**
 * Symbolic links, file times and permission bits (issue 25; docs/attributes.md) through the API of
 * one site: what the mount needs to give `stat`, `readlink`, `touch -d`, `chmod` and `rsync -a`.
 */
describe('entry attributes and symbolic links', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;
  let home: string;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    home = `/home/${alice.username}`;
  });
  afterAll(async () => {
    await site?.close();
  });

  const stat = async (client: TestClient, path: string): Promise<EntryDetailDto> =>
    expectStatus(await client.get<EntryDetailDto>('/api/v1/namespace/stat', { query: { path } }), 200).body;

  async function put(
    client: TestClient,
    path: string,
    body: string,
    headers: Record<string, string> = {},
    overwrite = false,
  ) {
    return client.request<EntryDto>('PUT', '/api/v1/data', {
      query: { path, ...(overwrite ? { overwrite: 'true' } : {}) },
      headers: { 'content-type': 'application/octet-stream', ...headers },
      body,
    });
  }

  async function dir(name: string): Promise<string> {
    const path = `${home}/${uniqueName(name)}`;
    expectStatus(await alice.client.post('/api/v1/namespace/collections', { path }), 201);
    return path;
  }

  const symlink = (client: TestClient, path: string, target: string, extra: object = {}) =>
    client.post<EntryDto>('/api/v1/namespace/symlinks', { path, target, ...extra });

  const attributes = (client: TestClient, body: object) =>
    client.patch<EntryDto>('/api/v1/namespace/attributes', body);

  const nowNs = (): bigint => BigInt(Date.now()) * 1_000_000n;
  const SECOND = 1_000_000_000n;

  describe('file times and modes', () => {
    it('new entries: objects 0644, collections 0755, file time now', async () => {
      const d = await dir('defaults');
      const before = nowNs();
      const file = expectStatus(await put(alice.client, `${d}/a.txt`, 'hello'), 201).body;
      expect(file).toMatchObject({ kind: 'object', mode: 0o644, linkTarget: null });
      expect(mtimeToNs(file.mtime)).toBeGreaterThanOrEqual(before - SECOND);
      expect(mtimeToNs(file.mtime)).toBeLessThanOrEqual(nowNs() + SECOND);
      expect(file.mtime).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{9}Z$/);
      const folder = await stat(alice.client, d);
      expect(folder).toMatchObject({ kind: 'collection', mode: 0o755, linkTarget: null });
      expect((await stat(alice.client, `${d}/a.txt`)).mtime).toBe(file.mtime);
    });

    it('PUT takes mtime and mode with the bytes; a new version without them moves mtime to now and keeps the mode', async () => {
      const d = await dir('put');
      const created = expectStatus(
        await put(alice.client, `${d}/run.sh`, '#!/bin/sh\n', {
          'x-tributary-mtime': '2001-02-03T04:05:06.123456789Z',
          'x-tributary-mode': '755',
        }),
        201,
      ).body;
      expect(created).toMatchObject({ mode: 0o755, mtime: '2001-02-03T04:05:06.123456789Z' });
      expect(await stat(alice.client, `${d}/run.sh`)).toMatchObject({
        mode: 0o755,
        mtime: '2001-02-03T04:05:06.123456789Z',
      });
      // Milliseconds since 1970 work too, and a mode given with a new version replaces the old one.
      const v2 = expectStatus(
        await put(
          alice.client,
          `${d}/run.sh`,
          'echo 2\n',
          { 'x-tributary-mtime': '981173106000', 'x-tributary-mode': '0700' },
          true,
        ),
        200,
      ).body;
      expect(v2).toMatchObject({ version: 2, mode: 0o700, mtime: '2001-02-03T04:05:06.000000000Z' });
      const before = nowNs();
      const v3 = expectStatus(await put(alice.client, `${d}/run.sh`, 'echo 3\n', {}, true), 200).body;
      expect(v3.version).toBe(3);
      expect(v3.mode).toBe(0o700);
      expect(mtimeToNs(v3.mtime)).toBeGreaterThanOrEqual(before - SECOND);
    });

    it('PATCH /namespace/attributes sets mtime and/or mode of objects and collections, and replies with the entry', async () => {
      const d = await dir('patch');
      const file = expectStatus(await put(alice.client, `${d}/f`, 'x'), 201).body;
      const touched = expectStatus(
        await attributes(alice.client, { path: `${d}/f`, mtime: '1960-01-01T00:00:00.000000001Z' }),
        200,
      ).body;
      expect(touched).toMatchObject({ mtime: '1960-01-01T00:00:00.000000001Z', mode: 0o644, version: 1 });
      expect(touched.checksum).toBe(file.checksum);
      // The catalog's own time moves; the file time is what was set.
      expect(Date.parse(touched.modifiedAt)).toBeGreaterThanOrEqual(Date.parse(file.modifiedAt));
      const chmod = expectStatus(await attributes(alice.client, { path: `${d}/f`, mode: '4755' }), 200).body;
      expect(chmod).toMatchObject({ mode: 0o4755, mtime: '1960-01-01T00:00:00.000000001Z' });
      const both = expectStatus(
        await attributes(alice.client, { path: `${d}/f`, mode: 0o600, mtime: 1_000 }),
        200,
      ).body;
      expect(both).toMatchObject({ mode: 0o600, mtime: '1970-01-01T00:00:01.000000000Z' });
      const folder = expectStatus(
        await attributes(alice.client, { path: d, mode: 0o2775, mtime: '2020-01-01T12:00:00+02:00' }),
        200,
      ).body;
      expect(folder).toMatchObject({
        kind: 'collection',
        mode: 0o2775,
        mtime: '2020-01-01T10:00:00.000000000Z',
      });
      const listed = expectStatus(
        await alice.client.get<Page<EntryDto>>('/api/v1/namespace/children', { query: { path: d } }),
        200,
      ).body.items;
      expect(listed.find((e) => e.name === 'f')).toMatchObject({ mode: 0o600, mtime: both.mtime });
    });

    it('mkdir takes mode and mtime for the new collection (parents get the defaults)', async () => {
      const base = await dir('mkdir');
      const made = expectStatus(
        await alice.client.post<EntryDto>('/api/v1/namespace/collections', {
          path: `${base}/p/q`,
          parents: true,
          mode: '700',
          mtime: '2010-10-10T10:10:10Z',
        }),
        201,
      ).body;
      expect(made).toMatchObject({ mode: 0o700, mtime: '2010-10-10T10:10:10.000000000Z' });
      expect((await stat(alice.client, `${base}/p`)).mode).toBe(0o755);
    });

    it('upload sessions and partial updates take mtime and mode when they complete', async () => {
      const d = await dir('sessions');
      const session = expectStatus(
        await alice.client.post<UploadSessionDto>('/api/v1/uploads', { path: `${d}/big`, size: 4 }),
        201,
      ).body;
      expectStatus(
        await alice.client.request('PUT', `/api/v1/uploads/${session.id}`, {
          query: { offset: 0 },
          headers: { 'content-type': 'application/octet-stream' },
          body: 'abcd',
        }),
        200,
      );
      const done = expectStatus(
        await alice.client.post<EntryDto>(`/api/v1/uploads/${session.id}/complete`, {
          mtime: '2022-02-22T22:22:22.222222222Z',
          mode: 0o640,
        }),
        201,
      ).body;
      expect(done).toMatchObject({ mode: 0o640, mtime: '2022-02-22T22:22:22.222222222Z' });
      const partial = expectStatus(
        await alice.client.post<UploadSessionDto>('/api/v1/uploads', {
          path: `${d}/big`,
          size: 4,
          base: { version: 1, sha256: done.checksum },
        }),
        201,
      ).body;
      expectStatus(
        await alice.client.request('PUT', `/api/v1/uploads/${partial.id}`, {
          query: { offset: 1 },
          headers: { 'content-type': 'application/octet-stream' },
          body: 'X',
        }),
        200,
      );
      const patched = expectStatus(
        await alice.client.post<EntryDto>(`/api/v1/uploads/${partial.id}/complete`, {
          mtime: '2023-03-03T03:03:03Z',
          mode: '0755',
        }),
        200,
      ).body;
      expect(patched).toMatchObject({ version: 2, mode: 0o755, mtime: '2023-03-03T03:03:03.000000000Z' });
      const bytes = await alice.client.get('/api/v1/data', { query: { path: `${d}/big` } });
      expect(bytes.text).toBe('aXcd');
    });
  });

  describe('symbolic links', () => {
    it('are created with their target as written, and stat, list and sort like entries', async () => {
      const d = await dir('links');
      const target = '../lib/libz.so.1.3 é\u0301';
      const link = expectStatus(await symlink(alice.client, `${d}/libz.so`, target), 201).body;
      const bytes = Buffer.from(target, 'utf8');
      expect(link).toMatchObject({
        kind: 'symlink',
        name: 'libz.so',
        linkTarget: target,
        mode: 0o777,
        size: bytes.length,
        checksum: `sha256:${createHash('sha256').update(bytes).digest('hex')}`,
        site: null,
        replicaCount: 0,
        access: 'own',
      });
      // Not normalised: the NFD form stays NFD.
      expect((await stat(alice.client, `${d}/libz.so`)).linkTarget).toBe(target);
      expect((await stat(alice.client, `${d}/libz.so`)).replicas).toEqual([]);
      // Absolute, dangling, pointing outside the namespace: all kept, none followed.
      for (const [name, to] of [
        ['abs', '/usr/share/zoneinfo/UTC'],
        ['dangling', 'no/such/thing'],
        ['dot', '.'],
        ['long', 'x'.repeat(4096)],
      ] as const) {
        expect(expectStatus(await symlink(alice.client, `${d}/${name}`, to), 201).body.linkTarget).toBe(to);
      }
      await put(alice.client, `${d}/plain`, 'p');
      const listed = expectStatus(
        await alice.client.get<Page<EntryDto>>('/api/v1/namespace/children', { query: { path: d } }),
        200,
      ).body.items;
      expect(listed.map((e) => [e.name, e.kind])).toEqual([
        ['abs', 'symlink'],
        ['dangling', 'symlink'],
        ['dot', 'symlink'],
        ['libz.so', 'symlink'],
        ['long', 'symlink'],
        ['plain', 'object'],
      ]);
      expect(listed.find((e) => e.name === 'abs')?.linkTarget).toBe('/usr/share/zoneinfo/UTC');
      expect(listed.find((e) => e.name === 'plain')?.linkTarget).toBeNull();
    });

    it('take a file time of their own; their mode stays 0777', async () => {
      const d = await dir('link-times');
      expect(
        expectStatus(await symlink(alice.client, `${d}/l`, 't', { mtime: '2000-01-01T00:00:00.5Z' }), 201)
          .body.mtime,
      ).toBe('2000-01-01T00:00:00.500000000Z');
      const touched = expectStatus(
        await attributes(alice.client, { path: `${d}/l`, mtime: '1999-12-31T23:59:59Z', mode: 0o777 }),
        200,
      ).body;
      expect(touched).toMatchObject({
        kind: 'symlink',
        mtime: '1999-12-31T23:59:59.000000000Z',
        mode: 0o777,
      });
      const refused = expectError(
        await attributes(alice.client, { path: `${d}/l`, mode: 0o644 }),
        409,
        ErrorCode.IsASymlink,
      );
      expect(refused.message).toContain('0777');
    });

    it('share the namespace: a taken name is 409 NAME_TAKEN either way', async () => {
      const d = await dir('names');
      await put(alice.client, `${d}/file`, 'f');
      expectError(await symlink(alice.client, `${d}/file`, 'x'), 409, ErrorCode.NameTaken);
      expectError(await symlink(alice.client, d, 'x'), 409, ErrorCode.NameTaken);
      expectStatus(await symlink(alice.client, `${d}/link`, 'file'), 201);
      expectError(await symlink(alice.client, `${d}/link`, 'other'), 409, ErrorCode.NameTaken);
      expectError(await put(alice.client, `${d}/link`, 'bytes'), 409, ErrorCode.NameTaken);
      expectError(
        await alice.client.post('/api/v1/namespace/collections', { path: `${d}/link` }),
        409,
        ErrorCode.NameTaken,
      );
      expectError(await symlink(alice.client, `${d}/missing/link`, 'x'), 404, ErrorCode.NotFound);
      expectError(await symlink(alice.client, `${d}/file/link`, 'x'), 409, ErrorCode.NotACollection);
    });

    it('refuse the data routes with 409 IS_A_SYMLINK, never the target bytes', async () => {
      const d = await dir('data-routes');
      await put(alice.client, `${d}/real`, 'the real bytes');
      expectStatus(await symlink(alice.client, `${d}/link`, 'real'), 201);
      const path = `${d}/link`;
      const refusals = [
        await alice.client.get('/api/v1/data', { query: { path } }),
        await put(alice.client, path, 'new bytes', {}, true),
        await alice.client.post('/api/v1/data/batch-read', { paths: [`${d}/real`, path] }),
        await alice.client.post('/api/v1/uploads', { path, overwrite: true }),
        await alice.client.post('/api/v1/uploads', {
          path,
          size: 1,
          base: { version: 1, sha256: 'a'.repeat(64) },
        }),
      ];
      for (const res of refusals) {
        const err = expectError(res, 409, ErrorCode.IsASymlink);
        expect(err.message).toContain('symbolic link');
        expect(res.text).not.toContain('the real bytes');
      }
      const head = await alice.client.request('HEAD', '/api/v1/data', { query: { path } });
      expect(head.status).toBe(409);
      // An upload session started before the name became a link is refused when it completes.
      const session = expectStatus(
        await alice.client.post<UploadSessionDto>('/api/v1/uploads', { path: `${d}/later` }),
        201,
      ).body;
      expectStatus(await symlink(alice.client, `${d}/later`, 'real'), 201);
      expectError(
        await alice.client.post(`/api/v1/uploads/${session.id}/complete`, {}),
        409,
        ErrorCode.NameTaken,
      );
      // Nothing changed.
      expect((await stat(alice.client, path)).linkTarget).toBe('real');
    });

    it('are renamed, moved, trashed, restored and purged like files', async () => {
      const d = await dir('lifecycle');
      expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: `${d}/sub` }), 201);
      expectStatus(await symlink(alice.client, `${d}/a`, '/etc/hosts'), 201);
      const renamed = expectStatus(
        await alice.client.post<EntryDto>('/api/v1/namespace/move', { from: `${d}/a`, to: `${d}/b` }),
        200,
      ).body;
      expect(renamed).toMatchObject({ kind: 'symlink', name: 'b', linkTarget: '/etc/hosts' });
      const moved = expectStatus(
        await alice.client.post<EntryDto>('/api/v1/namespace/move', { from: `${d}/b`, to: `${d}/sub/c` }),
        200,
      ).body;
      expect(moved).toMatchObject({ kind: 'symlink', path: `${d}/sub/c`, linkTarget: '/etc/hosts' });
      const trashed = expectStatus(
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: `${d}/sub/c` } }),
        200,
      ).body;
      expect(trashed).toMatchObject({ kind: 'symlink', originalPath: `${d}/sub/c` });
      const listing = expectStatus(await alice.client.get<Page<TrashEntryDto>>('/api/v1/trash'), 200).body;
      expect(listing.items.find((t) => t.id === trashed.id)?.kind).toBe('symlink');
      expectError(
        await alice.client.get('/api/v1/namespace/stat', { query: { path: `${d}/sub/c` } }),
        404,
        ErrorCode.NotFound,
      );
      const restored = expectStatus(
        await alice.client.post<EntryDto>(`/api/v1/trash/${trashed.id}/restore`),
        200,
      ).body;
      expect(restored).toMatchObject({ kind: 'symlink', path: `${d}/sub/c`, linkTarget: '/etc/hosts' });
      // Trash the whole folder, then purge it: the link goes with it.
      const folder = expectStatus(
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: `${d}/sub` } }),
        200,
      ).body;
      await site.runReplicationCycle();
      expectStatus(await alice.client.delete(`/api/v1/trash/${folder.id}`), 204);
      const left = await site.query('SELECT 1 FROM data_objects WHERE link_target = $1 AND name = $2', [
        '/etc/hosts',
        'c',
      ]);
      expect(left.rowCount).toBe(0);
    });

    it('carry metadata triples like any entry', async () => {
      const d = await dir('link-meta');
      expectStatus(await symlink(alice.client, `${d}/l`, 'x'), 201);
      const added = expectStatus(
        await alice.client.post<TripleDto[]>(
          '/api/v1/metadata',
          { triples: [{ attribute: 'note', value: 'a link' }] },
          { query: { path: `${d}/l` } },
        ),
        201,
      ).body;
      expect(added.map((t) => t.value)).toEqual(['a link']);
    });
  });

  describe('bad input: 422 VALIDATION_FAILED naming the field and what to send', () => {
    let path: string;
    beforeAll(async () => {
      path = `${await dir('bad')}/f`;
      await put(alice.client, path, 'x');
    });

    it('modes outside 0..0o7777 or not octal', async () => {
      for (const mode of [0o10000, 4096, -1, 1.5, 'abc', '8', '0o10000', '', true, null]) {
        const err = expectError(
          await attributes(alice.client, { path, mode }),
          422,
          ErrorCode.ValidationFailed,
        );
        expect(err.details?.mode?.join(' '), JSON.stringify(mode)).toMatch(/0o7777|expected/);
      }
      const err = expectError(
        await attributes(alice.client, { path, mode: 'abc' }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(err.details?.mode?.[0]).toContain('octal');
    });

    it('times that are not times, have no zone, or fall outside 1677..2262', async () => {
      for (const mtime of [
        'garbage',
        '2026-11-27',
        '2026-11-27T10:00:00',
        '2026-02-30T00:00:00Z',
        '3000-01-01T00:00:00Z',
        1e300,
        {},
      ]) {
        const err = expectError(
          await attributes(alice.client, { path, mtime }),
          422,
          ErrorCode.ValidationFailed,
        );
        expect(err.details?.mtime, JSON.stringify(mtime)).toBeDefined();
      }
      const err = expectError(await attributes(alice.client, { path }), 422, ErrorCode.ValidationFailed);
      expect(err.message).toContain('give "mtime", "mode" or both');
    });

    it('headers of PUT /data, before any byte is stored', async () => {
      const badMode = expectError(
        await put(alice.client, `${path}-new`, 'x', { 'x-tributary-mode': '99999' }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(badMode.details?.['x-tributary-mode']?.[0]).toContain('0o7777');
      const badTime = expectError(
        await put(alice.client, `${path}-new`, 'x', { 'x-tributary-mtime': 'last tuesday' }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(badTime.details?.['x-tributary-mtime']?.[0]).toContain('ISO 8601');
      expectError(
        await alice.client.get('/api/v1/namespace/stat', { query: { path: `${path}-new` } }),
        404,
        ErrorCode.NotFound,
      );
    });

    it('symlink targets: empty, NUL, lone surrogates, more than 4,096 bytes', async () => {
      const d = await dir('bad-links');
      for (const target of ['', 'a\u0000b', '\ud800', 'x'.repeat(4097), 'é'.repeat(2049)]) {
        const err = expectError(
          await symlink(alice.client, `${d}/l`, target),
          422,
          ErrorCode.ValidationFailed,
        );
        expect(err.details?.target, JSON.stringify(target.slice(0, 8))).toBeDefined();
      }
      const noTarget = expectError(
        await alice.client.post('/api/v1/namespace/symlinks', { path: `${d}/l` }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(noTarget.details?.target).toBeDefined();
      expectError(await symlink(alice.client, `${d}/l/`, 'x'), 422, ErrorCode.ValidationFailed);
      expectError(
        await alice.client.get('/api/v1/namespace/stat', { query: { path: `${d}/l` } }),
        404,
        ErrorCode.NotFound,
      );
    });
  });

  describe('access', () => {
    let shared: string;
    let secret: string;
    beforeAll(async () => {
      shared = await dir('shared');
      await put(alice.client, `${shared}/f`, 'x');
      await symlink(alice.client, `${shared}/l`, 'f');
      expectStatus(
        await alice.client.put('/api/v1/permissions', { path: shared, user: bob.username, level: 'read' }),
        200,
      );
      secret = expectStatus(
        await alice.client.post<{ secret: string }>('/api/v1/tokens', { name: 'ro', scope: 'read' }),
        201,
      ).body.secret;
    });

    it('a reader sees attributes and targets but cannot set attributes or create links', async () => {
      expect((await stat(bob.client, `${shared}/l`)).linkTarget).toBe('f');
      expect((await stat(bob.client, `${shared}/f`)).mode).toBe(0o644);
      expectError(
        await attributes(bob.client, { path: `${shared}/f`, mode: 0o777 }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(await attributes(bob.client, { path: shared, mtime: 0 }), 403, ErrorCode.PermissionDenied);
      expectError(await symlink(bob.client, `${shared}/mine`, 'f'), 403, ErrorCode.PermissionDenied);
      expect((await stat(alice.client, `${shared}/f`)).mode).toBe(0o644);
    });

    it('a read-only token cannot change anything', async () => {
      const ro = site.asToken(secret);
      expectError(
        await attributes(ro, { path: `${shared}/f`, mode: 0o600 }),
        403,
        ErrorCode.TokenScopeInsufficient,
      );
      expectError(await symlink(ro, `${shared}/t`, 'f'), 403, ErrorCode.TokenScopeInsufficient);
    });

    it('someone who cannot read the collection learns nothing: the same 403 whether the name exists or not', async () => {
      const outsider = await site.createUser();
      const private_ = `${home}/${uniqueName('private')}`;
      expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: private_ }), 201);
      await put(alice.client, `${private_}/exists`, 'x');
      await symlink(alice.client, `${private_}/link`, 'secret-target');
      const answers = [
        await attributes(outsider.client, { path: `${private_}/exists`, mode: 0o777 }),
        await attributes(outsider.client, { path: `${private_}/missing`, mode: 0o777 }),
        await attributes(outsider.client, { path: `${private_}/link`, mtime: 0 }),
        await symlink(outsider.client, `${private_}/exists`, 'x'),
        await symlink(outsider.client, `${private_}/missing`, 'x'),
        await symlink(outsider.client, `${private_}/nodir/x`, 'x'),
      ];
      for (const res of answers) {
        const err = expectError(res, 403, ErrorCode.PermissionDenied);
        expect(err.message).not.toContain('secret-target');
        expect(err.message).toMatch(/you need (write|read) access to/);
      }
      expect(answers.map((r) => r.text).join('')).not.toContain('secret-target');
      expectError(
        await outsider.client.get('/api/v1/namespace/stat', { query: { path: `${private_}/link` } }),
        403,
        ErrorCode.PermissionDenied,
      );
    });
  });
});
