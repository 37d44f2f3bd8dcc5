import { ErrorCode, type ErrorBody } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueUsername } from '@tributary/testkit';
import { expectError, expectStatus, startTestSite, type TestSite } from '../test/test-site';

const LOGIN = '/api/v1/auth/login';

describe('login: failures per client address', () => {
  let site: TestSite;
  beforeAll(async () => {
    // The per-username limit is out of the way; only the per-address one can stop the spray.
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000', LOGIN_ADDRESS_RATE_LIMIT: '5' });
  });
  afterAll(async () => {
    await site?.close();
  });

  it('does not count successful sign-ins', async () => {
    const { username, password } = await site.createAccount();
    for (let i = 0; i < 7; i++) expectStatus(await site.anonymous().post(LOGIN, { username, password }), 200);
  });

  it('limits one address spraying many usernames, even when a later guess is right', async () => {
    const victim = await site.createAccount();
    for (let i = 0; i < 5; i++) {
      expectError(
        await site.anonymous().post(LOGIN, { username: uniqueUsername(), password: 'guess-password-1' }),
        401,
        ErrorCode.InvalidCredentials,
      );
    }
    const res = await site.anonymous().post(LOGIN, { username: victim.username, password: victim.password });
    expectError(res, 429, ErrorCode.RateLimited);
    expect(res.headers.getSetCookie()).toEqual([]);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});

describe('login: forwarding headers', () => {
  describe('with no trusted proxy (the default)', () => {
    let site: TestSite;
    beforeAll(async () => {
      site = await startTestSite({ LOGIN_RATE_LIMIT: '3' });
    });
    afterAll(async () => {
      await site?.close();
    });

    it('ignores X-Forwarded-For, so rotating it does not escape the limit', async () => {
      const { username, password } = await site.createAccount();
      for (let i = 0; i < 3; i++) {
        expectError(
          await site
            .anonymous()
            .post(
              LOGIN,
              { username, password: `wrong-password-${i}` },
              { headers: { 'x-forwarded-for': `203.0.113.${i + 1}` } },
            ),
          401,
          ErrorCode.InvalidCredentials,
        );
      }
      expectError(
        await site
          .anonymous()
          .post(LOGIN, { username, password }, { headers: { 'x-forwarded-for': '203.0.113.99' } }),
        429,
        ErrorCode.RateLimited,
      );
    });
  });

  describe('with TRUSTED_PROXIES naming the proxy', () => {
    let site: TestSite;
    beforeAll(async () => {
      site = await startTestSite({ LOGIN_RATE_LIMIT: '3', TRUSTED_PROXIES: '127.0.0.1' });
    });
    afterAll(async () => {
      await site?.close();
    });

    it('counts each forwarded client address on its own', async () => {
      const { username, password } = await site.createAccount();
      const from = (ip: string) => ({ headers: { 'x-forwarded-for': ip } });
      for (let i = 0; i < 3; i++) {
        await site
          .anonymous()
          .post(LOGIN, { username, password: `wrong-password-${i}` }, from('203.0.113.1'));
      }
      expectError(
        await site.anonymous().post(LOGIN, { username, password }, from('203.0.113.1')),
        429,
        ErrorCode.RateLimited,
      );
      expectStatus(await site.anonymous().post(LOGIN, { username, password }, from('203.0.113.2')), 200);
    });
  });
});

describe('login: disabled accounts', () => {
  let site: TestSite;
  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
  });
  afterAll(async () => {
    await site?.close();
  });

  it('answers the right password of a disabled account exactly like a wrong one', async () => {
    const { username, password } = await site.createAccount();
    const admin = await site.admin();
    expectStatus(await admin.patch(`/api/v1/users/${username}`, { disabled: true }), 200);
    const right = await site.anonymous().post(LOGIN, { username, password });
    const wrong = await site.anonymous().post(LOGIN, { username, password: 'not-the-password' });
    expectError(right, 401, ErrorCode.InvalidCredentials);
    expect(right.body).toEqual(wrong.body as ErrorBody);
    expect(right.headers.getSetCookie()).toEqual([]);
  });
});
