import { createHash } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { ErrorCode, type EntryDetailDto, type EntryDto, type TrashEntryDto } from '@tributary/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testBytes, uniqueName } from '@tributary/testkit';
import { expectStorageMatchesCatalog, filesBelow, waitFor } from '../test/storage';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestResponse,
  type TestSite,
  type TestUser,
} from '../test/test-site';

const MAX_UPLOAD = 2 * 1024 * 1024;
const sha256 = (data: Buffer | string): string => createHash('sha256').update(data).digest('hex');

describe('object data', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;
  let dir: string;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000', MAX_UPLOAD_BYTES: String(MAX_UPLOAD) });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    dir = `/home/${alice.username}`;
  });
  afterAll(async () => {
    await site?.close();
  });

  /**
   * After every test the storage directory holds exactly the bytes the catalog refers to: no
   * stray staging files, no orphaned versions.
   */
  afterEach(() => expectStorageMatchesCatalog(site));

  function put(
    client: TestClient,
    objectPath: string,
    body: string | Buffer,
    options: { overwrite?: boolean; headers?: Record<string, string> } = {},
  ) {
    return client.request<EntryDto>('PUT', '/api/v1/data', {
      query: { path: objectPath, ...(options.overwrite ? { overwrite: 'true' } : {}) },
      headers: { 'content-type': 'application/octet-stream', ...options.headers },
      body,
    });
  }

  function get(
    client: TestClient,
    objectPath: string,
    headers: Record<string, string> = {},
  ): Promise<TestResponse> {
    return client.get('/api/v1/data', { query: { path: objectPath }, headers });
  }

  async function stat(objectPath: string): Promise<TestResponse<EntryDetailDto>> {
    return alice.client.get<EntryDetailDto>('/api/v1/namespace/stat', { query: { path: objectPath } });
  }

  describe('upload', () => {
    it('PUT stores the bytes and answers 201 with the entry and its sha256 checksum', async () => {
      const bytes = testBytes(300 * 1024, 7);
      const target = `${dir}/${uniqueName('upload')}.bin`;
      const res = await put(alice.client, target, bytes);
      expectStatus(res, 201);
      expect(res.body).toMatchObject({
        kind: 'object',
        path: target,
        size: bytes.length,
        checksum: `sha256:${sha256(bytes)}`,
        contentType: 'application/octet-stream',
        version: 1,
        owner: alice.username,
        site: 'lsu',
        replicaCount: 1,
        access: 'own',
      });
      const detail = expectStatus(await stat(target), 200).body;
      expect(detail.replicas).toEqual([
        {
          site: 'lsu',
          resource: site.config.storage.defaultResource,
          size: bytes.length,
          checksum: `sha256:${sha256(bytes)}`,
          status: 'good',
        },
      ]);
      const back = await get(alice.client, target);
      expectStatus(back, 200);
      expect(back.bytes.equals(bytes)).toBe(true);
    });

    it('counts received and sent bytes in /metrics', async () => {
      const metric = async (name: string): Promise<number> => {
        const text = (await (await site.admin()).get('/metrics')).text;
        const line = text.split('\n').find((l) => l.startsWith(`${name} `));
        return Number(line?.split(' ')[1] ?? 'NaN');
      };
      const inBefore = await metric('tributary_data_bytes_received_total');
      const outBefore = await metric('tributary_data_bytes_sent_total');
      const target = `${dir}/${uniqueName('metered')}`;
      expectStatus(await put(alice.client, target, Buffer.alloc(12_345, 9)), 201);
      expectStatus(await get(alice.client, target), 200);
      expect((await metric('tributary_data_bytes_received_total')) - inBefore).toBe(12_345);
      expect(
        await waitFor(async () => (await metric('tributary_data_bytes_sent_total')) - outBefore === 12_345),
      ).toBe(true);
      // HEAD answers from the catalog: no bytes are read (it once went to the GET route).
      expectStatus(await alice.client.request('HEAD', '/api/v1/data', { query: { path: target } }), 200);
      await new Promise((r) => setTimeout(r, 200));
      expect((await metric('tributary_data_bytes_sent_total')) - outBefore).toBe(12_345);
    });

    it('keeps the content type it was sent, and does not parse JSON bodies', async () => {
      const target = `${dir}/${uniqueName('doc')}.json`;
      const body = '{"not": "parsed", "x": [1, 2]}';
      const res = await put(alice.client, target, body, { headers: { 'content-type': 'application/json' } });
      expectStatus(res, 201);
      expect(res.body.contentType).toBe('application/json');
      expect(res.body.size).toBe(Buffer.byteLength(body));
      const back = await get(alice.client, target);
      expect(back.headers.get('content-type')).toBe('application/json');
      expect(back.text).toBe(body);
    });

    it('stores empty objects', async () => {
      const target = `${dir}/${uniqueName('empty')}`;
      const res = await put(alice.client, target, Buffer.alloc(0));
      expectStatus(res, 201);
      expect(res.body).toMatchObject({ size: 0, checksum: `sha256:${sha256('')}` });
      const back = await get(alice.client, target);
      expectStatus(back, 200);
      expect(back.bytes.length).toBe(0);
      expect(back.headers.get('content-length')).toBe('0');
    });

    it('an existing object is 409 NAME_TAKEN without overwrite=true, a new version with it', async () => {
      const target = `${dir}/${uniqueName('versioned')}`;
      const first = expectStatus(await put(alice.client, target, 'version one'), 201).body;
      expectError(await put(alice.client, target, 'sneaky'), 409, ErrorCode.NameTaken);
      expect((await get(alice.client, target)).text).toBe('version one');

      const second = await put(alice.client, target, 'version two!', { overwrite: true });
      expectStatus(second, 200);
      expect(second.body).toMatchObject({
        id: first.id,
        version: 2,
        size: 12,
        checksum: `sha256:${sha256('version two!')}`,
      });
      expect((await get(alice.client, target)).text).toBe('version two!');
      // The replaced bytes are removed (checked by afterEach: only current replicas remain on disk).
      expect(expectStatus(await stat(target), 200).body.replicas).toHaveLength(1);
    });

    it('overwrite=true also creates a new object (201, version 1)', async () => {
      const res = await put(alice.client, `${dir}/${uniqueName('fresh')}`, 'new', { overwrite: true });
      expectStatus(res, 201);
      expect(res.body.version).toBe(1);
    });

    it('X-Checksum-Sha256 verifies the bytes: a mismatch is 422 CHECKSUM_MISMATCH and stores nothing', async () => {
      const good = `${dir}/${uniqueName('sum-ok')}`;
      expectStatus(
        await put(alice.client, good, 'checked', { headers: { 'x-checksum-sha256': sha256('checked') } }),
        201,
      );
      const bad = `${dir}/${uniqueName('sum-bad')}`;
      expectError(
        await put(alice.client, bad, 'checked', {
          headers: { 'x-checksum-sha256': sha256('something else') },
        }),
        422,
        ErrorCode.ChecksumMismatch,
      );
      expectError(await stat(bad), 404, ErrorCode.NotFound);
      expectError(
        await put(alice.client, bad, 'checked', { headers: { 'x-checksum-sha256': 'xyz' } }),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(await stat(bad), 404, ErrorCode.NotFound);
    });

    it('a failed overwrite keeps the previous version intact', async () => {
      const target = `${dir}/${uniqueName('keep')}`;
      await put(alice.client, target, 'original');
      expectError(
        await put(alice.client, target, 'replacement', {
          overwrite: true,
          headers: { 'x-checksum-sha256': sha256('nope') },
        }),
        422,
        ErrorCode.ChecksumMismatch,
      );
      expect((await get(alice.client, target)).text).toBe('original');
      expect(expectStatus(await stat(target), 200).body.version).toBe(1);
    });

    it('refuses targets that are collections (409), missing parents (404) and others’ homes (403)', async () => {
      expectError(await put(alice.client, dir, 'x'), 409, ErrorCode.NameTaken);
      expectError(await put(alice.client, `${dir}/${uniqueName('none')}/file`, 'x'), 404, ErrorCode.NotFound);
      expectError(
        await put(bob.client, `${dir}/${uniqueName('from-bob')}`, 'x'),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(await put(alice.client, '/', 'x'), 409, ErrorCode.NameTaken);
      expectError(await put(alice.client, `${dir}/../etc`, 'x'), 422, ErrorCode.ValidationFailed);
    });

    it('a body larger than MAX_UPLOAD_BYTES is 413 PAYLOAD_TOO_LARGE and stores nothing', async () => {
      const target = `${dir}/${uniqueName('huge')}`;
      expectError(
        await put(alice.client, target, Buffer.alloc(MAX_UPLOAD + 1)),
        413,
        ErrorCode.PayloadTooLarge,
      );
      expectError(await stat(target), 404, ErrorCode.NotFound);
    });

    it('a chunked body (no Content-Length) that grows past MAX_UPLOAD_BYTES is 413 and stores nothing', async () => {
      const target = `${dir}/${uniqueName('huge-chunked')}`;
      const res = await rawUpload(site, alice.client, target, {
        chunks: Array.from({ length: 5 }, () => Buffer.alloc(MAX_UPLOAD / 2)),
      });
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body) as unknown).toMatchObject({ error: { code: ErrorCode.PayloadTooLarge } });
      expectError(await stat(target), 404, ErrorCode.NotFound);
    });

    it('an upload whose connection is aborted midway leaves no object and no stray file', async () => {
      const target = `${dir}/${uniqueName('aborted')}`;
      await rawUpload(site, alice.client, target, {
        contentLength: 1024 * 1024,
        chunks: [Buffer.alloc(256 * 1024, 1)],
        abortAfterMs: 300,
      });
      // afterEach checks the staging area empties and no bytes are left over; here the catalog.
      expect(await waitFor(async () => (await stat(target)).status === 404)).toBe(true);
      const rows = await site.query('SELECT 1 FROM data_objects WHERE name = $1', [path.basename(target)]);
      expect(rows.rowCount).toBe(0);
      // The name is free: a complete upload now succeeds as a new object.
      expectStatus(await put(alice.client, target, 'complete'), 201);
    });

    it('a read-scope token cannot upload; a write-scope token can, without CSRF', async () => {
      const read = await alice.client.post<{ secret: string }>('/api/v1/tokens', {
        name: 'r',
        scope: 'read',
      });
      const write = await alice.client.post<{ secret: string }>('/api/v1/tokens', {
        name: 'w',
        scope: 'write',
      });
      expectError(
        await put(site.asToken(read.body.secret), `${dir}/${uniqueName('by-read')}`, 'x'),
        403,
        ErrorCode.TokenScopeInsufficient,
      );
      expectStatus(await put(site.asToken(write.body.secret), `${dir}/${uniqueName('by-write')}`, 'x'), 201);
    });

    it('a session upload without the CSRF header is refused', async () => {
      const target = `${dir}/${uniqueName('csrf')}`;
      const res = await alice.client.request('PUT', '/api/v1/data', {
        query: { path: target },
        headers: { 'content-type': 'application/octet-stream' },
        body: 'x',
        csrf: false,
      });
      expectError(res, 403, ErrorCode.CsrfFailed);
      expectError(await stat(target), 404, ErrorCode.NotFound);
    });
  });

  describe('download', () => {
    const content = testBytes(10_000, 3);
    let target: string;
    let etag: string;

    beforeAll(async () => {
      target = `${dir}/${uniqueName('download')}.dat`;
      expectStatus(await put(alice.client, target, content), 201);
      etag = `"${sha256(content)}"`;
    });

    it('sends the whole object with ETag, length, ranges advertised and a download name', async () => {
      const res = await get(alice.client, target);
      expectStatus(res, 200);
      expect(res.bytes.equals(content)).toBe(true);
      expect(res.headers.get('etag')).toBe(etag);
      expect(res.headers.get('content-length')).toBe(String(content.length));
      expect(res.headers.get('accept-ranges')).toBe('bytes');
      expect(res.headers.get('content-disposition')).toContain(path.basename(target));
      expect(res.headers.get('digest')).toBe(
        `sha-256=${createHash('sha256').update(content).digest('base64')}`,
      );
    });

    it.each([
      ['bytes=0-9', 0, 9],
      ['bytes=100-199', 100, 199],
      ['bytes=9990-', 9990, 9999],
      ['bytes=-16', 9984, 9999],
      ['bytes=9000-20000', 9000, 9999],
    ])('Range %s answers 206 with exactly those bytes', async (range, start, end) => {
      const res = await get(alice.client, target, { range });
      expectStatus(res, 206);
      expect(res.headers.get('content-range')).toBe(`bytes ${start}-${end}/${content.length}`);
      expect(res.headers.get('content-length')).toBe(String(end - start + 1));
      expect(res.bytes.equals(content.subarray(start, end + 1))).toBe(true);
    });

    it('an unsatisfiable Range is 416 RANGE_NOT_SATISFIABLE with Content-Range bytes */size', async () => {
      for (const range of ['bytes=10000-', 'bytes=20000-30000']) {
        const res = await get(alice.client, target, { range });
        expectError(res, 416, ErrorCode.RangeNotSatisfiable);
        expect(res.headers.get('content-range')).toBe(`bytes */${content.length}`);
      }
    });

    it('a malformed or multi-part Range is ignored: the whole object, 200', async () => {
      for (const range of ['bytes=abc', 'bytes=0-1,5-6']) {
        const res = await get(alice.client, target, { range });
        expect(res.status, range).toBe(200);
        expect(res.bytes.equals(content)).toBe(true);
      }
    });

    it('a Range in a unit other than bytes is ignored (RFC 9110 14.2): the whole object, 200', async () => {
      const res = await get(alice.client, target, { range: 'pages=1-2' });
      expect({ status: res.status, contentRange: res.headers.get('content-range') }).toEqual({
        status: 200,
        contentRange: null,
      });
      expect(res.bytes.equals(content)).toBe(true);
    });

    it('If-None-Match with the current ETag is 304 with no body; a stale one gets the bytes', async () => {
      const cached = await get(alice.client, target, { 'if-none-match': etag });
      expectStatus(cached, 304);
      expect(cached.bytes.length).toBe(0);
      expect(cached.headers.get('etag')).toBe(etag);
      expectStatus(await get(alice.client, target, { 'if-none-match': `"deadbeef", ${etag}` }), 304);
      expectStatus(await get(alice.client, target, { 'if-none-match': '*' }), 304);
      const stale = await get(alice.client, target, { 'if-none-match': '"0000"' });
      expectStatus(stale, 200);
      expect(stale.bytes.equals(content)).toBe(true);
    });

    it('If-Range with a different ETag sends the whole object instead of the range', async () => {
      const res = await get(alice.client, target, { range: 'bytes=0-9', 'if-range': '"other"' });
      expectStatus(res, 200);
      expect(res.bytes.length).toBe(content.length);
      const same = await get(alice.client, target, { range: 'bytes=0-9', 'if-range': etag });
      expectStatus(same, 206);
    });

    it('the ETag changes when the object is overwritten', async () => {
      const other = `${dir}/${uniqueName('etag')}`;
      await put(alice.client, other, 'one');
      const first = (await get(alice.client, other)).headers.get('etag');
      await put(alice.client, other, 'two', { overwrite: true });
      const res = await get(alice.client, other, { 'if-none-match': first ?? '' });
      expectStatus(res, 200);
      expect(res.text).toBe('two');
      expect(res.headers.get('etag')).not.toBe(first);
    });

    it('HEAD gives the headers without the body', async () => {
      const res = await alice.client.request('HEAD', '/api/v1/data', { query: { path: target } });
      expectStatus(res, 200);
      expect(res.headers.get('content-length')).toBe(String(content.length));
      expect(res.headers.get('etag')).toBe(etag);
      expect(res.bytes.length).toBe(0);
    });

    it('a collection is 409 NOT_AN_OBJECT; a missing object 404; someone else’s 403', async () => {
      expectError(await get(alice.client, dir), 409, ErrorCode.NotAnObject);
      expectError(await get(alice.client, `${dir}/${uniqueName('missing')}`), 404, ErrorCode.NotFound);
      expectError(await get(bob.client, target), 403, ErrorCode.PermissionDenied);
      expectError(await get(site.anonymous(), target), 401, ErrorCode.Unauthenticated);
    });

    it('a token confined to another collection cannot download', async () => {
      const confined = await alice.client.post<{ secret: string }>('/api/v1/tokens', {
        name: 'confined',
        scope: 'read',
        collection: dir,
      });
      expectStatus(confined, 201);
      // Confined to the home itself: allowed.
      expectStatus(await get(site.asToken(confined.body.secret), target), 200);
      await alice.client.post('/api/v1/namespace/collections', { path: `${dir}/box` });
      const boxed = await alice.client.post<{ secret: string }>('/api/v1/tokens', {
        name: 'boxed',
        scope: 'read',
        collection: `${dir}/box`,
      });
      expectError(await get(site.asToken(boxed.body.secret), target), 403, ErrorCode.TokenOutsideCollection);
    });
  });

  describe('trash and purge', () => {
    it('a trashed object cannot be downloaded; restored, it can; purged, its bytes are gone', async () => {
      const target = `${dir}/${uniqueName('lifecycle')}`;
      await put(alice.client, target, 'lifecycle');
      const del = expectStatus(
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: target } }),
        200,
      );
      expectError(await get(alice.client, target), 404, ErrorCode.NotFound);
      expectStatus(await alice.client.post(`/api/v1/trash/${del.body.id}/restore`), 200);
      expect((await get(alice.client, target)).text).toBe('lifecycle');

      const { rows } = await site.query<{ physical_path: string }>(
        `SELECT r.physical_path FROM replicas r JOIN data_objects o ON o.id = r.object_id WHERE o.name = $1`,
        [path.basename(target)],
      );
      expect(rows).toHaveLength(1);
      const again = (
        await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: target } })
      ).body;
      await site.runReplicationCycle(); // purgeable from the next cycle on
      expectStatus(await alice.client.delete(`/api/v1/trash/${again.id}`), 204);
      const files = await filesBelow(path.join(site.config.storageRoot, 'objects'));
      expect(files.map((f) => path.basename(f))).not.toContain(rows[0]?.physical_path);
    });

    it('purging a trashed collection removes the bytes of every object inside it', async () => {
      const base = `${dir}/${uniqueName('purge-tree')}`;
      await alice.client.post('/api/v1/namespace/collections', { path: `${base}/sub`, parents: true });
      await put(alice.client, `${base}/a`, 'a');
      await put(alice.client, `${base}/sub/b`, 'b');
      const del = (await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: base } }))
        .body;
      await site.runReplicationCycle();
      expectStatus(await alice.client.delete(`/api/v1/trash/${del.id}`), 204);
      // afterEach: the two files are gone along with their replicas.
    });
  });
});

