import { ErrorCode } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, expectStatus, startTestSite, type TestClient, type TestSite } from '../test/test-site';

const METRICS_TOKEN = 'scrape-secret-'.padEnd(40, 'x');

async function tokenOf(client: TestClient, scope: 'read' | 'write' | 'admin'): Promise<string> {
  const res = await client.post<{ secret: string }>('/api/v1/tokens', { name: `metrics-${scope}`, scope });
  expectStatus(res, 201);
  return res.body.secret;
}

describe('/metrics needs a credential', () => {
  let site: TestSite;
  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000', METRICS_TOKEN });
  });
  afterAll(async () => {
    await site?.close();
  });

  it('refuses anonymous scrapes with 401', async () => {
    const res = await site.anonymous().get('/metrics');
    expectError(res, 401, ErrorCode.Unauthenticated);
    expect(res.text).not.toContain('tributary_http_request_duration_seconds');
  });

  it('refuses users who are not administrators with 403', async () => {
    const { client } = await site.createUser();
    expectError(await client.get('/metrics'), 403, ErrorCode.AdminRequired);
    expectError(
      await site.asToken(await tokenOf(client, 'read')).get('/metrics'),
      403,
      ErrorCode.AdminRequired,
    );
  });

  it("serves an administrator's token (read scope is enough) and session", async () => {
    const admin = await site.admin();
    const res = await site.asToken(await tokenOf(admin, 'read')).get('/metrics');
    expectStatus(res, 200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(res.text).toContain('# TYPE tributary_http_request_duration_seconds histogram');
    expectStatus(await admin.get('/metrics'), 200);
  });

  it('serves the configured scrape secret, and refuses a wrong one with 401', async () => {
    const scraper = site.anonymous();
    const ok = await scraper.get('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expectStatus(ok, 200);
    expect(ok.text).toContain('tributary_data_bytes_received_total');
    const wrong = await scraper.get('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}y` } });
    expect(wrong.status).toBe(401);
  });
});

describe('/metrics without METRICS_TOKEN', () => {
  let site: TestSite;
  beforeAll(async () => {
    site = await startTestSite();
  });
  afterAll(async () => {
    await site?.close();
  });

  it('takes no secret but administrators', async () => {
    expect((await site.anonymous().get('/metrics', { headers: { authorization: 'Bearer ' } })).status).toBe(
      401,
    );
    expectStatus(await (await site.admin()).get('/metrics'), 200);
  });
});
