import { gzipSync } from 'node:zlib';
import { ErrorCode } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  expectError,
  expectStatus,
  startTestSite,
  type TestSite,
} from './test/test-site';

/** A JSON document that is `size` bytes long once inflated, and about a thousandth of that gzipped. */
function gzippedJson(size: number): Buffer {
  return gzipSync(Buffer.from(`{"pad":"${'x'.repeat(size - 10)}"}`));
}

const GZIP_JSON = { 'content-type': 'application/json', 'content-encoding': 'gzip' };

describe('request bodies are decoded only after authentication', () => {
  let site: TestSite;
  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
  });
  afterAll(async () => {
    await site?.close();
  });

  it('does not decompress a body from a caller without credentials: 401, not a body error', async () => {
    // Not gzip at all: a site that decoded first would answer 400 about the body.
    const broken = await site.anonymous().request('POST', '/api/v1/tokens', {
      headers: GZIP_JSON,
      body: Buffer.from('this is not gzip'),
    });
    expectError(broken, 401, ErrorCode.Unauthenticated);
    // 70 MB once inflated: a site that decoded first would spend the CPU and answer 413.
    const bomb = await site.anonymous().request('POST', '/api/v1/metadata/bulk', {
      headers: GZIP_JSON,
      body: gzippedJson(70 * 1024 * 1024),
    });
    expectError(bomb, 401, ErrorCode.Unauthenticated);
  });

  it('does not decompress a body sent with a bad token either', async () => {
    const res = await site.asToken('trib_not-a-real-token').request('POST', '/api/v1/metadata/bulk', {
      headers: GZIP_JSON,
      body: gzippedJson(70 * 1024 * 1024),
    });
    expectError(res, 401, ErrorCode.TokenInvalid);
  });

  it('takes login bodies small and uncompressed only', async () => {
    const gz = await site.anonymous().request('POST', '/api/v1/auth/login', {
      headers: GZIP_JSON,
      body: gzipSync(JSON.stringify({ username: ADMIN_USERNAME, password: ADMIN_PASSWORD })),
    });
    expect(gz.status).toBe(415);
    expect(gz.headers.get('set-cookie')).toBeNull();
    const big = await site.anonymous().post('/api/v1/auth/login', {
      username: ADMIN_USERNAME,
      password: 'x'.repeat(20 * 1024),
    });
    const err = expectError(big, 413, ErrorCode.PayloadTooLarge);
    expect(err.message).toContain('16 KB');
    expectStatus(
      await site
        .anonymous()
        .post('/api/v1/auth/login', { username: ADMIN_USERNAME, password: ADMIN_PASSWORD }),
      200,
    );
  });

  it('decodes compressed bodies of signed-in callers', async () => {
    const admin = await site.admin();
    const res = await admin.request('POST', '/api/v1/tokens', {
      headers: GZIP_JSON,
      body: gzipSync(JSON.stringify({ name: 'zipped', scope: 'read' })),
    });
    expectStatus(res, 201);
  });

  it('names the real limit of each route in the 413 message', async () => {
    const admin = await site.admin();
    const small = await admin.request('POST', '/api/v1/tokens', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ name: 'x'.repeat(2 * 1024 * 1024), scope: 'read' }),
    });
    expect(expectError(small, 413, ErrorCode.PayloadTooLarge).message).toContain('1 MB');
    const bulk = await admin.request('POST', '/api/v1/metadata/bulk', {
      headers: GZIP_JSON,
      body: gzippedJson(70 * 1024 * 1024),
    });
    expect(expectError(bulk, 413, ErrorCode.PayloadTooLarge).message).toContain('64 MB');
  });
});
