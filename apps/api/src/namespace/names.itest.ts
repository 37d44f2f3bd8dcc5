import { ErrorCode, type EntryDto, type Page } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '@tributary/testkit';
import { expectError, expectStatus, startTestSite, type TestSite, type TestUser } from '../test/test-site';

/**
 * Names the API refuses rather than alters: bytes that are not UTF-8 (a decoder would replace them
 * with U+FFFD, so two names would become one), a trailing slash where an object is meant, and
 * bidirectional or invisible characters (packages/shared/src/paths.ts).
 */
describe('names refused with 422', () => {
  let site: TestSite;
  let alice: TestUser;
  let dir: string;

  beforeAll(async () => {
    site = await startTestSite();
    alice = await site.createUser();
    dir = `/home/${alice.username}/${uniqueName('names')}`;
    expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: dir, parents: true }), 201);
  });
  afterAll(async () => {
    await site?.close();
  });

  /** A PUT /data whose query string is sent exactly as given (not re-encoded). */
  function rawPut(query: string) {
    return alice.client.request('PUT', `/api/v1/data?${query}`, {
      headers: { 'content-type': 'application/octet-stream' },
      body: 'x',
    });
  }

  async function names(): Promise<string[]> {
    const page = expectStatus(
      await alice.client.get<Page<EntryDto>>('/api/v1/namespace/children', { query: { path: dir } }),
      200,
    ).body;
    return page.items.map((e) => e.name);
  }

  it('refuses a path that is not valid UTF-8 instead of replacing the bad bytes', async () => {
    const encoded = encodeURIComponent(dir);
    for (const bad of ['%FF', '%FE', 'a%C3%28', '%ED%A0%80']) {
      const res = await rawPut(`path=${encoded}%2F${bad}`);
      expectError(res, 422, ErrorCode.ValidationFailed);
      expect(JSON.stringify(res.body)).toMatch(/UTF-8/);
    }
    for (const bad of ['%FF', '%C0%AF']) {
      expectError(
        await alice.client.request('GET', `/api/v1/namespace/stat?path=${encoded}%2F${bad}`),
        422,
        ErrorCode.ValidationFailed,
      );
    }
    // In a JSON body: raw bytes that are not UTF-8, and an escaped lone surrogate.
    const raw = Buffer.concat([
      Buffer.from(`{"path":"${dir}/`),
      Buffer.from([0xff, 0xfe]),
      Buffer.from('"}'),
    ]);
    expectError(
      await alice.client.request('POST', '/api/v1/namespace/collections', {
        headers: { 'content-type': 'application/json' },
        body: raw,
      }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(
      await alice.client.request('POST', '/api/v1/namespace/collections', {
        headers: { 'content-type': 'application/json' },
        body: `{"path":"${dir}/\\ud800"}`,
      }),
      422,
      ErrorCode.ValidationFailed,
    );
    expect(await names()).toEqual([]);
  });

  it('refuses a trailing slash where an object path is expected, and takes it for collections', async () => {
    const res = await rawPut(`path=${encodeURIComponent(`${dir}/x/`)}`);
    expectError(res, 422, ErrorCode.ValidationFailed);
    expect(JSON.stringify(res.body)).toContain('must not end with');
    expectError(
      await alice.client.post('/api/v1/uploads', { path: `${dir}/x/`, size: 1 }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectStatus(await rawPut(`path=${encodeURIComponent(`${dir}/x`)}`), 201);
    for (const method of ['GET', 'HEAD']) {
      expect(
        (await alice.client.request(method, '/api/v1/data', { query: { path: `${dir}/x/` } })).status,
      ).toBe(422);
    }
    expectError(
      await alice.client.post('/api/v1/data/batch-read', { paths: [`${dir}/x/`] }),
      422,
      ErrorCode.ValidationFailed,
    );
    // A collection path may end with one slash: it names the collection.
    expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: `${dir}/sub/` }), 201);
    expect(await names()).toEqual(['sub', 'x']);
  });

  it('refuses bidirectional controls and invisible characters', async () => {
    for (const name of [
      'invoice\u202Etxt.exe',
      'a\u2066b\u2069',
      'zero\u200Bwidth',
      '\uFEFFbom',
      'x\u200Dy',
    ]) {
      const res = await rawPut(`path=${encodeURIComponent(`${dir}/${name}`)}`);
      expectError(res, 422, ErrorCode.ValidationFailed);
      expectError(
        await alice.client.post('/api/v1/namespace/collections', { path: `${dir}/${name}` }),
        422,
        ErrorCode.ValidationFailed,
      );
    }
    // Joiners inside words of the scripts that need them stay allowed.
    const persian = '\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645';
    expectStatus(await rawPut(`path=${encodeURIComponent(`${dir}/${persian}`)}`), 201);
  });
});
