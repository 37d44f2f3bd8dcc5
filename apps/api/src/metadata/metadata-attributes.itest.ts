import { ErrorCode, type MetadataAttributesDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

/** GET /api/v1/metadata/attributes: the names the portal suggests, only from entries the caller may read. */
describe('metadata attribute names', () => {
  let site: TestSite;
  let admin: TestClient;
  let carol: TestUser;
  let dave: TestUser;
  let base: string;

  async function names(client: TestClient, query: Record<string, string> = {}): Promise<string[]> {
    const res = expectStatus(
      await client.get<MetadataAttributesDto>('/api/v1/metadata/attributes', { query }),
      200,
    );
    return res.body.attributes;
  }

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    admin = await site.admin();
    [carol, dave] = await Promise.all([site.createUser(), site.createUser()]);
    base = `/home/${carol.username}/attrs`;
    expectStatus(
      await carol.client.post('/api/v1/namespace/collections', { path: `${base}/shared`, parents: true }),
      201,
    );
    for (const path of [`${base}/private.dat`, `${base}/shared/open.dat`, `${base}/gone.dat`]) {
      expectStatus(
        await carol.client.request('PUT', '/api/v1/data', {
          query: { path },
          headers: { 'content-type': 'application/octet-stream' },
          body: path,
        }),
        201,
      );
    }
    const res = await carol.client.post('/api/v1/metadata/bulk', {
      operations: [
        {
          paths: [`${base}/private.dat`],
          add: [
            { attribute: 'secret:code', value: 'x' },
            { attribute: 'project', value: 'coast' },
          ],
        },
        {
          paths: [`${base}/shared/open.dat`],
          add: [
            { attribute: 'project', value: 'coast' },
            { attribute: 'resolution', value: 0.5, unit: 'm' },
            { attribute: 'dateOfCreation', value: '2024-05-01', type: 'time' },
          ],
        },
        { paths: [`${base}/shared`], add: [{ attribute: 'campaign', value: 'spring' }] },
        { paths: [`${base}/gone.dat`], add: [{ attribute: 'trashed_only', value: 1 }] },
      ],
    });
    expectStatus(res, 200);
    expectStatus(
      await carol.client.request('DELETE', '/api/v1/namespace', { query: { path: `${base}/gone.dat` } }),
      200,
    );
  }, 120_000);

  afterAll(async () => {
    await site?.close();
  });

  it('lists the names of every value type, in byte order, without those only on trashed entries', async () => {
    const mine = await names(carol.client);
    expect(mine).toEqual(['campaign', 'dateOfCreation', 'project', 'resolution', 'secret:code']);
    expect(await names(admin)).toEqual(expect.arrayContaining(mine));
    expect(await names(admin)).not.toContain('trashed_only');
  });

  it('shows a user only the names on entries they may read; a grant widens it', async () => {
    expect(await names(dave.client)).toEqual([]);
    expectStatus(
      await carol.client.put('/api/v1/permissions', {
        path: `${base}/shared`,
        user: dave.username,
        level: 'read',
      }),
      200,
    );
    expect(await names(dave.client)).toEqual(['campaign', 'dateOfCreation', 'project', 'resolution']);
  });

  it('filters by prefix and limits the answer', async () => {
    expect(await names(carol.client, { prefix: 'p' })).toEqual(['project']);
    expect(await names(carol.client, { prefix: 'secret:' })).toEqual(['secret:code']);
    expect(await names(carol.client, { prefix: 'zzz' })).toEqual([]);
    expect(await names(carol.client, { limit: '2' })).toEqual(['campaign', 'dateOfCreation']);
    // LIKE wildcards in the prefix are taken literally.
    expect(await names(carol.client, { prefix: '%' })).toEqual([]);
  });

  it('respects a token confined to a collection', async () => {
    const token = expectStatus(
      await carol.client.post<{ secret: string }>('/api/v1/tokens', {
        name: 'confined',
        scope: 'read',
        collection: `${base}/shared`,
      }),
      201,
    ).body.secret;
    const res = await site.asToken(token).get<MetadataAttributesDto>('/api/v1/metadata/attributes');
    expect(expectStatus(res, 200).body.attributes).toEqual([
      'campaign',
      'dateOfCreation',
      'project',
      'resolution',
    ]);
  });

  it('refuses a bad limit and needs a caller', async () => {
    expectError(
      await carol.client.get('/api/v1/metadata/attributes', { query: { limit: '0' } }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(await site.anonymous().get('/api/v1/metadata/attributes'), 401, ErrorCode.Unauthenticated);
  });
});
