import { createHash } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import {
  ApiError,
  createTributaryClient,
  ErrorCode,
  type CreatedTokenDto,
  type EntryDto,
  type UploadSessionDto,
} from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testBytes, uniqueName } from '@tributary/testkit';
import { completeUpload as complete, putUploadChunk as part } from '../test/upload-requests';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

const sha256 = (data: Buffer | Uint8Array): string => createHash('sha256').update(data).digest('hex');

describe('partial updates through upload sessions', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;
  let dir: string;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000', MAX_UPLOAD_BYTES: String(64 * 1024 * 1024) });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    dir = `/home/${alice.username}`;
  });
  afterAll(async () => {
    await site?.close();
  });

  const put = async (client: TestClient, target: string, bytes: Buffer): Promise<EntryDto> => {
    const res = await client.request<EntryDto>('PUT', '/api/v1/data', {
      query: { path: target, overwrite: 'true' },
      headers: { 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(res.status).toBeLessThan(300);
    return res.body;
  };
  const baseOf = (entry: EntryDto) => ({ version: entry.version!, sha256: entry.checksum! });
  const create = (client: TestClient, body: Record<string, unknown>) =>
    client.post<UploadSessionDto>('/api/v1/uploads', body);
  const download = async (target: string): Promise<Buffer> =>
    (await alice.client.get('/api/v1/data', { query: { path: target } })).bytes;
  const sessionFiles = () => readdir(path.join(site.config.storageRoot, '.uploads'));

  /** The expected result of a partial update, computed the slow way. */
  const compose = (base: Buffer, parts: [number, Buffer][], size: number): Buffer => {
    const out = Buffer.alloc(size);
    base.copy(out, 0, 0, Math.min(base.length, size));
    for (const [offset, bytes] of parts) bytes.copy(out, offset);
    return out;
  };

  it('composes the new version from the base and parts sent in any order, without resending the rest', async () => {
    const target = `${dir}/${uniqueName('compose')}.bin`;
    const baseBytes = testBytes(3 * 1024 * 1024 + 17, 11);
    const base = await put(alice.client, target, baseBytes);
    const parts: [number, Buffer][] = [
      [2 * 1024 * 1024, testBytes(1000, 12)],
      [5, Buffer.from('hello')],
      [1024 * 1024, testBytes(64 * 1024, 13)],
    ];
    const created = expectStatus(
      await create(alice.client, { path: target, size: baseBytes.length, base: baseOf(base) }),
      201,
    );
    expect(created.body).toMatchObject({
      base: { version: 1, sha256: base.checksum!.slice('sha256:'.length) },
      ranges: [],
      overwrite: true,
      size: baseBytes.length,
    });
    for (const [offset, bytes] of parts)
      expectStatus(await part(alice.client, created.body.id, offset, bytes, sha256(bytes)), 200);
    const state = expectStatus(
      await alice.client.get<UploadSessionDto>(`/api/v1/uploads/${created.body.id}`),
      200,
    );
    expect(state.body.ranges).toEqual([
      [5, 10],
      [1024 * 1024, 1024 * 1024 + 64 * 1024],
      [2 * 1024 * 1024, 2 * 1024 * 1024 + 1000],
    ]);
    expect(state.body.received).toBe(5 + 64 * 1024 + 1000);
    const expected = compose(baseBytes, parts, baseBytes.length);
    const done = expectStatus(await complete(alice.client, created.body.id), 200);
    expect(done.body).toMatchObject({
      version: 2,
      size: expected.length,
      checksum: `sha256:${sha256(expected)}`,
    });
    expect((await download(target)).equals(expected)).toBe(true);
    expect(await sessionFiles()).not.toContain(created.body.id);
  });

  it('extends (zeros between the old end and the parts) and shrinks', async () => {
    const target = `${dir}/${uniqueName('resize')}.bin`;
    const baseBytes = Buffer.from('0123456789');
    let entry = await put(alice.client, target, baseBytes);

    // Append past a gap: bytes 10..19 are zeros, "tail" at 20.
    const grow = expectStatus(
      await create(alice.client, { path: target, size: 24, base: baseOf(entry) }),
      201,
    );
    expectStatus(await part(alice.client, grow.body.id, 20, Buffer.from('tail')), 200);
    entry = expectStatus(await complete(alice.client, grow.body.id), 200).body;
    const grown = compose(baseBytes, [[20, Buffer.from('tail')]], 24);
    expect(grown.subarray(10, 20).every((b) => b === 0)).toBe(true);
    expect((await download(target)).equals(grown)).toBe(true);

    // Truncate to 4 bytes with nothing sent.
    const shrink = expectStatus(
      await create(alice.client, { path: target, size: 4, base: baseOf(entry) }),
      201,
    );
    entry = expectStatus(
      await complete(alice.client, shrink.body.id, { sha256: sha256(Buffer.from('0123')) }),
      200,
    ).body;
    expect(entry).toMatchObject({ version: 3, size: 4 });
    expect((await download(target)).toString()).toBe('0123');

    // Shrink and rewrite the last byte; then to 0.
    const both = expectStatus(
      await create(alice.client, { path: target, size: 3, base: baseOf(entry) }),
      201,
    );
    expectStatus(await part(alice.client, both.body.id, 2, Buffer.from('X')), 200);
    entry = expectStatus(await complete(alice.client, both.body.id), 200).body;
    expect((await download(target)).toString()).toBe('01X');
    const empty = expectStatus(
      await create(alice.client, { path: target, size: 0, base: baseOf(entry) }),
      201,
    );
    expect(expectStatus(await complete(alice.client, empty.body.id), 200).body).toMatchObject({ size: 0 });
  });

  it('refuses a stale base (409 UPLOAD_BASE_CHANGED) at creation and at completion, changing nothing', async () => {
    const target = `${dir}/${uniqueName('stale')}.bin`;
    const v1 = await put(alice.client, target, Buffer.from('version one'));
    const session = expectStatus(
      await create(alice.client, { path: target, size: 11, base: baseOf(v1) }),
      201,
    );
    expectStatus(await part(alice.client, session.body.id, 0, Buffer.from('VERSION')), 200);
    // Someone writes the object meanwhile.
    const v2 = await put(alice.client, target, Buffer.from('version two'));
    const refused = expectError(
      await complete(alice.client, session.body.id),
      409,
      ErrorCode.UploadBaseChanged,
    );
    expect(refused.details?.version).toEqual(['2']);
    expect((await download(target)).toString()).toBe('version two');
    // The session ended with its bytes.
    expectError(await alice.client.get(`/api/v1/uploads/${session.body.id}`), 404, ErrorCode.NotFound);
    expect(await sessionFiles()).not.toContain(session.body.id);
    // Creating from an old version, or with a wrong checksum, is refused up front.
    expectError(
      await create(alice.client, { path: target, size: 3, base: baseOf(v1) }),
      409,
      ErrorCode.UploadBaseChanged,
    );
    expectError(
      await create(alice.client, {
        path: target,
        size: 3,
        base: { version: 2, sha256: sha256(Buffer.from('x')) },
      }),
      409,
      ErrorCode.UploadBaseChanged,
    );
    expect(
      expectStatus(await create(alice.client, { path: target, size: 3, base: baseOf(v2) }), 201).body.base,
    ).toEqual({
      version: 2,
      sha256: v2.checksum!.slice('sha256:'.length),
    });
  });

  it('refuses bad ranges (422), overlapping parts (409) and bad input, keeping the session usable', async () => {
    const target = `${dir}/${uniqueName('ranges')}.bin`;
    const v1 = await put(alice.client, target, Buffer.from('abcdefghij'));
    expectError(
      await create(alice.client, { path: target, base: baseOf(v1) }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(
      await create(alice.client, { path: target, size: 10, base: { version: 0, sha256: 'zz' } }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(
      await create(alice.client, {
        path: target,
        size: 10,
        base: { version: 2 ** 40, sha256: sha256(Buffer.from('')) },
      }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectError(
      await create(alice.client, { path: `${dir}/${uniqueName('absent')}`, size: 1, base: baseOf(v1) }),
      404,
      ErrorCode.NotFound,
    );
    const { body: session } = expectStatus(
      await create(alice.client, { path: target, size: 12, base: baseOf(v1) }),
      201,
    );
    const id = session.id;
    expectError(await part(alice.client, id, 10, Buffer.from('xyz')), 422, ErrorCode.UploadRangeInvalid);
    expectError(await part(alice.client, id, 13, Buffer.from('')), 422, ErrorCode.UploadRangeInvalid);
    expectError(
      await part(alice.client, id, 0, Buffer.from('AB'), sha256(Buffer.from('no'))),
      422,
      ErrorCode.ChecksumMismatch,
    );
    expectStatus(await part(alice.client, id, 2, Buffer.from('CD')), 200);
    const overlap = expectError(
      await part(alice.client, id, 3, Buffer.from('xx')),
      409,
      ErrorCode.UploadRangeOverlap,
    );
    expect(overlap.details?.ranges).toEqual(['2-4']);
    const prefix = await alice.client.request('PUT', `/api/v1/uploads/${id}`, {
      query: { offset: 0 },
      headers: { 'content-type': 'application/octet-stream', 'x-prefix-sha256': sha256(Buffer.from('A')) },
      body: Buffer.from('A'),
    });
    expectError(prefix, 422, ErrorCode.ValidationFailed);
    // The refused parts left nothing behind: only [2, 4) and [10, 12) are taken from the parts.
    expectStatus(await part(alice.client, id, 10, Buffer.from('!!')), 200);
    expectStatus(await complete(alice.client, id), 200);
    expect((await download(target)).toString()).toBe('abCDefghij!!');
  });

  it('checks permissions in the service: no write access, no partial update; sessions stay private', async () => {
    const target = `${dir}/${uniqueName('guarded')}.bin`;
    const v1 = await put(alice.client, target, Buffer.from('private bytes'));
    expectError(
      await create(bob.client, { path: target, size: 4, base: baseOf(v1) }),
      403,
      ErrorCode.PermissionDenied,
    );
    // Read access is not enough to change it.
    expectStatus(
      await alice.client.put('/api/v1/permissions', { path: target, user: bob.username, level: 'read' }),
      200,
    );
    expectError(
      await create(bob.client, { path: target, size: 4, base: baseOf(v1) }),
      403,
      ErrorCode.PermissionDenied,
    );
    const { body: session } = expectStatus(
      await create(alice.client, { path: target, size: 13, base: baseOf(v1) }),
      201,
    );
    expectError(await part(bob.client, session.id, 0, Buffer.from('x')), 404, ErrorCode.NotFound);
    expectError(await complete(bob.client, session.id), 404, ErrorCode.NotFound);
    // Write access granted: bob's own session works.
    expectStatus(
      await alice.client.put('/api/v1/permissions', { path: target, user: bob.username, level: 'write' }),
      200,
    );
    const { body: bobs } = expectStatus(
      await create(bob.client, { path: target, size: 13, base: baseOf(v1) }),
      201,
    );
    expectStatus(await part(bob.client, bobs.id, 0, Buffer.from('PUBLIC!')), 200);
    expectStatus(await complete(bob.client, bobs.id), 200);
    expect((await download(target)).toString()).toBe('PUBLIC! bytes');
    // Alice's session was made from the version bob replaced.
    expectError(await complete(alice.client, session.id), 409, ErrorCode.UploadBaseChanged);
  });

  it('the typed client in @tributary/shared drives a partial update', async () => {
    const token = expectStatus(
      await alice.client.post<CreatedTokenDto>('/api/v1/tokens', { name: 'partial', scope: 'write' }),
      201,
    ).body.secret;
    const client = createTributaryClient({ baseUrl: site.url, token });
    const target = `${dir}/${uniqueName('typed')}.txt`;
    const v1 = await put(alice.client, target, Buffer.from('typed client'));
    const session = await client.createUpload({ path: target, size: 15, base: baseOf(v1) });
    const part = new TextEncoder().encode('!!!');
    const after = await client.uploadPart(session.id, 12, part, sha256(part));
    expect(after.ranges).toEqual([[12, 15]]);
    expect((await client.getUpload(session.id)).received).toBe(3);
    const entry = await client.completeUpload(session.id);
    expect(entry).toMatchObject({ version: 2, size: 15 });
    expect((await download(target)).toString()).toBe('typed client!!!');
    const stale = await client
      .createUpload({ path: target, size: 1, base: baseOf(v1) })
      .catch((e: unknown) => e);
    expect(stale).toBeInstanceOf(ApiError);
    expect(stale).toMatchObject({ code: ErrorCode.UploadBaseChanged });
    const aborted = await client.createUpload({ path: target, size: 1, base: baseOf(entry) });
    await client.abortUpload(aborted.id);
    await expect(client.getUpload(aborted.id)).rejects.toMatchObject({ code: ErrorCode.NotFound });
  });
});
