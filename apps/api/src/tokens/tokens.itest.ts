import { ErrorCode, type CreatedTokenDto, type Page, type TokenDto, type UserDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

describe('API tokens', () => {
  let site: TestSite;
  /** Shared accounts for tests that do not look at the whole token list. */
  let carol: TestUser;
  let dave: TestUser;
  let bossUser: TestUser;
  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    [carol, dave, bossUser] = await Promise.all([
      site.createUser(),
      site.createUser(),
      site.createUser({ isAdmin: true }),
    ]);
  });
  afterAll(async () => {
    await site?.close();
  });

  async function createToken(
    client: TestClient,
    body: { name?: string; scope: 'read' | 'write' | 'admin'; collection?: string; expiresAt?: string },
  ): Promise<CreatedTokenDto> {
    const res = await client.post<CreatedTokenDto>('/api/v1/tokens', { name: 'test token', ...body });
    expectStatus(res, 201);
    return res.body;
  }

  it('shows the secret once at creation; the list never shows it', async () => {
    const { client } = await site.createUser();
    const before = Date.now();
    const created = await createToken(client, { name: 'backup script', scope: 'read' });
    expect(created.secret).toMatch(/^trib_[A-Za-z0-9_-]{43}$/);
    expect(created).toMatchObject({
      name: 'backup script',
      scope: 'read',
      collection: null,
      revokedAt: null,
      lastUsedAt: null,
    });
    // Default lifetime: 90 days.
    const lifetime = Date.parse(created.expiresAt ?? '') - before;
    expect(lifetime).toBeGreaterThan(90 * 86400_000 - 60_000);
    expect(lifetime).toBeLessThan(90 * 86400_000 + 60_000);

    const list = await client.get<TokenDto[]>('/api/v1/tokens');
    expectStatus(list, 200);
    expect(list.body).toHaveLength(1);
    expect(list.body[0]).not.toHaveProperty('secret');
    expect(list.text).not.toContain(created.secret);
    expect(list.text).not.toContain(created.secret.slice(5));
    const { secret: _secret, ...withoutSecret } = created;
    expect(list.body[0]).toEqual(withoutSecret);
  });

  it('authenticates as its owner and records lastUsedAt', async () => {
    const { client, username } = carol;
    const created = await createToken(client, { scope: 'read' });
    const token = site.asToken(created.secret);
    const me = await token.get<UserDto>('/api/v1/me');
    expectStatus(me, 200);
    expect(me.body.username).toBe(username);
    const [listed] = (await client.get<TokenDto[]>('/api/v1/tokens')).body;
    expect(listed?.lastUsedAt).not.toBeNull();
    const used = Date.parse(listed?.lastUsedAt ?? '');
    expect(used).toBeGreaterThanOrEqual(Date.parse(created.createdAt));
    expect(used).toBeLessThanOrEqual(Date.now() + 1000);
  });

  it('lists only the caller’s own tokens, newest first', async () => {
    const a = await site.createUser();
    const b = await site.createUser();
    await createToken(a.client, { name: 'first', scope: 'read' });
    await createToken(a.client, { name: 'second', scope: 'write' });
    await createToken(b.client, { name: 'other user', scope: 'read' });
    const names = (await a.client.get<TokenDto[]>('/api/v1/tokens')).body.map((t) => t.name);
    expect(names).toEqual(['second', 'first']);
  });

  it('needs no CSRF token: bearer requests are not sent by browsers on their own', async () => {
    const { client } = carol;
    const created = await createToken(client, { scope: 'write' });
    expectStatus(
      await site.asToken(created.secret).post('/api/v1/tokens', { name: 'child', scope: 'read' }),
      201,
    );
  });

  it('a revoked token answers 401 TOKEN_REVOKED', async () => {
    const { client } = carol;
    const created = await createToken(client, { scope: 'read' });
    expectStatus(await site.asToken(created.secret).get('/api/v1/me'), 200);
    expectStatus(await client.delete(`/api/v1/tokens/${created.id}`), 204);
    expectError(await site.asToken(created.secret).get('/api/v1/me'), 401, ErrorCode.TokenRevoked);
    const [listed] = (await client.get<TokenDto[]>('/api/v1/tokens')).body;
    expect(listed?.revokedAt).not.toBeNull();
  });

  it('a token can revoke itself', async () => {
    const { client } = carol;
    const created = await createToken(client, { scope: 'write' });
    const token = site.asToken(created.secret);
    expectStatus(await token.delete(`/api/v1/tokens/${created.id}`), 204);
    expectError(await token.get('/api/v1/me'), 401, ErrorCode.TokenRevoked);
  });

  it('only the owner or an administrator revokes a token; others get 404', async () => {
    const owner = carol;
    const stranger = dave;
    const created = await createToken(owner.client, { scope: 'read' });
    expectError(await stranger.client.delete(`/api/v1/tokens/${created.id}`), 404, ErrorCode.NotFound);
    expectStatus(await site.asToken(created.secret).get('/api/v1/me'), 200);
    const admin = await site.admin();
    expectStatus(await admin.delete(`/api/v1/tokens/${created.id}`), 204);
    expectError(await site.asToken(created.secret).get('/api/v1/me'), 401, ErrorCode.TokenRevoked);
  });

  it('an expired token answers 401 TOKEN_EXPIRED', async () => {
    const { client } = carol;
    const created = await createToken(client, { scope: 'read' });
    expectStatus(await site.asToken(created.secret).get('/api/v1/me'), 200);
    await site.changeCredentials(
      `UPDATE api_tokens SET expires_at = now() - interval '1 second' WHERE id = $1`,
      [created.id],
    );
    expectError(await site.asToken(created.secret).get('/api/v1/me'), 401, ErrorCode.TokenExpired);
  });

  it('a token created with a near expiry stops working once it passes', async () => {
    const { client } = carol;
    const created = await createToken(client, {
      scope: 'read',
      expiresAt: new Date(Date.now() + 1000).toISOString(),
    });
    expectStatus(await site.asToken(created.secret).get('/api/v1/me'), 200);
    await new Promise((r) => setTimeout(r, 1200));
    expectError(await site.asToken(created.secret).get('/api/v1/me'), 401, ErrorCode.TokenExpired);
  });

  it('refuses expiry times in the past or more than a year ahead', async () => {
    const { client } = await site.createUser();
    const past = await client.post('/api/v1/tokens', {
      name: 'x',
      scope: 'read',
      expiresAt: '2001-01-01T00:00:00Z',
    });
    expect(Object.keys(expectError(past, 422, ErrorCode.ValidationFailed).details ?? {})).toEqual([
      'expiresAt',
    ]);
    const far = new Date(Date.now() + 400 * 86400_000).toISOString();
    expectError(
      await client.post('/api/v1/tokens', { name: 'x', scope: 'read', expiresAt: far }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(
      await client.post('/api/v1/tokens', { name: 'x', scope: 'read', expiresAt: 'tomorrow' }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(
      await client.post('/api/v1/tokens', { name: 'x', scope: 'superuser' }),
      422,
      ErrorCode.ValidationFailed,
    );
    expect((await client.get<TokenDto[]>('/api/v1/tokens')).body).toEqual([]);
  });

  describe('scopes', () => {
    it('a read-scope token cannot make changes: 403 TOKEN_SCOPE_INSUFFICIENT', async () => {
      const { client } = await site.createUser();
      const read = site.asToken((await createToken(client, { scope: 'read' })).secret);
      expectStatus(await read.get('/api/v1/tokens'), 200);
      expectError(
        await read.post('/api/v1/tokens', { name: 'y', scope: 'read' }),
        403,
        ErrorCode.TokenScopeInsufficient,
      );
      expectError(
        await read.put('/api/v1/me/active-group', { group: 'public' }),
        403,
        ErrorCode.TokenScopeInsufficient,
      );
      expectError(await read.delete('/api/v1/tokens/1'), 403, ErrorCode.TokenScopeInsufficient);
      expect((await client.get<TokenDto[]>('/api/v1/tokens')).body).toHaveLength(1);
    });

    it('a non-admin cannot create an admin-scope token: 403 ADMIN_REQUIRED', async () => {
      const { client } = await site.createUser();
      expectError(
        await client.post('/api/v1/tokens', { name: 'root', scope: 'admin' }),
        403,
        ErrorCode.AdminRequired,
      );
      expect((await client.get<TokenDto[]>('/api/v1/tokens')).body).toEqual([]);
    });

    it('administrators need an admin-scope token for account administration', async () => {
      const boss = bossUser;
      const write = site.asToken((await createToken(boss.client, { scope: 'write' })).secret);
      const adminToken = site.asToken((await createToken(boss.client, { scope: 'admin' })).secret);
      expectError(await write.get('/api/v1/users'), 403, ErrorCode.TokenScopeInsufficient);
      expectStatus(await adminToken.get<Page<UserDto>>('/api/v1/users'), 200);
    });

    it('a token cannot create a stronger token', async () => {
      const boss = bossUser;
      const write = site.asToken((await createToken(boss.client, { scope: 'write' })).secret);
      expectError(
        await write.post('/api/v1/tokens', { name: 'up', scope: 'admin' }),
        403,
        ErrorCode.TokenScopeInsufficient,
      );
      expectStatus(await write.post('/api/v1/tokens', { name: 'same', scope: 'write' }), 201);
    });
  });

  describe('tokens confined to a collection', () => {
    it('reading outside the collection gives 403 TOKEN_OUTSIDE_COLLECTION', async () => {
      const { client, username } = carol;
      const created = await createToken(client, { scope: 'read', collection: `/home/${username}` });
      expect(created.collection).toBe(`/home/${username}`);
      const token = site.asToken(created.secret);
      expectStatus(await token.get('/api/v1/namespace/stat', { query: { path: `/home/${username}` } }), 200);
      expectError(
        await token.get('/api/v1/namespace/stat', { query: { path: '/projects' } }),
        403,
        ErrorCode.TokenOutsideCollection,
      );
      expectError(
        await token.get('/api/v1/namespace/stat', { query: { path: '/home' } }),
        403,
        ErrorCode.TokenOutsideCollection,
      );
      // A sibling whose name merely starts with the same characters is outside too.
      expectError(
        await token.get('/api/v1/namespace/stat', { query: { path: `/home/${username}x` } }),
        403,
        ErrorCode.TokenOutsideCollection,
      );
    });

    it('an administrator’s confined token cannot administer accounts', async () => {
      const boss = bossUser;
      const created = await createToken(boss.client, {
        scope: 'admin',
        collection: `/home/${boss.username}`,
      });
      expectError(
        await site.asToken(created.secret).get('/api/v1/users'),
        403,
        ErrorCode.TokenOutsideCollection,
      );
    });

    it('a confined token only creates tokens inside its collection', async () => {
      const { client, username } = carol;
      const parent = site.asToken(
        (await createToken(client, { scope: 'write', collection: `/home/${username}` })).secret,
      );
      expectError(
        await parent.post('/api/v1/tokens', { name: 'escape', scope: 'read', collection: '/projects' }),
        403,
        ErrorCode.TokenOutsideCollection,
      );
      const child = await parent.post<CreatedTokenDto>('/api/v1/tokens', { name: 'inherits', scope: 'read' });
      expectStatus(child, 201);
      expect(child.body.collection).toBe(`/home/${username}`);
    });

    it('cannot be confined to a collection that does not exist (404) or that one cannot read (403)', async () => {
      const { client } = carol;
      const other = await site.createAccount();
      expectError(
        await client.post('/api/v1/tokens', { name: 'x', scope: 'read', collection: '/no/such/place' }),
        404,
        ErrorCode.NotFound,
      );
      expectError(
        await client.post('/api/v1/tokens', {
          name: 'x',
          scope: 'read',
          collection: `/home/${other.username}`,
        }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(
        await client.post('/api/v1/tokens', { name: 'x', scope: 'read', collection: '/a/../b' }),
        422,
        ErrorCode.ValidationFailed,
      );
    });
  });

  describe('malformed credentials', () => {
    it.each([
      ['a random string', 'Bearer garbage'],
      ['a well-formed but unknown token', `Bearer trib_${'A'.repeat(43)}`],
      ['an empty bearer', 'Bearer '],
      ['another scheme', 'Basic YWRtaW46YWRtaW4='],
    ])('%s gives 401 TOKEN_INVALID', async (_label, header) => {
      const res = await site.anonymous().get('/api/v1/me', { headers: { authorization: header } });
      expectError(res, 401, ErrorCode.TokenInvalid);
    });

    it('a bad bearer is refused even with a valid session cookie', async () => {
      const admin = await site.admin();
      const res = await admin.get('/api/v1/me', { headers: { authorization: 'Bearer garbage' } });
      expectError(res, 401, ErrorCode.TokenInvalid);
    });

    it('a bad bearer does not block public routes', async () => {
      expectStatus(
        await site.anonymous().get('/api/health', { headers: { authorization: 'Bearer garbage' } }),
        200,
      );
    });
  });
});
