import { createHash } from 'node:crypto';
import { ErrorCode, type EntryDto, type UserDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitFor } from '../test/storage';
import { expectError, expectStatus, startTestSite, type TestSite, type TestUser } from '../test/test-site';
import { CredentialCache } from './credential-cache';

const hashOf = (secret: string): string => createHash('sha256').update(secret).digest('hex');

describe('credential cache', () => {
  let site: TestSite;
  let cache: CredentialCache;
  let dana: TestUser;

  beforeAll(async () => {
    site = await startTestSite();
    cache = site.siteApp.app.get(CredentialCache);
    dana = await site.createUser();
    await waitFor(() => Promise.resolve(cache.listening));
  });
  afterAll(async () => {
    await site?.close();
  });

  async function newToken(body: Record<string, unknown> = {}): Promise<{ id: string; secret: string }> {
    const created = await dana.client.post<{ id: string; secret: string }>('/api/v1/tokens', {
      name: `t${Math.random()}`,
      scope: 'write',
      ...body,
    });
    return expectStatus(created, 201).body;
  }

  it('keeps a token once resolved, with the touch it made', async () => {
    const { secret } = await newToken();
    expect(cache.token(hashOf(secret))).toBeUndefined();
    expectStatus(await site.asToken(secret).get<UserDto>('/api/v1/me'), 200);
    const kept = cache.token(hashOf(secret));
    expect(kept?.user.username).toBe(dana.username);
    expect(kept?.lastUsedAt).not.toBeNull();
    // A second request finds it kept; the touch is not repeated within the minute.
    const touched = await site.query<{ last_used_at: Date }>(
      'SELECT last_used_at FROM api_tokens WHERE secret_hash = $1',
      [hashOf(secret)],
    );
    expectStatus(await site.asToken(secret).get('/api/v1/me'), 200);
    const again = await site.query<{ last_used_at: Date }>(
      'SELECT last_used_at FROM api_tokens WHERE secret_hash = $1',
      [hashOf(secret)],
    );
    expect(again.rows[0]?.last_used_at).toEqual(touched.rows[0]?.last_used_at);
  });

  it('a change made behind the site’s back (as a peer’s applied change is) counts from its notice on', async () => {
    const { secret } = await newToken();
    const token = site.asToken(secret);
    expectStatus(await token.get('/api/v1/me'), 200);
    expect(cache.token(hashOf(secret))).toBeDefined();
    await site.changeCredentials('UPDATE users SET disabled_at = now() WHERE username = $1', [dana.username]);
    expect(cache.size).toBe(0);
    expectError(await token.get('/api/v1/me'), 403, ErrorCode.AccountDisabled);
    await site.changeCredentials('UPDATE users SET disabled_at = NULL WHERE username = $1', [dana.username]);
    expectStatus(await token.get('/api/v1/me'), 200);
  });

  it('a token confined to a collection stops when the collection is deleted, and follows it when moved', async () => {
    const home = `/home/${dana.username}`;
    for (const name of ['box', 'other'])
      expectStatus(
        await dana.client.post<EntryDto>('/api/v1/namespace/collections', { path: `${home}/${name}` }),
        201,
      );
    const boxed = site.asToken((await newToken({ collection: `${home}/box` })).secret);
    expectStatus(
      await boxed.get(`/api/v1/namespace/children?path=${encodeURIComponent(`${home}/box`)}`),
      200,
    );

    expectStatus(
      await dana.client.post('/api/v1/namespace/move', { from: `${home}/box`, to: `${home}/moved` }),
      200,
    );
    expectStatus(
      await boxed.get(`/api/v1/namespace/children?path=${encodeURIComponent(`${home}/moved`)}`),
      200,
    );
    expectError(
      await boxed.get(`/api/v1/namespace/children?path=${encodeURIComponent(`${home}/other`)}`),
      403,
      ErrorCode.TokenOutsideCollection,
    );

    expectStatus(
      await dana.client.delete(`/api/v1/namespace?path=${encodeURIComponent(`${home}/moved`)}`),
      200,
    );
    expectError(await boxed.get('/api/v1/me'), 403, ErrorCode.TokenOutsideCollection);
  });

  it('an answer read from the catalog while a notice arrives is not kept', async () => {
    const { secret } = await newToken();
    expectStatus(await site.asToken(secret).get('/api/v1/me'), 200);
    const record = cache.token(hashOf(secret))!;
    const racing = await cache.resolveToken('racing', () => {
      cache.forget();
      return Promise.resolve(record);
    });
    expect(racing).toBe(record);
    expect(cache.token('racing')).toBeUndefined();
    await cache.resolveToken('calm', () => Promise.resolve(record));
    expect(cache.token('calm')).toBe(record);
    expect(await cache.resolveToken('calm', () => Promise.reject(new Error('read again')))).toBe(record);
    cache.forget();
  });

  it('keeps nothing while notices cannot arrive, and keeps again once they can', async () => {
    const { secret } = await newToken();
    const token = site.asToken(secret);
    const { rows } = await site.query<{ ended: boolean }>(
      `SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity
        WHERE application_name = 'tributary-credentials' AND datname = current_database()`,
    );
    expect(rows).toEqual([{ ended: true }]);
    expect(await waitFor(() => Promise.resolve(!cache.listening))).toBe(true);

    expectStatus(await token.get('/api/v1/me'), 200);
    expect(cache.size).toBe(0);
    // With no notices, a change behind the site's back is seen at once all the same.
    await site.query('UPDATE users SET disabled_at = now() WHERE username = $1', [dana.username]);
    expectError(await token.get('/api/v1/me'), 403, ErrorCode.AccountDisabled);
    await site.query('UPDATE users SET disabled_at = NULL WHERE username = $1', [dana.username]);

    expect(await waitFor(() => Promise.resolve(cache.listening), 10_000)).toBe(true);
    expectStatus(await token.get('/api/v1/me'), 200);
    expect(cache.token(hashOf(secret))).toBeDefined();
  });
});
