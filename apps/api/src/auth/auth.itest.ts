import { createHash } from 'node:crypto';
import { ErrorCode, type SessionDto, type UserDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueUsername } from '@tributary/testkit';
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  expectError,
  expectStatus,
  startTestSite,
  type TestSite,
} from '../test/test-site';

/** The Set-Cookie header for the session cookie, split into lower-cased attributes. */
function sessionCookieOf(headers: Headers): { value: string; attributes: string[] } | undefined {
  const raw = headers.getSetCookie().find((c) => c.startsWith('trib_session='));
  if (!raw) return undefined;
  const [pair, ...attributes] = raw.split(';').map((p) => p.trim());
  return {
    value: (pair ?? '').slice('trib_session='.length),
    attributes: attributes.map((a) => a.toLowerCase()),
  };
}

describe('authentication', () => {
  let site: TestSite;
  beforeAll(async () => {
    // These tests sign in often; the limit itself is tested on its own site below.
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
  });
  afterAll(async () => {
    await site?.close();
  });

  describe('login', () => {
    it('sets an httpOnly, SameSite=Lax session cookie and returns the user and a CSRF token', async () => {
      const before = Date.now();
      const res = await site
        .anonymous()
        .post<SessionDto>('/api/v1/auth/login', { username: ADMIN_USERNAME, password: ADMIN_PASSWORD });
      expectStatus(res, 200);
      const cookie = sessionCookieOf(res.headers);
      expect(cookie).toBeDefined();
      expect(cookie?.value).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(cookie?.attributes).toContain('httponly');
      expect(cookie?.attributes).toContain('samesite=lax');
      expect(cookie?.attributes).toContain('path=/');
      expect(cookie?.attributes).not.toContain('secure'); // COOKIE_SECURE defaults to false
      expect(cookie?.attributes.some((a) => a.startsWith('expires='))).toBe(true);

      expect(res.body.user).toMatchObject({
        username: 'admin',
        isAdmin: true,
        disabled: false,
        homePath: '/home/admin',
      });
      expect(res.body.user).not.toHaveProperty('passwordHash');
      expect(res.body.csrfToken).toMatch(/^[A-Za-z0-9_-]{43}$/);
      expect(res.body.csrfToken).not.toBe(cookie?.value);
      const expires = Date.parse(res.body.expiresAt);
      // SESSION_TTL_HOURS defaults to 12.
      expect(expires - before).toBeGreaterThan(12 * 3600_000 - 60_000);
      expect(expires - before).toBeLessThan(12 * 3600_000 + 60_000);

      const client = site.session(cookie?.value ?? '', res.body.csrfToken);
      const session = expectStatus(await client.get<SessionDto>('/api/v1/auth/session'), 200);
      expect(session.body.csrfToken).toBe(res.body.csrfToken);
      expect(session.body.user.username).toBe('admin');
      expect(expectStatus(await client.get<UserDto>('/api/v1/me'), 200).body.username).toBe('admin');
    });

    it('gives each login its own session', async () => {
      const a = await site.login(ADMIN_USERNAME, ADMIN_PASSWORD);
      const b = await site.login(ADMIN_USERNAME, ADMIN_PASSWORD);
      expect(a.sessionCookie).not.toBe(b.sessionCookie);
      expect(a.csrfToken).not.toBe(b.csrfToken);
    });

    it('treats the username case-insensitively', async () => {
      const res = await site.anonymous().post<SessionDto>('/api/v1/auth/login', {
        username: 'ADMIN',
        password: ADMIN_PASSWORD,
      });
      expectStatus(res, 200);
      expect(res.body.user.username).toBe('admin');
    });

    it('refuses a wrong password with 401 INVALID_CREDENTIALS and sets no cookie', async () => {
      const res = await site
        .anonymous()
        .post('/api/v1/auth/login', { username: ADMIN_USERNAME, password: 'wrong-password-1' });
      expectError(res, 401, ErrorCode.InvalidCredentials);
      expect(sessionCookieOf(res.headers)).toBeUndefined();
    });

    it('answers an unknown user exactly like a wrong password', async () => {
      const wrong = await site
        .anonymous()
        .post('/api/v1/auth/login', { username: ADMIN_USERNAME, password: 'nope-nope-nope' });
      const unknown = await site
        .anonymous()
        .post('/api/v1/auth/login', { username: uniqueUsername('ghost'), password: 'nope-nope-nope' });
      const a = expectError(wrong, 401, ErrorCode.InvalidCredentials);
      const b = expectError(unknown, 401, ErrorCode.InvalidCredentials);
      expect(b.message).toBe(a.message);
      expect(sessionCookieOf(unknown.headers)).toBeUndefined();
    });

    it('refuses incomplete input with 422 VALIDATION_FAILED naming the field', async () => {
      const res = await site.anonymous().post('/api/v1/auth/login', { username: ADMIN_USERNAME });
      const err = expectError(res, 422, ErrorCode.ValidationFailed);
      expect(Object.keys(err.details ?? {})).toEqual(['password']);
    });
  });

  describe('CSRF protection of session requests', () => {
    it('refuses a state-changing request with the cookie but no X-CSRF-Token', async () => {
      const admin = await site.admin();
      const res = await admin.post('/api/v1/tokens', { name: 'csrf-none', scope: 'read' }, { csrf: false });
      expectError(res, 403, ErrorCode.CsrfFailed);
    });

    it('refuses a wrong X-CSRF-Token, including another session’s token', async () => {
      const admin = await site.admin();
      const other = await site.login(ADMIN_USERNAME, ADMIN_PASSWORD);
      expectError(
        await admin.post('/api/v1/tokens', { name: 'csrf-wrong', scope: 'read' }, { csrf: 'x'.repeat(43) }),
        403,
        ErrorCode.CsrfFailed,
      );
      expectError(
        await admin.post(
          '/api/v1/tokens',
          { name: 'csrf-other', scope: 'read' },
          { csrf: other.csrfToken ?? '' },
        ),
        403,
        ErrorCode.CsrfFailed,
      );
      expectError(
        await admin.put('/api/v1/me/active-group', { group: 'public' }, { csrf: '' }),
        403,
        ErrorCode.CsrfFailed,
      );
    });

    it('creates nothing when the CSRF check fails', async () => {
      const admin = await site.admin();
      await admin.post('/api/v1/tokens', { name: 'csrf-must-not-exist', scope: 'read' }, { csrf: false });
      const list = await admin.get<{ name: string }[]>('/api/v1/tokens');
      expect(list.body.map((t) => t.name)).not.toContain('csrf-must-not-exist');
    });

    it('accepts the request with the right token, and reads without it', async () => {
      const admin = await site.admin();
      expectStatus(await admin.post('/api/v1/tokens', { name: 'csrf-ok', scope: 'read' }), 201);
      expectStatus(await admin.get('/api/v1/me', { csrf: false }), 200);
    });
  });

  describe('logout', () => {
    it('ends the session: the old cookie no longer works', async () => {
      const client = await site.login(ADMIN_USERNAME, ADMIN_PASSWORD);
      const cookie = client.sessionCookie ?? '';
      const csrf = client.csrfToken ?? '';
      expectStatus(await client.get('/api/v1/me'), 200);
      const res = await client.post('/api/v1/auth/logout');
      expectStatus(res, 204);
      // The cookie is cleared in the browser...
      const cleared = sessionCookieOf(res.headers);
      expect(cleared?.value).toBe('');
      // ...and the session is gone on the server, even for someone who kept the cookie.
      const replay = site.session(cookie, csrf);
      expectError(await replay.get('/api/v1/me'), 401, ErrorCode.Unauthenticated);
      expectError(await replay.get('/api/v1/auth/session'), 401, ErrorCode.Unauthenticated);
    });

    it('needs the CSRF token (no logging out other people by cross-site POST)', async () => {
      const client = await site.login(ADMIN_USERNAME, ADMIN_PASSWORD);
      expectError(
        await client.post('/api/v1/auth/logout', undefined, { csrf: false }),
        403,
        ErrorCode.CsrfFailed,
      );
      expectStatus(await client.get('/api/v1/me'), 200);
    });

    it('leaves other sessions of the same user alone', async () => {
      const a = await site.login(ADMIN_USERNAME, ADMIN_PASSWORD);
      const b = await site.login(ADMIN_USERNAME, ADMIN_PASSWORD);
      expectStatus(await a.post('/api/v1/auth/logout'), 204);
      expectStatus(await b.get('/api/v1/me'), 200);
    });

    it('an expired session is refused with 401 UNAUTHENTICATED', async () => {
      const client = await site.login(ADMIN_USERNAME, ADMIN_PASSWORD);
      expectStatus(await client.get('/api/v1/me'), 200);
      await site.changeCredentials(
        `UPDATE sessions SET expires_at = now() - interval '1 second' WHERE id = $1`,
        [
          createHash('sha256')
            .update(client.sessionCookie ?? '')
            .digest('hex'),
        ],
      );
      expectError(await client.get('/api/v1/me'), 401, ErrorCode.Unauthenticated);
    });

    it('refuses a made-up session cookie with 401', async () => {
      const fake = site.session('A'.repeat(43), 'B'.repeat(43));
      expectError(await fake.get('/api/v1/me'), 401, ErrorCode.Unauthenticated);
    });
  });

  describe('disabled accounts', () => {
    it('cannot sign in, and lose their sessions when disabled; re-enabling restores access', async () => {
      const { username, password, client } = await site.createUser();
      const admin = await site.admin();
      expectStatus(await client.get('/api/v1/me'), 200);

      const disabled = await admin.patch<UserDto>(`/api/v1/users/${username}`, { disabled: true });
      expectStatus(disabled, 200);
      expect(disabled.body.disabled).toBe(true);

      // The open session is ended.
      expect((await client.get('/api/v1/me')).status).toBe(401);
      // The right password is refused like a wrong one: the answer must not confirm the password.
      expectError(
        await site.anonymous().post('/api/v1/auth/login', { username, password }),
        401,
        ErrorCode.InvalidCredentials,
      );
      expectError(
        await site.anonymous().post('/api/v1/auth/login', { username, password: 'not-the-password' }),
        401,
        ErrorCode.InvalidCredentials,
      );

      expectStatus(await admin.patch(`/api/v1/users/${username}`, { disabled: false }), 200);
      const again = await site.login(username, password);
      expectStatus(await again.get('/api/v1/me'), 200);
    });

    it('tokens of a disabled account stop working', async () => {
      const { username, client } = await site.createUser();
      const created = await client.post<{ secret: string }>('/api/v1/tokens', {
        name: 'script',
        scope: 'read',
      });
      expectStatus(created, 201);
      const token = site.asToken(created.body.secret);
      expectStatus(await token.get('/api/v1/me'), 200);
      const admin = await site.admin();
      expectStatus(await admin.patch(`/api/v1/users/${username}`, { disabled: true }), 200);
      expectError(await token.get('/api/v1/me'), 403, ErrorCode.AccountDisabled);
    });
  });
});

