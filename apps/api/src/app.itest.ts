import { ErrorCode, type HealthDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, startTestSite, type TestSite } from './test/test-site';

interface OpenApiDoc {
  openapi: string;
  paths: Record<string, Record<string, unknown>>;
}

describe('site basics', () => {
  let site: TestSite;
  beforeAll(async () => {
    site = await startTestSite();
  });
  afterAll(async () => {
    await site?.close();
  });

  it('GET /api/health answers 200 with the catalog reachable, without signing in', async () => {
    const res = await site.anonymous().get<HealthDto>('/api/health');
    expect(res.status).toBe(200);
    // The test sites keep their bytes on the local resource, or on an s3 one (TRIBUTARY_TEST_STORAGE).
    expect(res.body).toEqual({
      status: 'ok',
      site: 'lsu',
      catalog: 'ok',
      storage: [expect.objectContaining({ default: true, status: 'ok' })],
    });
    // Where a resource is (its path or bucket) is not told to anyone who asks.
    expect(Object.keys(res.body.storage?.[0] ?? {}).sort()).toEqual(['default', 'kind', 'name', 'status']);
  });

  it('GET /metrics serves Prometheus text with the request histogram, labelled by route', async () => {
    await site.anonymous().get('/api/health');
    // Administrators only (or METRICS_TOKEN): see health/metrics.itest.ts.
    const res = await (await site.admin()).get('/metrics');
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.text).toContain('# TYPE tributary_http_request_duration_seconds histogram');
    expect(res.text).toMatch(
      /tributary_http_request_duration_seconds_count\{[^}]*method="GET"[^}]*route="\/api\/health"[^}]*status="200"[^}]*\} [1-9]/,
    );
  });

  it('serves the OpenAPI document with the login path', async () => {
    const res = await site.anonymous().get<OpenApiDoc>('/api/docs/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toMatch(/^3\./);
    expect(res.body.paths['/api/v1/auth/login']).toHaveProperty('post');
    expect(res.body.paths['/api/v1/users']).toHaveProperty('post');
    expect(res.body.paths['/api/v1/tokens']).toHaveProperty('get');
  });

  it('answers unknown routes with 404 ROUTE_NOT_FOUND in the error envelope', async () => {
    const anonymous = await site.anonymous().get('/api/v1/no-such-thing');
    // Unknown routes are 404 whether or not the caller is signed in.
    expectError(anonymous, 404, ErrorCode.RouteNotFound);
    const admin = await site.admin();
    const err = expectError(await admin.get('/api/v1/no-such-thing'), 404, ErrorCode.RouteNotFound);
    expect(err.message).toContain('/api/v1/no-such-thing');
    expectError(await admin.post('/api/v1/nothing/here', {}), 404, ErrorCode.RouteNotFound);
  });

  it('answers a malformed JSON body with a 4xx error envelope, not 500', async () => {
    const res = await site.anonymous().request('POST', '/api/v1/auth/login', {
      headers: { 'content-type': 'application/json' },
      body: '{"username": "admin", "password": ',
    });
    expect(res.headers.get('content-type')).toMatch(/application\/json/);
    // 400 or 422: either is a client error in the envelope.
    expect([400, 422]).toContain(res.status);
    expectError(res, res.status, ErrorCode.ValidationFailed);
  });

  it('answers a malformed JSON body from a signed-in caller with a 4xx error envelope', async () => {
    const admin = await site.admin();
    const res = await admin.request('POST', '/api/v1/tokens', {
      headers: { 'content-type': 'application/json' },
      body: '{not json',
    });
    expect([400, 422]).toContain(res.status);
    expectError(res, res.status, ErrorCode.ValidationFailed);
  });

  it('answers an oversized JSON body with 413 PAYLOAD_TOO_LARGE in the envelope', async () => {
    const res = await site.anonymous().request('POST', '/api/v1/auth/login', {
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ username: 'admin', password: 'x'.repeat(2 * 1024 * 1024) }),
    });
    expectError(res, 413, ErrorCode.PayloadTooLarge);
  });

  it('refuses protected routes without credentials with 401 UNAUTHENTICATED', async () => {
    expectError(await site.anonymous().get('/api/v1/me'), 401, ErrorCode.Unauthenticated);
    expectError(await site.anonymous().get('/api/v1/users'), 401, ErrorCode.Unauthenticated);
    expectError(
      await site.anonymous().post('/api/v1/tokens', { name: 'x', scope: 'read' }),
      401,
      ErrorCode.Unauthenticated,
    );
  });

  it('does not reveal the framework in headers', async () => {
    const res = await site.anonymous().get('/api/health');
    expect(res.headers.get('x-powered-by')).toBeNull();
  });
});