/**
 * An upload over a raw HTTP connection, for what fetch cannot do: a chunked body, or a connection
 * cut midway (`abortAfterMs` after the chunks were written). Resolves with the response, or with
 * status 0 when the connection was cut.
 */
function rawUpload(
  site: TestSite,
  client: TestClient,
  objectPath: string,
  options: { chunks: Buffer[]; contentLength?: number; abortAfterMs?: number },
): Promise<{ status: number; body: string }> {
  const url = new URL(client.url('/api/v1/data', { path: objectPath }));
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: 'PUT',
        headers: {
          ...client.authHeaders('PUT'),
          'content-type': 'application/octet-stream',
          ...(options.contentLength !== undefined ? { 'content-length': String(options.contentLength) } : {}),
        },
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', (err) => {
      if (options.abortAfterMs !== undefined) resolve({ status: 0, body: '' });
      else reject(new Error(`upload to ${site.url} failed without an answer: ${err.message}`));
    });
    (async () => {
      for (const chunk of options.chunks) {
        if (!req.write(chunk)) await new Promise((r) => req.once('drain', r));
      }
      if (options.abortAfterMs !== undefined) {
        await new Promise((r) => setTimeout(r, options.abortAfterMs));
        req.destroy();
        resolve({ status: 0, body: '' });
      } else {
        req.end();
      }
    })().catch(reject);
  });
}
