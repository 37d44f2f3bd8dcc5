import { createHash } from 'node:crypto';
import {
  ErrorCode,
  type EntryDetailDto,
  type EntryDto,
  type GroupDto,
  type Page,
  type PermissionDto,
  type TrashEntryDto,
} from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueGroupName, uniqueName } from '@tributary/testkit';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

describe('namespace', () => {
  let site: TestSite;
  let admin: TestClient;
  let alice: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    admin = await site.admin();
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
  });
  afterAll(async () => {
    await site?.close();
  });

  const home = (u: TestUser): string => `/home/${u.username}`;

  async function stat(client: TestClient, path: string) {
    return client.get<EntryDetailDto>('/api/v1/namespace/stat', { query: { path } });
  }

  async function mkdir(client: TestClient, path: string, parents = false): Promise<EntryDto> {
    const res = await client.post<EntryDto>('/api/v1/namespace/collections', { path, parents });
    expectStatus(res, 201);
    return res.body;
  }

  async function upload(client: TestClient, path: string, content: string | Buffer): Promise<EntryDto> {
    const res = await client.request<EntryDto>('PUT', '/api/v1/data', {
      query: { path },
      headers: { 'content-type': 'application/octet-stream' },
      body: content,
    });
    expectStatus(res, 201);
    return res.body;
  }

  async function children(client: TestClient, path: string, query: Record<string, string | number> = {}) {
    return client.get<Page<EntryDto>>('/api/v1/namespace/children', { query: { path, ...query } });
  }

  /** Every child of a collection, following the cursor. */
  async function allChildren(client: TestClient, path: string, query: Record<string, string | number>) {
    const out: EntryDto[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 100; i++) {
      const res = expectStatus(
        await children(client, path, { ...query, ...(cursor ? { cursor } : {}) }),
        200,
      );
      out.push(...res.body.items);
      cursor = res.body.nextCursor;
      if (!cursor) return out;
    }
    throw new Error('listing did not end');
  }

  describe('homes and roots', () => {
    it('every user has a home /home/<username> that they own', async () => {
      const res = expectStatus(await stat(alice.client, home(alice)), 200);
      expect(res.body).toMatchObject({
        kind: 'collection',
        path: home(alice),
        name: alice.username,
        owner: alice.username,
        access: 'own',
        size: 0,
        checksum: null,
        replicas: [],
      });
      expect(alice.user.homePath).toBe(home(alice));
    });

    it('everyone may see / , /home and /projects, but not inside other people’s homes', async () => {
      for (const path of ['/', '/home', '/projects']) {
        const res = expectStatus(await stat(bob.client, path), 200);
        expect(res.body.access).toBe('read');
      }
      expectError(await stat(bob.client, home(alice)), 403, ErrorCode.PermissionDenied);
      expectError(await children(bob.client, home(alice)), 403, ErrorCode.PermissionDenied);
    });

    it('listing /home shows the homes with what the caller may do in each', async () => {
      const items = await allChildren(bob.client, '/home', { limit: 1000 });
      const byName = new Map(items.map((e) => [e.name, e]));
      expect(byName.get(bob.username)?.access).toBe('own');
      expect(byName.get(alice.username)?.access).toBeNull();
      expect(byName.get('admin')?.kind).toBe('collection');
    });

    it('the roots cannot be deleted, moved or renamed', async () => {
      for (const path of ['/home', '/projects']) {
        expectError(
          await admin.delete('/api/v1/namespace', { query: { path } }),
          422,
          ErrorCode.RootImmutable,
        );
        expectError(
          await admin.post('/api/v1/namespace/move', { from: path, to: `/renamed-${uniqueName()}` }),
          422,
          ErrorCode.RootImmutable,
        );
      }
      expectStatus(await stat(admin, '/home'), 200);
    });

    it('answers 404 NOT_FOUND for a path that does not exist', async () => {
      expectError(await stat(alice.client, `${home(alice)}/nothing-here`), 404, ErrorCode.NotFound);
    });

    it.each([
      ['a relative path', 'home/x'],
      ['"..": no escaping', '/home/../etc'],
      ['"//"', '/home//x'],
      ['a NUL byte', '/home/a\u0000b'],
      ['an empty path', ''],
    ])('refuses %s with 422 VALIDATION_FAILED naming "path"', async (_label, path) => {
      const err = expectError(await stat(alice.client, path), 422, ErrorCode.ValidationFailed);
      expect(Object.keys(err.details ?? {})).toEqual(['path']);
    });

    it('normalises paths to NFC, so both spellings of a name are the same entry', async () => {
      const decomposed = `${home(alice)}/cafe\u0301-${uniqueName()}`;
      const created = await mkdir(alice.client, decomposed);
      expect(created.path).toBe(decomposed.normalize('NFC'));
      expectStatus(await stat(alice.client, decomposed.normalize('NFC')), 200);
      expectError(
        await alice.client.post('/api/v1/namespace/collections', { path: decomposed.normalize('NFC') }),
        409,
        ErrorCode.NameTaken,
      );
    });
  });

  describe('collections', () => {
    it('POST /namespace/collections creates a collection owned by the caller', async () => {
      const path = `${home(alice)}/${uniqueName('dir')}`;
      const created = await mkdir(alice.client, path);
      expect(created).toMatchObject({
        kind: 'collection',
        path,
        owner: alice.username,
        access: 'own',
        size: 0,
      });
      expect((await stat(alice.client, path)).body.id).toBe(created.id);
    });

    it('without parents=true a missing parent is 404; with it, every missing level is created', async () => {
      const base = `${home(alice)}/${uniqueName('deep')}`;
      expectError(
        await alice.client.post('/api/v1/namespace/collections', { path: `${base}/a/b` }),
        404,
        ErrorCode.NotFound,
      );
      expectError(await stat(alice.client, base), 404, ErrorCode.NotFound);
      const created = await mkdir(alice.client, `${base}/a/b`, true);
      expect(created.path).toBe(`${base}/a/b`);
      for (const p of [base, `${base}/a`, `${base}/a/b`]) expectStatus(await stat(alice.client, p), 200);
    });

    it('creating an existing collection is 409 NAME_TAKEN, also with parents=true', async () => {
      const path = `${home(alice)}/${uniqueName()}`;
      await mkdir(alice.client, path);
      expectError(
        await alice.client.post('/api/v1/namespace/collections', { path }),
        409,
        ErrorCode.NameTaken,
      );
      expectError(
        await alice.client.post('/api/v1/namespace/collections', { path, parents: true }),
        409,
        ErrorCode.NameTaken,
      );
      expectError(await admin.post('/api/v1/namespace/collections', { path: '/' }), 409, ErrorCode.NameTaken);
    });

    it('a collection cannot have the name of an object beside it, nor live under an object', async () => {
      const file = `${home(alice)}/${uniqueName('file')}`;
      await upload(alice.client, file, 'x');
      expectError(
        await alice.client.post('/api/v1/namespace/collections', { path: file }),
        409,
        ErrorCode.NameTaken,
      );
      expectError(
        await alice.client.post('/api/v1/namespace/collections', { path: `${file}/sub` }),
        409,
        ErrorCode.NotACollection,
      );
    });

    it('nobody creates collections in someone else’s home without a grant', async () => {
      const path = `${home(alice)}/${uniqueName('intruder')}`;
      expectError(
        await bob.client.post('/api/v1/namespace/collections', { path }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(
        await bob.client.post('/api/v1/namespace/collections', { path: `/home/${uniqueName()}` }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(await stat(alice.client, path), 404, ErrorCode.NotFound);
    });

    it('new collections are attributed to the creator’s active group', async () => {
      const group = uniqueGroupName();
      expectStatus(await admin.post<GroupDto>('/api/v1/groups', { name: group }), 201);
      const carol = await site.createUser();
      await admin.put(`/api/v1/groups/${group}/members`, { username: carol.username });
      await carol.client.put('/api/v1/me/active-group', { group });
      const created = await mkdir(carol.client, `${home(carol)}/${uniqueName()}`);
      expect(created.group).toBe(group);
    });
  });

  describe('listing children', () => {
    let dir: string;
    const names = { dirs: ['d-b', 'd-a'], files: { 'f-c': 30, 'f-a': 10, 'f-b': 20, 'f-d': 0 } };

    beforeAll(async () => {
      dir = `${home(alice)}/${uniqueName('listing')}`;
      await mkdir(alice.client, dir);
      for (const d of names.dirs) await mkdir(alice.client, `${dir}/${d}`);
      for (const [f, size] of Object.entries(names.files))
        await upload(alice.client, `${dir}/${f}`, 'z'.repeat(size));
    });

    it('lists collections first, then objects, by name, with sizes and checksums', async () => {
      const res = expectStatus(await children(alice.client, dir), 200);
      expect(res.body.total).toBe(6);
      expect(res.body.nextCursor).toBeUndefined();
      expect(res.body.items.map((e) => e.name)).toEqual(['d-a', 'd-b', 'f-a', 'f-b', 'f-c', 'f-d']);
      const fa = res.body.items.find((e) => e.name === 'f-a');
      expect(fa).toMatchObject({
        kind: 'object',
        size: 10,
        path: `${dir}/f-a`,
        owner: alice.username,
        access: 'own',
      });
      expect(fa?.checksum).toMatch(/^sha256:[0-9a-f]{64}$/);
    });

    it('sorts by size and by name in both directions, collections always first', async () => {
      const bySizeDesc = await allChildren(alice.client, dir, { sort: 'size', order: 'desc' });
      expect(bySizeDesc.map((e) => e.name)).toEqual(['d-b', 'd-a', 'f-c', 'f-b', 'f-a', 'f-d']);
      const bySizeAsc = await allChildren(alice.client, dir, { sort: 'size', order: 'asc' });
      expect(bySizeAsc.map((e) => e.name)).toEqual(['d-a', 'd-b', 'f-d', 'f-a', 'f-b', 'f-c']);
      const byNameDesc = await allChildren(alice.client, dir, { sort: 'name', order: 'desc' });
      expect(byNameDesc.map((e) => e.name)).toEqual(['d-b', 'd-a', 'f-d', 'f-c', 'f-b', 'f-a']);
    });

    it('sorts by modification time', async () => {
      const byModified = await allChildren(alice.client, dir, { sort: 'modified', order: 'asc' });
      const objects = byModified.filter((e) => e.kind === 'object');
      const times = objects.map((e) => Date.parse(e.modifiedAt));
      expect(times).toEqual([...times].sort((a, b) => a - b));
      // Upload order was f-c, f-a, f-b, f-d.
      expect(objects.map((e) => e.name)).toEqual(['f-c', 'f-a', 'f-b', 'f-d']);
      const desc = await allChildren(alice.client, dir, { sort: 'modified', order: 'desc' });
      expect(desc.filter((e) => e.kind === 'object').map((e) => e.name)).toEqual([
        'f-d',
        'f-b',
        'f-a',
        'f-c',
      ]);
    });

    it.each([1, 2, 4, 5])('pages of %i, followed by cursor, give every child exactly once', async (limit) => {
      for (const sort of ['name', 'size', 'modified'] as const) {
        for (const order of ['asc', 'desc'] as const) {
          const whole = expectStatus(await children(alice.client, dir, { sort, order, limit: 100 }), 200).body
            .items;
          const paged = await allChildren(alice.client, dir, { sort, order, limit });
          expect(
            paged.map((e) => e.name),
            `${sort} ${order}`,
          ).toEqual(whole.map((e) => e.name));
        }
      }
      const first = expectStatus(await children(alice.client, dir, { limit }), 200).body;
      expect(first.items).toHaveLength(limit);
      expect(first.total).toBe(6);
      expect(first.nextCursor).toBeDefined();
    });

    it('a bad cursor is 422 INVALID_CURSOR; bad sort/order/limit are 422 VALIDATION_FAILED', async () => {
      expectError(
        await children(alice.client, dir, { cursor: 'not-a-cursor' }),
        422,
        ErrorCode.InvalidCursor,
      );
      const nameCursor =
        expectStatus(await children(alice.client, dir, { limit: 1 }), 200).body.nextCursor ?? '';
      // A name cursor does not fit a size listing.
      expectError(
        await children(alice.client, dir, { sort: 'size', cursor: nameCursor }),
        422,
        ErrorCode.InvalidCursor,
      );
      expectError(await children(alice.client, dir, { sort: 'owner' }), 422, ErrorCode.ValidationFailed);
      expectError(await children(alice.client, dir, { order: 'up' }), 422, ErrorCode.ValidationFailed);
      expectError(await children(alice.client, dir, { limit: 0 }), 422, ErrorCode.ValidationFailed);
      expectError(await children(alice.client, dir, { limit: 1001 }), 422, ErrorCode.ValidationFailed);
    });

    it('listing an object is 409 NOT_A_COLLECTION; listing nothing is 404', async () => {
      expectError(await children(alice.client, `${dir}/f-a`), 409, ErrorCode.NotACollection);
      expectError(await children(alice.client, `${dir}/missing`), 404, ErrorCode.NotFound);
    });

    it('an empty collection lists as an empty page', async () => {
      const res = expectStatus(await children(alice.client, `${dir}/d-a`), 200);
      expect(res.body).toEqual({ items: [], total: 0 });
    });
  });

  describe('concurrent changes', () => {
    it('creating the same collection five times at once: one 201, the rest 409, never 500', async () => {
      const path = `${home(alice)}/${uniqueName('race-dir')}`;
      const results = await Promise.all(
        Array.from({ length: 5 }, () => alice.client.post('/api/v1/namespace/collections', { path })),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
      expect(
        expectStatus(await children(alice.client, home(alice), { limit: 1000 }), 200).body.items.filter(
          (e) => e.path === path,
        ),
      ).toHaveLength(1);
    });

    it('uploading the same new object five times at once: one 201, the rest 409, never 500', async () => {
      const path = `${home(alice)}/${uniqueName('race-file')}`;
      const results = await Promise.all(
        Array.from({ length: 5 }, (_, i) =>
          alice.client.request('PUT', '/api/v1/data', {
            query: { path },
            headers: { 'content-type': 'application/octet-stream' },
            body: `writer ${i}`,
          }),
        ),
      );
      expect(results.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
      const winner = results.find((r) => r.status === 201);
      const data = await alice.client.get('/api/v1/data', { query: { path } });
      expect(`sha256:${createHash('sha256').update(data.bytes).digest('hex')}`).toBe(
        (winner?.body as EntryDto | undefined)?.checksum,
      );
    });
  });

  describe('move and rename', () => {
    it('renames an object in place', async () => {
      const dir = await mkdir(alice.client, `${home(alice)}/${uniqueName('mv')}`);
      const before = await upload(alice.client, `${dir.path}/old.txt`, 'hello');
      const res = await alice.client.post<EntryDto>('/api/v1/namespace/move', {
        from: `${dir.path}/old.txt`,
        to: `${dir.path}/new.txt`,
      });
      expectStatus(res, 200);
      expect(res.body).toMatchObject({
        id: before.id,
        name: 'new.txt',
        path: `${dir.path}/new.txt`,
        checksum: before.checksum,
      });
      expectError(await stat(alice.client, `${dir.path}/old.txt`), 404, ErrorCode.NotFound);
      const data = await alice.client.get('/api/v1/data', { query: { path: `${dir.path}/new.txt` } });
      expect(data.text).toBe('hello');
    });

    it('moves a collection with everything below it', async () => {
      const base = `${home(alice)}/${uniqueName('tree')}`;
      await mkdir(alice.client, `${base}/src/inner/deepest`, true);
      await upload(alice.client, `${base}/src/inner/file.bin`, 'payload');
      await mkdir(alice.client, `${base}/dest`);
      const moved = await alice.client.post<EntryDto>('/api/v1/namespace/move', {
        from: `${base}/src`,
        to: `${base}/dest/renamed`,
      });
      expectStatus(moved, 200);
      expect(moved.body.path).toBe(`${base}/dest/renamed`);
      for (const p of ['', '/inner', '/inner/deepest', '/inner/file.bin']) {
        expectStatus(await stat(alice.client, `${base}/dest/renamed${p}`), 200);
        expectError(await stat(alice.client, `${base}/src${p}`), 404, ErrorCode.NotFound);
      }
      const inner = expectStatus(await children(alice.client, `${base}/dest/renamed/inner`), 200).body.items;
      expect(inner.map((e) => e.path)).toEqual([
        `${base}/dest/renamed/inner/deepest`,
        `${base}/dest/renamed/inner/file.bin`,
      ]);
      // A collection whose name merely starts with the moved one's is not dragged along.
      await mkdir(alice.client, `${base}/srcx`);
      await alice.client.post('/api/v1/namespace/move', { from: `${base}/dest/renamed`, to: `${base}/src` });
      expectStatus(await stat(alice.client, `${base}/srcx`), 200);
      expectStatus(await stat(alice.client, `${base}/src/inner/file.bin`), 200);
    });

    it('refuses to move a collection into itself (422 MOVE_INTO_ITSELF)', async () => {
      const base = await mkdir(alice.client, `${home(alice)}/${uniqueName('self')}`);
      await mkdir(alice.client, `${base.path}/child`);
      expectError(
        await alice.client.post('/api/v1/namespace/move', {
          from: base.path,
          to: `${base.path}/child/again`,
        }),
        422,
        ErrorCode.MoveIntoItself,
      );
      expectStatus(await stat(alice.client, `${base.path}/child`), 200);
    });

    it('refuses to overwrite: 409 NAME_TAKEN when the target exists', async () => {
      const base = await mkdir(alice.client, `${home(alice)}/${uniqueName('clash')}`);
      await upload(alice.client, `${base.path}/a`, 'a');
      await upload(alice.client, `${base.path}/b`, 'b');
      expectError(
        await alice.client.post('/api/v1/namespace/move', { from: `${base.path}/a`, to: `${base.path}/b` }),
        409,
        ErrorCode.NameTaken,
      );
      expect((await alice.client.get('/api/v1/data', { query: { path: `${base.path}/b` } })).text).toBe('b');
    });

    it('404 when the source or the target’s parent does not exist', async () => {
      const base = await mkdir(alice.client, `${home(alice)}/${uniqueName('nf')}`);
      expectError(
        await alice.client.post('/api/v1/namespace/move', {
          from: `${base.path}/ghost`,
          to: `${base.path}/x`,
        }),
        404,
        ErrorCode.NotFound,
      );
      await upload(alice.client, `${base.path}/real`, 'r');
      expectError(
        await alice.client.post('/api/v1/namespace/move', {
          from: `${base.path}/real`,
          to: `${base.path}/no/such/x`,
        }),
        404,
        ErrorCode.NotFound,
      );
    });

    it('needs write access at both ends', async () => {
      const base = await mkdir(alice.client, `${home(alice)}/${uniqueName('perm')}`);
      await upload(alice.client, `${base.path}/f`, 'f');
      expectError(
        await bob.client.post('/api/v1/namespace/move', {
          from: `${base.path}/f`,
          to: `${home(bob)}/stolen`,
        }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(
        await alice.client.post('/api/v1/namespace/move', {
          from: `${base.path}/f`,
          to: `${home(bob)}/gift`,
        }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectStatus(await stat(alice.client, `${base.path}/f`), 200);
      expectError(await stat(bob.client, `${home(bob)}/gift`), 404, ErrorCode.NotFound);
    });
  });

  describe('trash', () => {
    it('DELETE moves a subtree to the trash; restore brings all of it back', async () => {
      const base = `${home(alice)}/${uniqueName('trash')}`;
      await mkdir(alice.client, `${base}/sub`, true);
      await upload(alice.client, `${base}/sub/data.bin`, 'keep me');
      const del = await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: base } });
      expectStatus(del, 200);
      expect(del.body).toMatchObject({
        kind: 'collection',
        originalPath: base,
        deletedBy: alice.username,
        deletedAtSite: 'lsu',
      });
      for (const p of ['', '/sub', '/sub/data.bin'])
        expectError(await stat(alice.client, `${base}${p}`), 404, ErrorCode.NotFound);

      const trash = expectStatus(await alice.client.get<Page<TrashEntryDto>>('/api/v1/trash'), 200).body;
      expect(trash.items.map((t) => t.id)).toContain(del.body.id);

      const restored = await alice.client.post<EntryDto>(`/api/v1/trash/${del.body.id}/restore`);
      expectStatus(restored, 200);
      expect(restored.body.path).toBe(base);
      expect((await alice.client.get('/api/v1/data', { query: { path: `${base}/sub/data.bin` } })).text).toBe(
        'keep me',
      );
      const after = (await alice.client.get<Page<TrashEntryDto>>('/api/v1/trash')).body;
      expect(after.items.map((t) => t.id)).not.toContain(del.body.id);
    });

    it('a deleted name can be reused at once; restoring over it is 409 NAME_TAKEN', async () => {
      const path = `${home(alice)}/${uniqueName('reuse')}`;
      await upload(alice.client, path, 'first');
      const del = expectStatus(
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path } }),
        200,
      );
      await upload(alice.client, path, 'second');
      expectError(await alice.client.post(`/api/v1/trash/${del.body.id}/restore`), 409, ErrorCode.NameTaken);
      expect((await alice.client.get('/api/v1/data', { query: { path } })).text).toBe('second');
    });

    it('each user sees only what they deleted; administrators see everything', async () => {
      const path = `${home(bob)}/${uniqueName('bobs')}`;
      await mkdir(bob.client, path);
      const del = expectStatus(
        await bob.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path } }),
        200,
      );
      const aliceTrash = (
        await alice.client.get<Page<TrashEntryDto>>('/api/v1/trash', { query: { limit: 1000 } })
      ).body;
      expect(aliceTrash.items.map((t) => t.id)).not.toContain(del.body.id);
      expect(aliceTrash.items.every((t) => t.deletedBy === alice.username)).toBe(true);
      const adminTrash = (await admin.get<Page<TrashEntryDto>>('/api/v1/trash', { query: { limit: 1000 } }))
        .body;
      expect(adminTrash.items.map((t) => t.id)).toContain(del.body.id);
      expectError(await alice.client.post(`/api/v1/trash/${del.body.id}/restore`), 404, ErrorCode.NotFound);
      expectError(await alice.client.delete(`/api/v1/trash/${del.body.id}`), 404, ErrorCode.NotFound);
    });

    it('the trash pages newest first', async () => {
      const carol = await site.createUser();
      const ids: string[] = [];
      for (let i = 0; i < 3; i++) {
        const path = `${home(carol)}/t${i}`;
        await mkdir(carol.client, path);
        ids.push(
          (await carol.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path } })).body.id,
        );
      }
      const first = expectStatus(
        await carol.client.get<Page<TrashEntryDto>>('/api/v1/trash', { query: { limit: 2 } }),
        200,
      ).body;
      expect(first.total).toBe(3);
      expect(first.items.map((t) => t.id)).toEqual([ids[2], ids[1]]);
      const second = (
        await carol.client.get<Page<TrashEntryDto>>('/api/v1/trash', {
          query: { limit: 2, cursor: first.nextCursor },
        })
      ).body;
      expect(second.items.map((t) => t.id)).toEqual([ids[0]]);
      expect(second.nextCursor).toBeUndefined();
    });

    it('purge deletes for good', async () => {
      const path = `${home(alice)}/${uniqueName('purge')}`;
      await upload(alice.client, path, 'bye');
      const del = expectStatus(
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path } }),
        200,
      );
      // Not in the cycle of the delete: a purge waits for the next replication cycle.
      expect(del.body.purgeAllowed).toBe(false);
      expectError(await alice.client.delete(`/api/v1/trash/${del.body.id}`), 409, ErrorCode.PurgeNotYet);
      await site.runReplicationCycle();
      expectStatus(await alice.client.delete(`/api/v1/trash/${del.body.id}`), 204);
      expectError(await alice.client.post(`/api/v1/trash/${del.body.id}/restore`), 404, ErrorCode.NotFound);
      expectError(await stat(alice.client, path), 404, ErrorCode.NotFound);
    });

    it('purging a collection also works when something inside it was deleted earlier on its own', async () => {
      const base = `${home(alice)}/${uniqueName('nested-trash')}`;
      await mkdir(alice.client, base);
      await upload(alice.client, `${base}/early.bin`, 'early');
      const early = expectStatus(
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', {
          query: { path: `${base}/early.bin` },
        }),
        200,
      );
      const late = expectStatus(
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: base } }),
        200,
      );
      await site.runReplicationCycle();
      expectStatus(await alice.client.delete(`/api/v1/trash/${late.body.id}`), 204);
      // The earlier entry's parent is gone for good: restoring it is a 404, never a 500.
      expectError(await alice.client.post(`/api/v1/trash/${early.body.id}/restore`), 404, ErrorCode.NotFound);
    });

    it('restoring into a deleted parent is 404 until the parent is restored', async () => {
      const base = `${home(alice)}/${uniqueName('order')}`;
      await mkdir(alice.client, base);
      await upload(alice.client, `${base}/f`, 'f');
      const child = (
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: `${base}/f` } })
      ).body;
      const parent = (
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: base } })
      ).body;
      expectError(await alice.client.post(`/api/v1/trash/${child.id}/restore`), 404, ErrorCode.NotFound);
      expectStatus(await alice.client.post(`/api/v1/trash/${parent.id}/restore`), 200);
      expectStatus(await alice.client.post(`/api/v1/trash/${child.id}/restore`), 200);
      expect((await alice.client.get('/api/v1/data', { query: { path: `${base}/f` } })).text).toBe('f');
    });

    it('a collection restored after its old parent was moved away lands where its path says', async () => {
      const base = `${home(alice)}/${uniqueName('moved-parent')}`;
      await mkdir(alice.client, `${base}/a/sub`, true);
      const del = (
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: `${base}/a/sub` } })
      ).body;
      expectStatus(
        await alice.client.post('/api/v1/namespace/move', { from: `${base}/a`, to: `${base}/b` }),
        200,
      );
      // The original parent is gone: restoring needs it back first.
      expectError(await alice.client.post(`/api/v1/trash/${del.id}/restore`), 404, ErrorCode.NotFound);
      await mkdir(alice.client, `${base}/a`);
      const restored = await alice.client.post<EntryDto>(`/api/v1/trash/${del.id}/restore`);
      expectStatus(restored, 200);
      expect(restored.body.path).toBe(`${base}/a/sub`);
      // Path, parent and listings agree.
      expectStatus(await stat(alice.client, `${base}/a/sub`), 200);
      expect((await allChildren(alice.client, `${base}/a`, {})).map((e) => e.path)).toEqual([
        `${base}/a/sub`,
      ]);
      expect(await allChildren(alice.client, `${base}/b`, {})).toEqual([]);
    });

    it('an object restored after its old collection was moved away lands where its path says', async () => {
      const base = `${home(alice)}/${uniqueName('moved-coll')}`;
      await mkdir(alice.client, `${base}/a`, true);
      await upload(alice.client, `${base}/a/f.txt`, 'restored bytes');
      const del = (
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: `${base}/a/f.txt` } })
      ).body;
      expectStatus(
        await alice.client.post('/api/v1/namespace/move', { from: `${base}/a`, to: `${base}/b` }),
        200,
      );
      await mkdir(alice.client, `${base}/a`);
      const restored = await alice.client.post<EntryDto>(`/api/v1/trash/${del.id}/restore`);
      expectStatus(restored, 200);
      expect(restored.body.path).toBe(`${base}/a/f.txt`);
      expect((await alice.client.get('/api/v1/data', { query: { path: `${base}/a/f.txt` } })).text).toBe(
        'restored bytes',
      );
      expect(await allChildren(alice.client, `${base}/b`, {})).toEqual([]);
    });

    it('the trash refuses a malformed cursor with 422 INVALID_CURSOR', async () => {
      expectError(
        await alice.client.get('/api/v1/trash', { query: { cursor: 'not-an-id' } }),
        422,
        ErrorCode.InvalidCursor,
      );
    });

    it('deleting needs write access: others get 403 and nothing moves', async () => {
      const path = `${home(alice)}/${uniqueName('safe')}`;
      await mkdir(alice.client, path);
      expectError(
        await bob.client.delete('/api/v1/namespace', { query: { path } }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectStatus(await stat(alice.client, path), 200);
      expectError(
        await alice.client.delete('/api/v1/namespace', { query: { path: `${path}/none` } }),
        404,
        ErrorCode.NotFound,
      );
    });
  });

  describe('permissions', () => {
    it('the owner grants read to a user, who can then read but not write; null removes it', async () => {
      const dir = await mkdir(alice.client, `${home(alice)}/${uniqueName('shared')}`);
      await upload(alice.client, `${dir.path}/report.txt`, 'numbers');
      expectError(await stat(bob.client, dir.path), 403, ErrorCode.PermissionDenied);

      const granted = await alice.client.put<PermissionDto[]>('/api/v1/permissions', {
        path: dir.path,
        user: bob.username,
        level: 'read',
      });
      expectStatus(granted, 200);
      expect(granted.body).toContainEqual({
        path: dir.path,
        user: bob.username,
        group: null,
        level: 'read',
        inheritedFrom: null,
      });

      expect(expectStatus(await stat(bob.client, dir.path), 200).body.access).toBe('read');
      expect((await bob.client.get('/api/v1/data', { query: { path: `${dir.path}/report.txt` } })).text).toBe(
        'numbers',
      );
      expectError(
        await bob.client.post('/api/v1/namespace/collections', { path: `${dir.path}/bobs` }),
        403,
        ErrorCode.PermissionDenied,
      );

      // Grants show up below, as inherited.
      const below = expectStatus(
        await bob.client.get<PermissionDto[]>('/api/v1/permissions', {
          query: { path: `${dir.path}/report.txt` },
        }),
        200,
      );
      expect(below.body).toContainEqual({
        path: `${dir.path}/report.txt`,
        user: bob.username,
        group: null,
        level: 'read',
        inheritedFrom: dir.path,
      });

      const removed = await alice.client.put<PermissionDto[]>('/api/v1/permissions', {
        path: dir.path,
        user: bob.username,
        level: null,
      });
      expectStatus(removed, 200);
      expect(removed.body.some((g) => g.user === bob.username)).toBe(false);
      expectError(await stat(bob.client, dir.path), 403, ErrorCode.PermissionDenied);
    });

    it('changing a grant replaces it rather than adding another', async () => {
      const dir = await mkdir(alice.client, `${home(alice)}/${uniqueName('regrant')}`);
      await alice.client.put('/api/v1/permissions', { path: dir.path, user: bob.username, level: 'read' });
      const res = await alice.client.put<PermissionDto[]>('/api/v1/permissions', {
        path: dir.path,
        user: bob.username,
        level: 'write',
      });
      expect(res.body.filter((g) => g.user === bob.username)).toEqual([
        { path: dir.path, user: bob.username, group: null, level: 'write', inheritedFrom: null },
      ]);
      expectStatus(
        await bob.client.post('/api/v1/namespace/collections', { path: `${dir.path}/from-bob` }),
        201,
      );
    });

    it('a group grant applies to its members', async () => {
      const group = uniqueGroupName('readers');
      await admin.post('/api/v1/groups', { name: group });
      await admin.put(`/api/v1/groups/${group}/members`, { username: bob.username });
      const dir = await mkdir(alice.client, `${home(alice)}/${uniqueName('for-group')}`);
      // Bob's group list is read at each request, so the new membership applies at once.
      expectStatus(
        await alice.client.put('/api/v1/permissions', { path: dir.path, group, level: 'write' }),
        200,
      );
      expectStatus(
        await bob.client.post('/api/v1/namespace/collections', { path: `${dir.path}/by-member` }),
        201,
      );
    });

    it('only someone with own access sets grants', async () => {
      const dir = await mkdir(alice.client, `${home(alice)}/${uniqueName('own')}`);
      await alice.client.put('/api/v1/permissions', { path: dir.path, user: bob.username, level: 'write' });
      // Write is not enough to hand out access.
      const carolName = (await site.createAccount()).username;
      expectError(
        await bob.client.put('/api/v1/permissions', { path: dir.path, user: carolName, level: 'read' }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(
        await bob.client.put('/api/v1/permissions', { path: dir.path, user: bob.username, level: 'own' }),
        403,
        ErrorCode.PermissionDenied,
      );
    });

    it('grants to unknown users or groups are 404; naming both or neither is 422', async () => {
      const dir = await mkdir(alice.client, `${home(alice)}/${uniqueName('bad-grant')}`);
      expectError(
        await alice.client.put('/api/v1/permissions', { path: dir.path, user: 'nosuchuser', level: 'read' }),
        404,
        ErrorCode.NotFound,
      );
      expectError(
        await alice.client.put('/api/v1/permissions', {
          path: dir.path,
          group: 'nosuchgroup',
          level: 'read',
        }),
        404,
        ErrorCode.NotFound,
      );
      expectError(
        await alice.client.put('/api/v1/permissions', {
          path: dir.path,
          user: bob.username,
          group: 'public',
          level: 'read',
        }),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(
        await alice.client.put('/api/v1/permissions', { path: dir.path, level: 'read' }),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(
        await alice.client.put('/api/v1/permissions', { path: dir.path, user: bob.username, level: 'admin' }),
        422,
        ErrorCode.ValidationFailed,
      );
    });

    it('a grant on one object gives access to it alone', async () => {
      const dir = await mkdir(alice.client, `${home(alice)}/${uniqueName('one-object')}`);
      await upload(alice.client, `${dir.path}/shared.txt`, 'for bob');
      await upload(alice.client, `${dir.path}/private.txt`, 'not for bob');
      expectStatus(
        await alice.client.put('/api/v1/permissions', {
          path: `${dir.path}/shared.txt`,
          user: bob.username,
          level: 'read',
        }),
        200,
      );
      expect((await bob.client.get('/api/v1/data', { query: { path: `${dir.path}/shared.txt` } })).text).toBe(
        'for bob',
      );
      expectError(
        await bob.client.get('/api/v1/data', { query: { path: `${dir.path}/private.txt` } }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(await children(bob.client, dir.path), 403, ErrorCode.PermissionDenied);
      expectError(
        await bob.client.request('PUT', '/api/v1/data', {
          query: { path: `${dir.path}/shared.txt`, overwrite: 'true' },
          headers: { 'content-type': 'application/octet-stream' },
          body: 'changed',
        }),
        403,
        ErrorCode.PermissionDenied,
      );
    });

    it('a project group’s members write in /projects/<group>', async () => {
      const group = uniqueGroupName('proj');
      await admin.post('/api/v1/groups', { name: group });
      const member = await site.createUser();
      await admin.put(`/api/v1/groups/${group}/members`, { username: member.username });
      expectStatus(
        await member.client.post('/api/v1/namespace/collections', { path: `/projects/${group}/run1` }),
        201,
      );
      expectError(
        await bob.client.post('/api/v1/namespace/collections', { path: `/projects/${group}/run2` }),
        403,
        ErrorCode.PermissionDenied,
      );
      const perms = expectStatus(
        await member.client.get<PermissionDto[]>('/api/v1/permissions', {
          query: { path: `/projects/${group}/run1` },
        }),
        200,
      );
      expect(perms.body).toContainEqual({
        path: `/projects/${group}/run1`,
        user: null,
        group,
        level: 'write',
        inheritedFrom: `/projects/${group}`,
      });
    });
  });
});
