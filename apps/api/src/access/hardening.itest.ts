import http from 'node:http';
import { ErrorCode, type EntryDto, type Page, type TrashEntryDto } from '@tributary/shared';
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
 * Regressions for a security and consistency review: confinement of tokens across trash and
 * token management, ids beyond bigint, text PostgreSQL refuses, and races between trash, restore,
 * purge and uploads.
 */
describe('hardening', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
  });
  afterAll(async () => {
    await site?.close();
  });

  async function token(
    client: TestClient,
    body: Record<string, unknown>,
  ): Promise<{ id: string; secret: string }> {
    return expectStatus(
      await client.post<{ id: string; secret: string }>('/api/v1/tokens', { name: 't', ...body }),
      201,
    ).body;
  }

  async function mkdir(client: TestClient, path: string): Promise<void> {
    expectStatus(await client.post('/api/v1/namespace/collections', { path, parents: true }), 201);
  }

  async function put(client: TestClient, path: string, body = 'x') {
    return client.request<EntryDto>('PUT', '/api/v1/data', {
      query: { path },
      headers: { 'content-type': 'application/octet-stream' },
      body,
    });
  }

  async function trash(client: TestClient, path: string): Promise<string> {
    return expectStatus(await client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path } }), 200)
      .body.id;
  }

  it('a token confined to a collection neither sees nor purges trash from outside it', async () => {
    const home = `/home/${alice.username}`;
    await mkdir(alice.client, `${home}/proj`);
    await mkdir(alice.client, `${home}/private`);
    expectStatus(await put(alice.client, `${home}/private/s.txt`), 201);
    const outside = await trash(alice.client, `${home}/private/s.txt`);
    const confined = site.asToken(
      (await token(alice.client, { scope: 'write', collection: `${home}/proj` })).secret,
    );
    const listed = expectStatus(await confined.get<Page<TrashEntryDto>>('/api/v1/trash'), 200).body;
    expect(listed.items.map((t) => t.id)).not.toContain(outside);
    expectError(await confined.delete(`/api/v1/trash/${outside}`), 403, ErrorCode.TokenOutsideCollection);
    expect((await site.query('SELECT 1 FROM trash_entries WHERE id = $1', [outside])).rowCount).toBe(1);

    // An administrator's token confined to its own home does not act site-wide.
    const admin = await site.admin();
    const adminConfined = site.asToken(
      (await token(admin, { scope: 'admin', collection: '/home/admin' })).secret,
    );
    const seen = expectStatus(await adminConfined.get<Page<TrashEntryDto>>('/api/v1/trash'), 200).body;
    expect(seen.items.map((t) => t.id)).not.toContain(outside);
    expectError(await adminConfined.delete(`/api/v1/trash/${outside}`), 404, ErrorCode.NotFound);
  });

  it('only an unconfined admin-scope credential revokes other people’s tokens', async () => {
    const bobs = await token(bob.client, { scope: 'read' });
    const admin = await site.admin();
    const adminWrite = site.asToken((await token(admin, { scope: 'write' })).secret);
    expectError(await adminWrite.delete(`/api/v1/tokens/${bobs.id}`), 404, ErrorCode.NotFound);
    const adminConfined = site.asToken(
      (await token(admin, { scope: 'admin', collection: '/home/admin' })).secret,
    );
    expectError(await adminConfined.delete(`/api/v1/tokens/${bobs.id}`), 404, ErrorCode.NotFound);
    expectStatus(await site.asToken(bobs.secret).get('/api/v1/me'), 200);

    // A confined token cannot revoke its owner's unconfined tokens.
    const full = await token(alice.client, { scope: 'write' });
    const confined = site.asToken(
      (await token(alice.client, { scope: 'write', collection: `/home/${alice.username}` })).secret,
    );
    expectError(await confined.delete(`/api/v1/tokens/${full.id}`), 403, ErrorCode.TokenOutsideCollection);
    expectStatus(await site.asToken(full.secret).get('/api/v1/me'), 200);
  });

  it('a token cannot make a token that outlives it', async () => {
    const soon = new Date(Date.now() + 3600_000).toISOString();
    const parent = site.asToken((await token(alice.client, { scope: 'write', expiresAt: soon })).secret);
    const later = new Date(Date.now() + 200 * 24 * 3600_000).toISOString();
    expectError(
      await parent.post('/api/v1/tokens', { name: 'child', scope: 'read', expiresAt: later }),
      422,
      ErrorCode.ValidationFailed,
    );
    const child = expectStatus(
      await parent.post<{ expiresAt: string }>('/api/v1/tokens', { name: 'child', scope: 'read' }),
      201,
    ).body;
    expect(Date.parse(child.expiresAt)).toBeLessThanOrEqual(Date.parse(soon));
  });

  it('write access to a shared collection does not let anyone take other people’s objects out of it', async () => {
    const admin = await site.admin();
    const group = uniqueName('g')
      .toLowerCase()
      .replace(/[^a-z0-9-]/g, '');
    expectStatus(await admin.post('/api/v1/groups', { name: group }), 201);
    for (const u of [alice, bob]) {
      expectStatus(await admin.put(`/api/v1/groups/${group}/members`, { username: u.username }), 200);
    }
    // Memberships are read per request: sign in again is not needed.
    expectStatus(await put(alice.client, `/projects/${group}/adata`), 201);
    expectError(
      await bob.client.post('/api/v1/namespace/move', {
        from: `/projects/${group}/adata`,
        to: `/home/${bob.username}/adata`,
      }),
      403,
      ErrorCode.PermissionDenied,
    );
    // Renaming in place stays possible with write.
    expectStatus(
      await bob.client.post('/api/v1/namespace/move', {
        from: `/projects/${group}/adata`,
        to: `/projects/${group}/adata-renamed`,
      }),
      200,
    );
  });

  it('a token confined to a deleted collection stops working', async () => {
    const dir = `/home/${alice.username}/${uniqueName('gone')}`;
    await mkdir(alice.client, dir);
    const confined = site.asToken((await token(alice.client, { scope: 'write', collection: dir })).secret);
    expectStatus(await confined.get('/api/v1/namespace/stat', { query: { path: dir } }), 200);
    await trash(alice.client, dir);
    await mkdir(alice.client, dir);
    expectError(await put(confined, `${dir}/f`), 403, ErrorCode.TokenOutsideCollection);
  });

  it('an administrator’s read or write token cannot read other accounts', async () => {
    const admin = await site.admin();
    const adminWrite = site.asToken((await token(admin, { scope: 'write' })).secret);
    expectError(await adminWrite.get(`/api/v1/users/${bob.username}`), 403, ErrorCode.TokenScopeInsufficient);
    expectStatus(await admin.get(`/api/v1/users/${bob.username}`), 200);
  });

  it('answers 422, not 500, for ids and cursors beyond bigint and for text with NUL', async () => {
    const huge = '9999999999999999999';
    expectError(await alice.client.post(`/api/v1/trash/${huge}/restore`), 422, ErrorCode.ValidationFailed);
    expectError(await alice.client.delete(`/api/v1/tokens/${huge}`), 422, ErrorCode.ValidationFailed);
    expectError(
      await alice.client.get('/api/v1/trash', { query: { cursor: huge } }),
      422,
      ErrorCode.InvalidCursor,
    );
    const cursor = (c: object): string => Buffer.from(JSON.stringify(c)).toString('base64url');
    const home = `/home/${alice.username}`;
    for (const [sort, c] of [
      ['name', { k: 0, v: 'a', n: 'a', id: huge }],
      ['size', { k: 1, v: huge, n: 'a', id: '1' }],
      ['modified', { k: 1, v: '1', n: 'a', id: '1' }],
      ['name', { k: 1, v: 'a\u0000', n: 'a', id: '1' }],
    ] as const) {
      expectError(
        await alice.client.get('/api/v1/namespace/children', {
          query: { path: home, sort, cursor: cursor(c) },
        }),
        422,
        ErrorCode.InvalidCursor,
      );
    }
    expectError(
      await site.anonymous().post('/api/v1/auth/login', { username: 'a\u0000', password: 'x' }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(
      await alice.client.post('/api/v1/tokens', { name: 'n\u0000', scope: 'read' }),
      422,
      ErrorCode.ValidationFailed,
    );
  });

  it('answers 400, not 500, for a compressed body that does not decompress', async () => {
    const url = new URL(alice.client.url('/api/v1/namespace/collections'));
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(url, {
        method: 'POST',
        headers: {
          ...alice.client.authHeaders('POST'),
          'content-type': 'application/json',
          'content-encoding': 'gzip',
        },
      });
      req.on('response', (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.end('not gzip at all');
    });
    expect(status).toBe(400);
  });

  it('restore and purge of one trash entry at once: one wins cleanly, nothing is lost or half-done', async () => {
    for (let round = 0; round < 8; round++) {
      const path = `/home/${alice.username}/${uniqueName('race')}`;
      expectStatus(await put(alice.client, path, 'keep me'), 201);
      const id = await trash(alice.client, path);
      await site.runReplicationCycle(); // purgeable from the next cycle on
      const [restore, purge] = await Promise.all([
        alice.client.post(`/api/v1/trash/${id}/restore`),
        alice.client.delete(`/api/v1/trash/${id}`),
      ]);
      expect([restore.status, purge.status].sort()).toSatisfy(
        (s: number[]) => (s[0] === 200 && s[1] === 404) || (s[0] === 204 && s[1] === 404),
      );
      const exists = (await alice.client.get('/api/v1/namespace/stat', { query: { path } })).status === 200;
      expect(exists).toBe(restore.status === 200);
    }
  });

  it('deleting a collection while things are added to it leaves nothing live under the trashed collection', async () => {
    for (let round = 0; round < 10; round++) {
      const dir = `/home/${alice.username}/${uniqueName('tr')}`;
      await mkdir(alice.client, dir);
      await Promise.all([
        alice.client.delete('/api/v1/namespace', { query: { path: dir } }),
        put(alice.client, `${dir}/f`),
        alice.client.post('/api/v1/namespace/collections', { path: `${dir}/sub` }),
      ]);
    }
    const orphans = await site.query(
      `SELECT 1 FROM collections c JOIN collections p ON p.id = c.parent_id WHERE c.trash_id = 0 AND p.trash_id <> 0
       UNION ALL
       SELECT 1 FROM data_objects o JOIN collections p ON p.id = o.collection_id WHERE o.trash_id = 0 AND p.trash_id <> 0`,
    );
    expect(orphans.rowCount).toBe(0);
  });

  it('does not reveal which names exist in collections the caller cannot read', async () => {
    const dir = `/home/${alice.username}/${uniqueName('private')}`;
    await mkdir(alice.client, dir);
    expectStatus(await put(alice.client, `${dir}/diary.txt`), 201);
    for (const path of [`${dir}/diary.txt`, `${dir}/nothere`]) {
      expectError(await put(bob.client, path), 403, ErrorCode.PermissionDenied);
      expectError(
        await bob.client.get('/api/v1/namespace/stat', { query: { path } }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(
        await bob.client.get('/api/v1/permissions', { query: { path } }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(
        await bob.client.delete('/api/v1/namespace', { query: { path } }),
        403,
        ErrorCode.PermissionDenied,
      );
    }
    // The owner still learns that a name is missing.
    expectError(
      await alice.client.get('/api/v1/namespace/stat', { query: { path: `${dir}/nothere` } }),
      404,
      ErrorCode.NotFound,
    );
  });
});