describe('login rate limit', () => {
  let site: TestSite;
  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '3', LOGIN_RATE_WINDOW_SECONDS: '60' });
  });
  afterAll(async () => {
    await site?.close();
  });

  it('answers 429 RATE_LIMITED after LOGIN_RATE_LIMIT attempts, even with the right password', async () => {
    const { username, password } = await site.createAccount();
    for (let i = 0; i < 3; i++) {
      expectError(
        await site.anonymous().post('/api/v1/auth/login', { username, password: `wrong-password-${i}` }),
        401,
        ErrorCode.InvalidCredentials,
      );
    }
    expectError(
      await site.anonymous().post('/api/v1/auth/login', { username, password: 'wrong-password-x' }),
      429,
      ErrorCode.RateLimited,
    );
    const res = await site.anonymous().post('/api/v1/auth/login', { username, password });
    expectError(res, 429, ErrorCode.RateLimited);
    expect(res.headers.getSetCookie().some((c) => c.startsWith('trib_session='))).toBe(false);
  });

  it('counts attempts per username, so one locked-out name does not lock out others', async () => {
    const target = await site.createAccount();
    const bystander = await site.createAccount();
    for (let i = 0; i < 4; i++) {
      await site
        .anonymous()
        .post('/api/v1/auth/login', { username: target.username, password: `wrong-${i}-padding` });
    }
    expectError(
      await site
        .anonymous()
        .post('/api/v1/auth/login', { username: target.username, password: target.password }),
      429,
      ErrorCode.RateLimited,
    );
    expectStatus(
      await site
        .anonymous()
        .post('/api/v1/auth/login', { username: bystander.username, password: bystander.password }),
      200,
    );
  });

  it('counts the username case-insensitively', async () => {
    const { username, password } = await site.createAccount();
    await site
      .anonymous()
      .post('/api/v1/auth/login', { username: username.toUpperCase(), password: 'wrong-password-a' });
    const mixed = username.charAt(0).toUpperCase() + username.slice(1);
    await site.anonymous().post('/api/v1/auth/login', { username: mixed, password: 'wrong-password-c' });
    await site
      .anonymous()
      .post('/api/v1/auth/login', { username: username.toUpperCase(), password: 'wrong-password-b' });
    expectError(
      await site.anonymous().post('/api/v1/auth/login', { username, password }),
      429,
      ErrorCode.RateLimited,
    );
  });
});
