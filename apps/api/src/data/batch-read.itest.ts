import { createHash } from 'node:crypto';
import { ErrorCode, type CreatedTokenDto, type EntryDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testBytes, uniqueName } from '@tributary/testkit';
import { expectError, expectStatus, startTestSite, type TestSite, type TestUser } from '../test/test-site';
import { BATCH_READ_CONTENT_TYPE } from './byte-answers';

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

/** Splits a batch read's answer: a JSON line, then exactly `size` bytes, per object. */
function parseBatch(body: Buffer): Array<{ path: string; size: number; sha256: string; data: Buffer }> {
  const result: Array<{ path: string; size: number; sha256: string; data: Buffer }> = [];
  let at = 0;
  while (at < body.length) {
    const end = body.indexOf(0x0a, at);
    expect(end).toBeGreaterThan(at);
    const header = JSON.parse(body.subarray(at, end).toString('utf8')) as {
      path: string;
      size: number;
      sha256: string;
    };
    const data = body.subarray(end + 1, end + 1 + header.size);
    expect(data.length).toBe(header.size);
    result.push({ ...header, data });
    at = end + 1 + header.size;
  }
  return result;
}

describe('batch read (POST /api/v1/data/batch-read)', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;
  let dir: string;
  const files = new Map<string, Buffer>();

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    dir = `${alice.user.homePath}/${uniqueName('batch-read')}`;
    expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: dir }), 201);
    for (const [i, size] of [10_240, 0, 1, 70_000].entries()) {
      const path = `${dir}/f${i}.bin`;
      const data = testBytes(size, i + 1);
      expectStatus(
        await alice.client.put<EntryDto>('/api/v1/data', undefined, {
          query: { path },
          body: data,
          headers: { 'content-type': 'application/octet-stream' },
        }),
        201,
      );
      files.set(path, data);
    }
  });
  afterAll(async () => {
    await site?.close();
  });

  it('returns every object asked for, in order, each with its size and SHA-256', async () => {
    const paths = [...files.keys()].reverse();
    paths.push(paths[0]!); // the same object twice is fine
    const res = expectStatus(await alice.client.post('/api/v1/data/batch-read', { paths }), 200);
    expect(res.headers.get('content-type')).toBe(BATCH_READ_CONTENT_TYPE);
    const parts = parseBatch(res.bytes);
    expect(parts.map((p) => p.path)).toEqual(paths);
    for (const part of parts) {
      const expected = files.get(part.path)!;
      expect(part.size).toBe(expected.length);
      expect(part.sha256).toBe(sha256(expected));
      expect(part.data.equals(expected)).toBe(true);
    }
  });

  it('works with a read token', async () => {
    const token = (await alice.client.post<CreatedTokenDto>('/api/v1/tokens', { name: 'r', scope: 'read' }))
      .body.secret;
    const paths = [...files.keys()];
    const res = expectStatus(await site.asToken(token).post('/api/v1/data/batch-read', { paths }), 200);
    expect(parseBatch(res.bytes).map((p) => p.path)).toEqual(paths);
  });

  it('is all or nothing: a missing path, a collection or an unreadable object fails the whole request', async () => {
    const some = [...files.keys()].slice(0, 2);
    expectError(
      await alice.client.post('/api/v1/data/batch-read', { paths: [...some, `${dir}/missing`] }),
      404,
      ErrorCode.NotFound,
    );
    expectError(
      await alice.client.post('/api/v1/data/batch-read', { paths: [...some, dir] }),
      409,
      ErrorCode.NotAnObject,
    );
    const denied = await bob.client.post('/api/v1/data/batch-read', { paths: some });
    expect([403, 404]).toContain(denied.status);
    expect(denied.text).not.toContain(sha256(files.get(some[0]!)!));
  });

  it('reads an object readable only through a grant on it, and nothing else of its collection', async () => {
    const [first, second] = [...files.keys()];
    expectStatus(
      await alice.client.put('/api/v1/permissions', { path: first, user: bob.username, level: 'read' }),
      200,
    );
    const res = expectStatus(await bob.client.post('/api/v1/data/batch-read', { paths: [first] }), 200);
    expect(parseBatch(res.bytes)[0]!.data.equals(files.get(first!)!)).toBe(true);
    expectError(
      await bob.client.post('/api/v1/data/batch-read', { paths: [first, second] }),
      403,
      ErrorCode.PermissionDenied,
    );
  });

  it('checks its body', async () => {
    expectError(
      await alice.client.post('/api/v1/data/batch-read', { paths: [] }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(
      await alice.client.post('/api/v1/data/batch-read', { paths: ['relative/path'] }),
      422,
      ErrorCode.ValidationFailed,
    );
    const tooMany = Array.from({ length: 1001 }, (_, i) => `${dir}/x${i}`);
    expectError(
      await alice.client.post('/api/v1/data/batch-read', { paths: tooMany }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(
      await site.anonymous().post('/api/v1/data/batch-read', { paths: [...files.keys()] }),
      401,
      ErrorCode.Unauthenticated,
    );
  });
});
