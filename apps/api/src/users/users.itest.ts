import { ErrorCode, type Page, type UserDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newPassword, uniqueUsername } from '@tributary/testkit';
import { ADMIN_USERNAME, expectError, expectStatus, startTestSite, type TestSite } from '../test/test-site';

describe('user accounts', () => {
  let site: TestSite;
  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
  });
  afterAll(async () => {
    await site?.close();
  });

  describe('administrators', () => {
    it('create an account with defaults and a home path, and never see its password hash', async () => {
      const admin = await site.admin();
      const username = uniqueUsername('new');
      const password = newPassword();
      const res = await admin.post<UserDto>('/api/v1/users', { username, password });
      expectStatus(res, 201);
      expect(res.body).toMatchObject({
        username,
        displayName: username,
        email: null,
        isAdmin: false,
        disabled: false,
        activeGroup: null,
        groups: [],
        homePath: `/home/${username}`,
      });
      expect(res.body.id).toMatch(/^[1-9][0-9]*$/);
      expect(Number.isNaN(Date.parse(res.body.createdAt))).toBe(false);
      expect(res.text).not.toContain(password);
      expect(res.text).not.toMatch(/scrypt|passwordHash/);
      // The new account can sign in with the password it was given.
      const client = await site.login(username, password);
      expect(expectStatus(await client.get<UserDto>('/api/v1/me'), 200).body.id).toBe(res.body.id);
    });

    it('give ids from the site’s id range (SITE_INDEX 1 → 2^48 and up)', async () => {
      const { user } = await site.createAccount();
      expect(BigInt(user.id)).toBeGreaterThanOrEqual(2n ** 48n);
      expect(BigInt(user.id)).toBeLessThan(2n ** 49n);
    });

    it('create administrators, with display name and email', async () => {
      const admin = await site.admin();
      const username = uniqueUsername('boss');
      const res = await admin.post<UserDto>('/api/v1/users', {
        username,
        password: newPassword(),
        isAdmin: true,
        displayName: '  Dr. Boss  ',
        email: 'boss@example.org',
      });
      expectStatus(res, 201);
      expect(res.body).toMatchObject({ isAdmin: true, displayName: 'Dr. Boss', email: 'boss@example.org' });
    });

    it('list accounts in username order, page by page', async () => {
      const admin = await site.admin();
      await site.createAccount({ username: uniqueUsername('list-a') });
      await site.createAccount({ username: uniqueUsername('list-b') });
      const all = expectStatus(
        await admin.get<Page<UserDto>>('/api/v1/users', { query: { limit: 1000 } }),
        200,
      ).body;
      const names = all.items.map((u) => u.username);
      expect(names).toContain(ADMIN_USERNAME);
      expect(names).toEqual([...names].sort());
      expect(all.total).toBe(all.items.length);
      expect(all.nextCursor).toBeUndefined();

      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const res = await admin.get<Page<UserDto>>('/api/v1/users', { query: { limit: 2, cursor } });
        expectStatus(res, 200);
        expect(res.body.items.length).toBeLessThanOrEqual(2);
        expect(res.body.total).toBe(all.total);
        seen.push(...res.body.items.map((u) => u.username));
        cursor = res.body.nextCursor;
        if (!cursor) break;
      }
      expect(seen).toEqual(names);
    });

    it('refuse a bad page size with 422', async () => {
      const admin = await site.admin();
      const err = expectError(
        await admin.get('/api/v1/users', { query: { limit: 0 } }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(Object.keys(err.details ?? {})).toContain('limit');
      expectError(
        await admin.get('/api/v1/users', { query: { limit: 'lots' } }),
        422,
        ErrorCode.ValidationFailed,
      );
    });

    it('read one account, and 404 NOT_FOUND for an unknown one', async () => {
      const admin = await site.admin();
      const { username, user } = await site.createAccount();
      const res = expectStatus(await admin.get<UserDto>(`/api/v1/users/${username}`), 200);
      expect(res.body).toEqual(user);
      expectError(await admin.get(`/api/v1/users/${uniqueUsername('nobody')}`), 404, ErrorCode.NotFound);
    });

    it('update display name, email and admin rights', async () => {
      const admin = await site.admin();
      const { username, user } = await site.createAccount();
      const res = await admin.patch<UserDto>(`/api/v1/users/${username}`, {
        displayName: 'Renamed Person',
        email: 'renamed@example.org',
        isAdmin: true,
      });
      expectStatus(res, 200);
      expect(res.body).toMatchObject({
        username,
        displayName: 'Renamed Person',
        email: 'renamed@example.org',
        isAdmin: true,
      });
      expect(Date.parse(res.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(user.updatedAt));
      const cleared = await admin.patch<UserDto>(`/api/v1/users/${username}`, {
        email: null,
        isAdmin: false,
      });
      expect(cleared.body).toMatchObject({ email: null, isAdmin: false, displayName: 'Renamed Person' });
      // The change is stored, not just echoed.
      expect((await admin.get<UserDto>(`/api/v1/users/${username}`)).body).toMatchObject({
        email: null,
        isAdmin: false,
      });
    });

    it('set a new password, which ends the user’s sessions', async () => {
      const admin = await site.admin();
      const { username, password, client } = await site.createUser();
      const next = newPassword();
      expectStatus(await admin.patch(`/api/v1/users/${username}`, { password: next }), 200);
      expect((await client.get('/api/v1/me')).status).toBe(401);
      expectError(
        await site.anonymous().post('/api/v1/auth/login', { username, password }),
        401,
        ErrorCode.InvalidCredentials,
      );
      await site.login(username, next);
    });

    it('need their current password to set their own password through PATCH, by session or token', async () => {
      const me = await site.createUser({ isAdmin: true });
      const token = await me.client.post<{ secret: string }>('/api/v1/tokens', { name: 'a', scope: 'admin' });
      expectStatus(token, 201);
      for (const caller of [me.client, site.asToken(token.body.secret)]) {
        const missing = expectError(
          await caller.patch(`/api/v1/users/${me.username}`, { password: newPassword() }),
          422,
          ErrorCode.ValidationFailed,
        );
        expect(Object.keys(missing.details ?? {})).toEqual(['currentPassword']);
        expectError(
          await caller.patch(`/api/v1/users/${me.username}`, {
            password: newPassword(),
            currentPassword: 'not-my-password',
          }),
          401,
          ErrorCode.InvalidCredentials,
        );
      }
      // Neither attempt changed the password.
      await site.login(me.username, me.password);
      const next = newPassword();
      expectStatus(
        await me.client.patch(`/api/v1/users/${me.username}`, {
          password: next,
          currentPassword: me.password,
        }),
        200,
      );
      await site.login(me.username, next);
    });

    it('cannot remove their own admin rights or disable themselves', async () => {
      const me = await site.createUser({ isAdmin: true });
      expectError(
        await me.client.patch(`/api/v1/users/${me.username}`, { isAdmin: false }),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(
        await me.client.patch(`/api/v1/users/${me.username}`, { disabled: true }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect((await me.client.get<UserDto>('/api/v1/me')).body).toMatchObject({
        isAdmin: true,
        disabled: false,
      });
    });

    it('get 409 NAME_TAKEN for a duplicate username, including the bootstrap administrator’s', async () => {
      const admin = await site.admin();
      const { username } = await site.createAccount();
      expectError(
        await admin.post('/api/v1/users', { username, password: newPassword() }),
        409,
        ErrorCode.NameTaken,
      );
      expectError(
        await admin.post('/api/v1/users', { username: ADMIN_USERNAME, password: newPassword() }),
        409,
        ErrorCode.NameTaken,
      );
    });

    it('get 422 VALIDATION_FAILED with messages keyed by field for bad input', async () => {
      const admin = await site.admin();
      const res = await admin.post('/api/v1/users', {
        username: 'Not Valid!',
        password: 'short',
        email: 'not-an-email',
      });
      const err = expectError(res, 422, ErrorCode.ValidationFailed);
      expect(Object.keys(err.details ?? {}).sort()).toEqual(['email', 'password', 'username']);
      for (const messages of Object.values(err.details ?? {})) {
        expect(messages.length).toBeGreaterThan(0);
        for (const m of messages) expect(m.length).toBeGreaterThan(0);
      }
      expect(err.details?.password?.join(' ')).toMatch(/12/);

      const missing = expectError(await admin.post('/api/v1/users', {}), 422, ErrorCode.ValidationFailed);
      expect(Object.keys(missing.details ?? {}).sort()).toEqual(['password', 'username']);

      const wrongType = expectError(
        await admin.post('/api/v1/users', {
          username: uniqueUsername(),
          password: newPassword(),
          isAdmin: 'yes',
        }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(Object.keys(wrongType.details ?? {})).toEqual(['isAdmin']);
    });

    it('get 422 for an empty update', async () => {
      const admin = await site.admin();
      const { username } = await site.createAccount();
      expectError(await admin.patch(`/api/v1/users/${username}`, {}), 422, ErrorCode.ValidationFailed);
    });

    it('get 422 for a malformed username in the URL', async () => {
      const admin = await site.admin();
      expectError(await admin.get('/api/v1/users/NOT%20VALID'), 422, ErrorCode.ValidationFailed);
    });
  });

  describe('non-administrators', () => {
    it('get 403 ADMIN_REQUIRED for creating, listing and updating accounts', async () => {
      const { client } = await site.createUser();
      const target = await site.createAccount();
      expectError(
        await client.post('/api/v1/users', { username: uniqueUsername(), password: newPassword() }),
        403,
        ErrorCode.AdminRequired,
      );
      expectError(await client.get('/api/v1/users'), 403, ErrorCode.AdminRequired);
      expectError(
        await client.patch(`/api/v1/users/${target.username}`, { displayName: 'x' }),
        403,
        ErrorCode.AdminRequired,
      );
      expectError(await client.get(`/api/v1/users/${target.username}`), 403, ErrorCode.AdminRequired);
      // Nothing changed.
      const admin = await site.admin();
      expect((await admin.get<UserDto>(`/api/v1/users/${target.username}`)).body.displayName).toBe(
        target.username,
      );
    });

    it('cannot make themselves administrators', async () => {
      const { client, username } = await site.createUser();
      expectError(
        await client.patch(`/api/v1/users/${username}`, { isAdmin: true }),
        403,
        ErrorCode.AdminRequired,
      );
      expect((await client.get<UserDto>('/api/v1/me')).body.isAdmin).toBe(false);
    });

    it('can read their own account by name and via /me', async () => {
      const { client, username, user } = await site.createUser();
      expect(expectStatus(await client.get<UserDto>(`/api/v1/users/${username}`), 200).body).toEqual(user);
      expect(expectStatus(await client.get<UserDto>('/api/v1/me'), 200).body).toEqual(user);
    });
  });

  describe('changing one’s own password', () => {
    it('needs the current password; ends other sessions but keeps this one', async () => {
      const { username, password, client } = await site.createUser();
      const other = await site.login(username, password);
      const next = newPassword();

      expectError(
        await client.put('/api/v1/me/password', { currentPassword: 'not-my-password', newPassword: next }),
        401,
        ErrorCode.InvalidCredentials,
      );
      // The failed attempt changed nothing.
      expectStatus(await other.get('/api/v1/me'), 200);

      expectStatus(
        await client.put('/api/v1/me/password', { currentPassword: password, newPassword: next }),
        204,
      );
      expectStatus(await client.get('/api/v1/me'), 200);
      expect((await other.get('/api/v1/me')).status).toBe(401);
      expectError(
        await site.anonymous().post('/api/v1/auth/login', { username, password }),
        401,
        ErrorCode.InvalidCredentials,
      );
      await site.login(username, next);
    });

    it('refuses a weak new password with 422 naming newPassword', async () => {
      const { password, client } = await site.createUser();
      const err = expectError(
        await client.put('/api/v1/me/password', { currentPassword: password, newPassword: 'short' }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(Object.keys(err.details ?? {})).toEqual(['newPassword']);
    });

    it('is refused to a write-scope token (it needs an admin-scope token or a session)', async () => {
      const { password, client } = await site.createUser();
      const token = await client.post<{ secret: string }>('/api/v1/tokens', { name: 'w', scope: 'write' });
      expectStatus(token, 201);
      expectError(
        await site
          .asToken(token.body.secret)
          .put('/api/v1/me/password', { currentPassword: password, newPassword: newPassword() }),
        403,
        ErrorCode.TokenScopeInsufficient,
      );
    });
  });
});
