import { ErrorCode, type UsageDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

/**
 * `GET /api/v1/usage` on a real site: sums over a subtree (whole, directly in it, per child, per
 * site), the trash left out, children cut with `childrenTruncated`, refusals that reveal nothing to
 * a caller who may not read all of it, and bad input.
 */
describe('storage used below a collection', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;
  let proj: string;

  const usage = (client: TestClient, query: Record<string, string | number>) =>
    client.get<UsageDto>('/api/v1/usage', { query });
  const put = (client: TestClient, path: string, bytes: number) =>
    client.request('PUT', '/api/v1/data', {
      query: { path },
      headers: { 'content-type': 'application/octet-stream' },
      body: 'x'.repeat(bytes),
    });

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    alice = await site.createUser();
    bob = await site.createUser();
    proj = `${alice.user.homePath}/proj`;
    for (const dir of [proj, `${proj}/a`, `${proj}/b`, `${proj}/b/c`, `${proj}/empty`]) {
      expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: dir }), 201);
    }
    for (const [path, bytes] of [
      [`${proj}/x`, 10],
      [`${proj}/a/y`, 100],
      [`${proj}/a/gone`, 7000],
      [`${proj}/b/w`, 5],
      [`${proj}/b/c/z`, 1000],
    ] as const) {
      expectStatus(await put(alice.client, path, bytes), 201);
    }
    // In the trash: not counted.
    expectStatus(await alice.client.delete('/api/v1/namespace', { query: { path: `${proj}/a/gone` } }), 200);
  });
  afterAll(async () => {
    await site?.close();
  });

  it('adds up the live objects below a collection, directly in it, per child and per site', async () => {
    const body = expectStatus(await usage(alice.client, { path: proj }), 200).body;
    expect(body).toEqual({
      path: proj,
      objects: 4,
      bytes: 1115,
      here: { objects: 1, bytes: 10 },
      children: [
        { name: 'b', path: `${proj}/b`, objects: 2, bytes: 1005 },
        { name: 'a', path: `${proj}/a`, objects: 1, bytes: 100 },
      ],
      childrenTruncated: false,
      sites: [{ site: site.config.siteId, copies: 4, bytes: 1115, cachedBytes: 0 }],
    });
    const deep = expectStatus(await usage(alice.client, { path: `${proj}/b/c/` }), 200).body;
    expect(deep).toMatchObject({
      path: `${proj}/b/c`,
      objects: 1,
      bytes: 1000,
      here: { objects: 1, bytes: 1000 },
    });
    expect(deep.children).toEqual([]);
    const empty = expectStatus(await usage(alice.client, { path: `${proj}/empty` }), 200).body;
    expect(empty).toMatchObject({ objects: 0, bytes: 0, children: [], sites: [] });
  });

  it('lists as many children as asked, largest first, and says when there are more', async () => {
    const body = expectStatus(await usage(alice.client, { path: proj, children: 1 }), 200).body;
    expect(body.children.map((c) => c.name)).toEqual(['b']);
    expect(body.childrenTruncated).toBe(true);
    expect(body.bytes).toBe(1115);
    const none = expectStatus(await usage(alice.client, { path: proj, children: 0 }), 200).body;
    expect(none.children).toEqual([]);
    expect(none.childrenTruncated).toBe(true);
  });

  it('answers an administrator for the whole namespace', async () => {
    const admin = await site.admin();
    const body = expectStatus(await usage(admin, { path: '/' }), 200).body;
    expect(body.path).toBe('/');
    expect(body.objects).toBeGreaterThanOrEqual(4);
    expect(body.bytes).toBeGreaterThanOrEqual(1115);
  });

  it('tells a caller who may not read the whole subtree nothing, whether it exists or not', async () => {
    const there = expectError(await usage(bob.client, { path: proj }), 403, ErrorCode.PermissionDenied);
    const missing = expectError(
      await usage(bob.client, { path: `${proj}/nothing-here` }),
      403,
      ErrorCode.PermissionDenied,
    );
    expect(there.message).not.toMatch(/bytes|objects/);
    expect(missing.message).toContain(`${proj}/nothing-here`);
    // Read on one child collection: its usage, not its parent's.
    expectStatus(
      await alice.client.put('/api/v1/permissions', { path: `${proj}/b`, user: bob.username, level: 'read' }),
      200,
    );
    const child = expectStatus(await usage(bob.client, { path: `${proj}/b` }), 200).body;
    expect(child).toMatchObject({ objects: 2, bytes: 1005 });
    expectError(await usage(bob.client, { path: proj }), 403, ErrorCode.PermissionDenied);
  });

  it('refuses bad input with a message that says what to fix', async () => {
    expectError(await usage(alice.client, { path: `${proj}/nothing-here` }), 404, ErrorCode.NotFound);
    const object = expectError(
      await usage(alice.client, { path: `${proj}/x` }),
      409,
      ErrorCode.NotACollection,
    );
    expect(object.message).toContain('collections');
    for (const children of [-1, 501, 'many', 1.5]) {
      const bad = expectError(
        await usage(alice.client, { path: proj, children }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(bad.message).toContain('children');
    }
    expectError(await usage(alice.client, { path: 'relative/path' }), 422, ErrorCode.ValidationFailed);
  });
});
