import { ErrorCode, type EntryDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '@tributary/testkit';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestResponse,
  type TestSite,
  type TestUser,
} from '../test/test-site';

/**
 * A caller who cannot read a collection must not learn which names exist in it: every endpoint that
 * takes a path answers the same (status, code, message with the path given replaced) for a name that
 * exists there and one that does not.
 */
describe('names in collections the caller cannot read', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;
  let home: string;
  let priv: string;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    home = `/home/${alice.username}`;
    priv = `${home}/${uniqueName('private')}`;
    expectStatus(
      await alice.client.post('/api/v1/namespace/collections', { path: `${priv}/sub`, parents: true }),
      201,
    );
    expectStatus(await put(alice.client, `${priv}/diary.txt`), 201);
    expectStatus(await put(alice.client, `${priv}/sub/inner.txt`), 201);
    expectStatus(
      await alice.client.post(
        '/api/v1/metadata',
        { triples: [{ attribute: 'a', value: 'b' }] },
        {
          query: { path: `${priv}/diary.txt` },
        },
      ),
      201,
    );
  });
  afterAll(async () => {
    await site?.close();
  });

  function put(client: TestClient, path: string, query: Record<string, string> = {}) {
    return client.request<EntryDto>('PUT', '/api/v1/data', {
      query: { path, ...query },
      headers: { 'content-type': 'application/octet-stream' },
      body: 'x',
    });
  }

  function multipart(name: string): { body: Buffer; contentType: string } {
    const boundary = '----disclosure';
    return {
      body: Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\n` +
          `Content-Type: application/octet-stream\r\n\r\nx\r\n--${boundary}--\r\n`,
      ),
      contentType: `multipart/form-data; boundary=${boundary}`,
    };
  }

  /** What a caller can tell apart: status, code, and the message with the path given replaced. */
  function answer(res: TestResponse, path: string): unknown {
    const body = res.body as { error?: { code?: string; message?: string; details?: unknown } } | string;
    const error = typeof body === 'object' && body ? body.error : undefined;
    const hide = (text: string | undefined) => text?.split(path).join('<path>');
    return {
      status: res.status,
      code: error?.code,
      message: hide(error?.message),
      details: hide(JSON.stringify(error?.details)),
    };
  }

  type Probe = (client: TestClient, path: string) => Promise<TestResponse>;

  const objectProbes: Record<string, Probe> = {
    'GET /data': (c, path) => c.get('/api/v1/data', { query: { path } }),
    'HEAD /data': (c, path) => c.request('HEAD', '/api/v1/data', { query: { path } }),
    'PUT /data': (c, path) => put(c, path),
    'PUT /data overwrite': (c, path) => put(c, path, { overwrite: 'true' }),
    'POST /data/batch-read': (c, path) => c.post('/api/v1/data/batch-read', { paths: [path] }),
    'GET /namespace/stat': (c, path) => c.get('/api/v1/namespace/stat', { query: { path } }),
    'POST /namespace/collections': (c, path) => c.post('/api/v1/namespace/collections', { path }),
    'POST /namespace/collections parents': (c, path) =>
      c.post('/api/v1/namespace/collections', { path, parents: true }),
    'POST /namespace/move from': (c, path) =>
      c.post('/api/v1/namespace/move', { from: path, to: `/home/${bob.username}/${uniqueName('m')}` }),
    'DELETE /namespace': (c, path) => c.delete('/api/v1/namespace', { query: { path } }),
    'GET /permissions': (c, path) => c.get('/api/v1/permissions', { query: { path } }),
    'PUT /permissions': (c, path) =>
      c.put('/api/v1/permissions', { path, user: bob.username, level: 'read' }),
    'GET /metadata': (c, path) => c.get('/api/v1/metadata', { query: { path } }),
    'POST /metadata': (c, path) =>
      c.post('/api/v1/metadata', { triples: [{ attribute: 'a', value: 'c' }] }, { query: { path } }),
    'POST /metadata/bulk add': (c, path) =>
      c.post('/api/v1/metadata/bulk', {
        operations: [{ paths: [path], add: [{ attribute: 'a', value: 'd' }] }],
      }),
    'POST /metadata/bulk set': (c, path) =>
      c.post('/api/v1/metadata/bulk', {
        operations: [{ paths: [path], set: [{ attribute: 'a', value: 'e' }] }],
      }),
    'POST /metadata/bulk remove': (c, path) =>
      c.post('/api/v1/metadata/bulk', {
        operations: [{ paths: [path], remove: [{ attribute: 'a', value: 'b' }] }],
      }),
    'POST /uploads': (c, path) => c.post('/api/v1/uploads', { path, size: 1 }),
    'POST /uploads overwrite': (c, path) => c.post('/api/v1/uploads', { path, size: 1, overwrite: true }),
  };

  const collectionProbes: Record<string, Probe> = {
    ...objectProbes,
    'GET /namespace/children': (c, path) => c.get('/api/v1/namespace/children', { query: { path } }),
    'POST /data/batch': (c, path) => {
      const { body, contentType } = multipart('new.txt');
      return c.request('POST', '/api/v1/data/batch', {
        query: { path },
        headers: { 'content-type': contentType },
        body,
      });
    },
    'PUT /data into': (c, path) => put(c, `${path}/new.txt`),
    'POST /namespace/collections into': (c, path) =>
      c.post('/api/v1/namespace/collections', { path: `${path}/new` }),
    'POST /namespace/move into': async (c, path) => {
      const mine = `/home/${bob.username}/${uniqueName('mine')}`;
      expectStatus(await put(c, mine), 201);
      return c.post('/api/v1/namespace/move', { from: mine, to: `${path}/moved` });
    },
    'POST /metadata/bulk under': (c, path) =>
      c.post('/api/v1/metadata/bulk', {
        operations: [{ under: path, include: 'all', add: [{ attribute: 'a', value: 'd' }] }],
      }),
    'POST /uploads into': (c, path) => c.post('/api/v1/uploads', { path: `${path}/new.txt`, size: 1 }),
    'POST /tokens confined': (c, path) =>
      c.post('/api/v1/tokens', { name: 't', scope: 'read', collection: path }),
    'POST /metadata/query scope': (c, path) =>
      c.post('/api/v1/metadata/query', { query: 'a = b', scope: path }),
    'GET /conflicts/policies': (c, path) => c.get('/api/v1/conflicts/policies', { query: { path } }),
    'PUT /conflicts/policies': (c, path) =>
      c.put('/api/v1/conflicts/policies', { path, kind: 'update', policy: 'newest' }),
    'POST /saved-searches scope': (c, path) =>
      c.post('/api/v1/saved-searches', { name: uniqueName('s'), query: 'a = b', scope: path }),
  };

  async function compare(probes: Record<string, Probe>, existing: string, missing: string): Promise<void> {
    const differences: string[] = [];
    for (const [name, probe] of Object.entries(probes)) {
      const a = answer(await probe(bob.client, existing), existing);
      const b = answer(await probe(bob.client, missing), missing);
      try {
        expect(a).toEqual(b);
      } catch {
        differences.push(`${name}: existing ${JSON.stringify(a)} vs missing ${JSON.stringify(b)}`);
      }
    }
    expect(differences).toEqual([]);
  }

  it('answers the same for an object that exists and one that does not', async () => {
    await compare(objectProbes, `${priv}/diary.txt`, `${priv}/nothere.txt`);
  });

  it('answers the same for a collection that exists and one that does not', async () => {
    await compare(collectionProbes, `${priv}/sub`, `${priv}/nosub`);
  });

  it('answers the same for a collection in the unreadable home and a missing one beside it', async () => {
    await compare(collectionProbes, priv, `${home}/${uniqueName('none')}`);
  });

  it('answers the same below an existing and a missing collection', async () => {
    await compare(objectProbes, `${priv}/sub/inner.txt`, `${priv}/nosub/inner.txt`);
  });

  it('refuses with 403 and names only the path given', async () => {
    const path = `${priv}/nothere.txt`;
    const error = expectError(
      await bob.client.get('/api/v1/namespace/stat', { query: { path } }),
      403,
      ErrorCode.PermissionDenied,
    );
    expect(error.message).toContain(path);
    // The owner, who may read the collection, still learns that a name is missing.
    expectError(
      await alice.client.get('/api/v1/namespace/stat', { query: { path } }),
      404,
      ErrorCode.NotFound,
    );
    expectError(
      await alice.client.post('/api/v1/namespace/collections', { path: `${priv}/sub` }),
      409,
      ErrorCode.NameTaken,
    );
  });

  it('still tells a caller who may read the collection but not write it that a name is taken', async () => {
    expectStatus(
      await alice.client.put('/api/v1/permissions', { path: priv, user: bob.username, level: 'read' }),
      200,
    );
    try {
      expectError(
        await bob.client.post('/api/v1/namespace/collections', { path: `${priv}/sub` }),
        409,
        ErrorCode.NameTaken,
      );
      expectError(
        await bob.client.get('/api/v1/namespace/stat', { query: { path: `${priv}/nothere.txt` } }),
        404,
        ErrorCode.NotFound,
      );
      expectError(await put(bob.client, `${priv}/new.txt`), 403, ErrorCode.PermissionDenied);
    } finally {
      expectStatus(
        await alice.client.put('/api/v1/permissions', { path: priv, user: bob.username, level: null }),
        200,
      );
    }
  });
});
