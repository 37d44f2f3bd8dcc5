import { createHash } from 'node:crypto';
import http from 'node:http';
import { ErrorCode, type EntryDto, type Page } from '@tributary/shared';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testBytes, uniqueName } from '@tributary/testkit';
import { expectStorageMatchesCatalog } from '../test/storage';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

const MAX_UPLOAD = 1024 * 1024;
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

interface Part {
  filename?: string;
  field?: string;
  data: Buffer;
  contentType?: string;
}

/** A multipart/form-data body with one part per entry (a file part unless `field` is set). */
function multipart(parts: Part[]): { body: Buffer; contentType: string } {
  const boundary = `----batch-${Math.random().toString(36).slice(2)}`;
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition = p.field
      ? `form-data; name="${p.field}"`
      : `form-data; name="file"; filename="${p.filename ?? ''}"`;
    chunks.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: ${disposition}\r\nContent-Type: ${p.contentType ?? 'application/octet-stream'}\r\n\r\n`,
      ),
      p.data,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/form-data; boundary=${boundary}` };
}

describe('batch upload (POST /api/v1/data/batch)', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000', MAX_UPLOAD_BYTES: String(MAX_UPLOAD) });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
  });
  afterAll(async () => {
    await site?.close();
  });

  // Whatever a test did, storage holds exactly the bytes the catalog refers to.
  afterEach(() => expectStorageMatchesCatalog(site));

  function batch(client: TestClient, collection: string, parts: Part[]) {
    const { body, contentType } = multipart(parts);
    return client.request<EntryDto[]>('POST', '/api/v1/data/batch', {
      query: { path: collection },
      headers: { 'content-type': contentType },
      body,
    });
  }

  async function newDir(owner: TestUser = alice): Promise<string> {
    const dir = `/home/${owner.username}/${uniqueName('batch')}`;
    expectStatus(await owner.client.post('/api/v1/namespace/collections', { path: dir }), 201);
    return dir;
  }

  async function names(dir: string): Promise<string[]> {
    const res = await alice.client.get<Page<EntryDto>>('/api/v1/namespace/children', {
      query: { path: dir },
    });
    return expectStatus(res, 200).body.items.map((e) => e.name);
  }

  it('creates every object in one request, with checksums, readable afterwards', async () => {
    const dir = await newDir();
    const files = Array.from({ length: 25 }, (_, i) => ({
      filename: `f${i}.dat`,
      data: testBytes(1000 + i * 37, i + 1),
    }));
    files.push({ filename: 'données é.csv', data: Buffer.from('a,b\n1,2\n') });
    const res = expectStatus(await batch(alice.client, dir, files), 201);
    expect(res.body).toHaveLength(files.length);
    for (const [i, f] of files.entries()) {
      expect(res.body[i]).toMatchObject({
        kind: 'object',
        name: f.filename.normalize('NFC'),
        path: `${dir}/${f.filename.normalize('NFC')}`,
        size: f.data.length,
        checksum: `sha256:${sha256(f.data)}`,
        owner: alice.username,
        version: 1,
        replicaCount: 1,
        site: 'lsu',
      });
    }
    expect((await names(dir)).sort()).toEqual(files.map((f) => f.filename.normalize('NFC')).sort());
    const one = await alice.client.get('/api/v1/data', { query: { path: `${dir}/f7.dat` } });
    expect(expectStatus(one, 200).bytes.equals(files[7]!.data)).toBe(true);
  });

  it('creates nothing when one name exists, and names every clash', async () => {
    const dir = await newDir();
    expectStatus(await batch(alice.client, dir, [{ filename: 'keep.txt', data: Buffer.from('old') }]), 201);
    expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: `${dir}/sub` }), 201);
    const res = await batch(alice.client, dir, [
      { filename: 'new-1.txt', data: Buffer.from('1') },
      { filename: 'keep.txt', data: Buffer.from('new') },
      { filename: 'sub', data: Buffer.from('2') },
    ]);
    const error = expectError(res, 409, ErrorCode.NameTaken);
    expect(error.details?.names?.sort()).toEqual(['keep.txt', 'sub']);
    expect((await names(dir)).sort()).toEqual(['keep.txt', 'sub']);
    const kept = await alice.client.get('/api/v1/data', { query: { path: `${dir}/keep.txt` } });
    expect(expectStatus(kept, 200).text).toBe('old');
  });

  it('refuses a name given twice, or one that is not a valid name, and creates nothing', async () => {
    const dir = await newDir();
    expectError(
      await batch(alice.client, dir, [
        { filename: 'a.txt', data: Buffer.from('1') },
        { filename: 'a.txt', data: Buffer.from('2') },
      ]),
      409,
      ErrorCode.NameTaken,
    );
    for (const bad of ['..', 'x/y', 'tab\tname']) {
      expectError(
        await batch(alice.client, dir, [
          { filename: 'fine.txt', data: Buffer.from('1') },
          { filename: bad, data: Buffer.from('2') },
        ]),
        422,
        ErrorCode.InvalidPath,
      );
    }
    // A part without a filename names no object.
    expectError(
      await batch(alice.client, dir, [{ filename: '', data: Buffer.from('1') }]),
      422,
      ErrorCode.ValidationFailed,
    );
    // A NUL cannot even be carried in a part header: the body is refused as malformed.
    const nul = await batch(alice.client, dir, [{ filename: 'nul\u0000byte', data: Buffer.from('1') }]);
    expect(nul.status).toBe(422);
    expect(await names(dir)).toEqual([]);
  });

  it('answers 422 for a body that is not multipart, has no file parts, or has form fields', async () => {
    const dir = await newDir();
    const notMultipart = await alice.client.request('POST', '/api/v1/data/batch', {
      query: { path: dir },
      headers: { 'content-type': 'application/octet-stream' },
      body: Buffer.from('hello'),
    });
    expectError(notMultipart, 422, ErrorCode.ValidationFailed);
    expectError(await batch(alice.client, dir, []), 422, ErrorCode.ValidationFailed);
    expectError(
      await batch(alice.client, dir, [{ field: 'note', data: Buffer.from('x') }]),
      422,
      ErrorCode.ValidationFailed,
    );
    expect(await names(dir)).toEqual([]);
  });

  it('answers 413 when the files together exceed the upload limit, and creates nothing', async () => {
    const dir = await newDir();
    const res = await batch(alice.client, dir, [
      { filename: 'a', data: testBytes(MAX_UPLOAD / 2 + 10, 1) },
      { filename: 'b', data: testBytes(MAX_UPLOAD / 2 + 10, 2) },
    ]);
    expectError(res, 413, ErrorCode.PayloadTooLarge);
    expect(await names(dir)).toEqual([]);
  });

  it('checks access: 404 for a missing collection, 403 without write, 403 for a read-scope token', async () => {
    const dir = await newDir();
    const part = [{ filename: 'x', data: Buffer.from('x') }];
    expectError(await batch(alice.client, `${dir}/missing`, part), 404, ErrorCode.NotFound);
    expectError(await batch(bob.client, dir, part), 403, ErrorCode.PermissionDenied);
    const token = expectStatus(
      await alice.client.post<{ secret: string }>('/api/v1/tokens', { name: 'ro', scope: 'read' }),
      201,
    ).body.secret;
    expectError(await batch(site.asToken(token), dir, part), 403, ErrorCode.TokenScopeInsufficient);
    expect(await names(dir)).toEqual([]);
  });

  it('leaves no object and no file when the connection drops mid-body', async () => {
    const dir = await newDir();
    const { body, contentType } = multipart([
      { filename: 'one', data: testBytes(200_000, 3) },
      { filename: 'two', data: testBytes(200_000, 4) },
    ]);
    const url = new URL(alice.client.url('/api/v1/data/batch', { path: dir }));
    await new Promise<void>((resolve) => {
      const req = http.request(url, {
        method: 'POST',
        headers: {
          ...alice.client.authHeaders('POST'),
          'content-type': contentType,
          'content-length': String(body.length),
        },
      });
      req.on('error', () => resolve());
      req.on('close', () => resolve());
      req.write(body.subarray(0, 300_000), () => setTimeout(() => req.destroy(), 100));
    });
    // The server notices the drop asynchronously; the afterEach check waits for staging to empty.
    for (let i = 0; i < 50 && (await names(dir)).length === 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    expect(await names(dir)).toEqual([]);
  });
});
