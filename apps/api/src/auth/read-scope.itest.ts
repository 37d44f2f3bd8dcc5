import { ErrorCode, type MetadataQueryResult } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, expectStatus, startTestSite, type TestSite, type TestUser } from '../test/test-site';

/**
 * POST routes that only read (a query body too rich for a URL) are reads for token scopes: a
 * `read` token may use them, while POST routes that change something still need `write`.
 */
describe('read-scoped tokens on POST routes that only read', () => {
  let site: TestSite;
  let alice: TestUser;
  let base: string;
  let readToken: string;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    alice = await site.createUser();
    base = `/home/${alice.username}/scoped`;
    expectStatus(
      await alice.client.post('/api/v1/namespace/collections', { path: base, parents: true }),
      201,
    );
    expectStatus(
      await alice.client.request('PUT', '/api/v1/data', {
        query: { path: `${base}/a.fits` },
        headers: { 'content-type': 'application/octet-stream' },
        body: 'bytes',
      }),
      201,
    );
    expectStatus(
      await alice.client.post(
        '/api/v1/metadata',
        { triples: [{ attribute: 'filetype', value: 'fits' }] },
        {
          query: { path: `${base}/a.fits` },
        },
      ),
      201,
    );
    readToken = expectStatus(
      await alice.client.post<{ secret: string }>('/api/v1/tokens', { name: 'ro', scope: 'read' }),
      201,
    ).body.secret;
  });
  afterAll(async () => {
    await site?.close();
  });

  it('may search metadata, with facets', async () => {
    const res = await site.asToken(readToken).post<MetadataQueryResult>('/api/v1/metadata/query', {
      q: 'filetype = fits',
      scope: base,
      facets: ['filetype'],
    });
    expectStatus(res, 200);
    expect(res.body.items.map((i) => i.name)).toEqual(['a.fits']);
    expect(res.body.facets?.filetype).toEqual([{ value: 'fits', count: 1 }]);
  });

  it('may read many objects at once', async () => {
    const res = await site.asToken(readToken).post('/api/v1/data/batch-read', { paths: [`${base}/a.fits`] });
    expectStatus(res, 200);
    expect(res.text).toContain('bytes');
  });

  it('still may not change metadata through POST', async () => {
    const token = site.asToken(readToken);
    expectError(
      await token.post(
        '/api/v1/metadata',
        { triples: [{ attribute: 'x', value: 1 }] },
        {
          query: { path: `${base}/a.fits` },
        },
      ),
      403,
      ErrorCode.TokenScopeInsufficient,
    );
    expectError(
      await token.post('/api/v1/metadata/bulk', {
        operations: [{ paths: [`${base}/a.fits`], add: [{ attribute: 'x', value: 1 }] }],
      }),
      403,
      ErrorCode.TokenScopeInsufficient,
    );
    expectError(
      await token.post('/api/v1/saved-searches', { name: 'fits', query: 'filetype = fits' }),
      403,
      ErrorCode.TokenScopeInsufficient,
    );
  });
});
