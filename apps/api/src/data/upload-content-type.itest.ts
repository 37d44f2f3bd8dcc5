import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectStatus, startTestSite, type TestSite, type TestUser } from '../test/test-site';

/**
 * `curl --data-binary @file` sends `Content-Type: application/x-www-form-urlencoded` unless told
 * otherwise: for an object's bytes that is never the file's type, so it is stored as unknown.
 */
describe('the content type stored by PUT /api/v1/data', () => {
  let site: TestSite;
  let alice: TestUser;
  let base: string;

  async function put(name: string, headers: Record<string, string>): Promise<string | null> {
    const path = `${base}/${name}`;
    expectStatus(
      await alice.client.request('PUT', '/api/v1/data', { query: { path }, headers, body: 'a=1&b=2' }),
      201,
    );
    const head = await alice.client.request('HEAD', '/api/v1/data', { query: { path } });
    expectStatus(head, 200);
    return head.headers.get('content-type');
  }

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    alice = await site.createUser();
    base = `/home/${alice.username}/types`;
    expectStatus(
      await alice.client.post('/api/v1/namespace/collections', { path: base, parents: true }),
      201,
    );
  });
  afterAll(async () => {
    await site?.close();
  });

  it("ignores curl's default form type (with or without parameters)", async () => {
    expect(await put('curl.h5', { 'content-type': 'application/x-www-form-urlencoded' })).toBe(
      'application/octet-stream',
    );
    expect(
      await put('curl2.h5', { 'content-type': 'Application/X-WWW-Form-Urlencoded; charset=utf-8' }),
    ).toBe('application/octet-stream');
  });

  it('keeps a type given on purpose', async () => {
    expect(await put('image.png', { 'content-type': 'image/png' })).toBe('image/png');
    expect(await put('notes.txt', { 'content-type': 'text/plain; charset=utf-8' })).toBe(
      'text/plain; charset=utf-8',
    );
  });
});
