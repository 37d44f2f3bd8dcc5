import { createHash } from 'node:crypto';
import { mkdtemp, open, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  ApiConnection,
  ApiRemoteFile,
  BufferedFile,
  downloadFile,
  uploadFile,
  type TransferRetry,
} from '@tributary/buffer';
import { ErrorCode, type CreatedTokenDto, type UploadSessionDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { testBytes, uniqueName } from '@tributary/testkit';
import { completeUpload as complete, putUploadChunk as putChunk } from '../test/upload-requests';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';
import { UploadsService } from './uploads.service';

const MiB = 1024 * 1024;
const sha256 = (data: Buffer | Uint8Array): string => createHash('sha256').update(data).digest('hex');

describe('resumable upload sessions', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;
  let dir: string;
  let tmp: string;
  let api: ApiConnection;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000', MAX_UPLOAD_BYTES: String(2 * 1024 * MiB) });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    dir = `/home/${alice.username}`;
    tmp = await mkdtemp(path.join(os.tmpdir(), 'tributary-uploads-'));
    const token = await alice.client.post<CreatedTokenDto>('/api/v1/tokens', {
      name: 'engine',
      scope: 'write',
    });
    api = new ApiConnection({ baseUrl: site.url, token: expectStatus(token, 201).body.secret });
  });
  afterAll(async () => {
    await site?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  const create = (client: TestClient, body: Record<string, unknown>) =>
    client.post<UploadSessionDto>('/api/v1/uploads', body);
  const sessionFiles = () => readdir(path.join(site.config.storageRoot, '.uploads'));
  /** Inode numbers of every object file at the site. */
  const objectInodes = async (): Promise<Set<number>> => {
    const root = path.join(site.config.storageRoot, 'objects');
    const inodes = new Set<number>();
    for (const shard of await readdir(root).catch(() => [])) {
      for (const name of await readdir(path.join(root, shard)))
        inodes.add((await stat(path.join(root, shard, name))).ino);
    }
    return inodes;
  };
  const stagingFiles = () => readdir(path.join(site.config.storageRoot, '.staging'));

  describe('API', () => {
    it('collects chunks in order, tells the acknowledged offset and commits with the whole SHA-256', async () => {
      const bytes = testBytes(300 * 1024, 3);
      const target = `${dir}/${uniqueName('chunks')}.bin`;
      const created = expectStatus(
        await create(alice.client, { path: target, size: bytes.length, sha256: sha256(bytes) }),
        201,
      );
      expect(created.body).toMatchObject({ path: target, size: bytes.length, received: 0, overwrite: false });
      const id = created.body.id;
      const first = bytes.subarray(0, 100 * 1024);
      expectStatus(await putChunk(alice.client, id, 0, first, sha256(first)), 200);
      const state = expectStatus(await alice.client.get<UploadSessionDto>(`/api/v1/uploads/${id}`), 200);
      expect(state.body.received).toBe(100 * 1024);
      const rest = bytes.subarray(100 * 1024);
      expect(expectStatus(await putChunk(alice.client, id, 100 * 1024, rest), 200).body.received).toBe(
        bytes.length,
      );
      const done = expectStatus(await complete(alice.client, id), 201);
      expect(done.body).toMatchObject({
        path: target,
        size: bytes.length,
        checksum: `sha256:${sha256(bytes)}`,
      });
      const download = await alice.client.get('/api/v1/data', { query: { path: target } });
      expect(download.bytes.equals(bytes)).toBe(true);
      expectError(await alice.client.get(`/api/v1/uploads/${id}`), 404, ErrorCode.NotFound);
      expect(await sessionFiles()).not.toContain(id);
    });

    it('refuses a chunk at the wrong offset (409 with the offset it holds) and a corrupted chunk (422)', async () => {
      const bytes = testBytes(64 * 1024, 4);
      const { body: session } = await create(alice.client, { path: `${dir}/${uniqueName('offsets')}` });
      expectStatus(await putChunk(alice.client, session.id, 0, bytes.subarray(0, 1000)), 200);
      const mismatch = expectError(
        await putChunk(alice.client, session.id, 0, bytes),
        409,
        ErrorCode.UploadOffsetMismatch,
      );
      expect(mismatch.details).toEqual({ received: ['1000'] });
      const damaged = Buffer.from(bytes.subarray(1000, 2000));
      const checksum = sha256(damaged);
      damaged.writeUInt8(damaged.readUInt8(10) ^ 0xff, 10);
      expectError(
        await putChunk(alice.client, session.id, 1000, damaged, checksum),
        422,
        ErrorCode.ChecksumMismatch,
      );
      const state = await alice.client.get<UploadSessionDto>(`/api/v1/uploads/${session.id}`);
      expect(state.body.received).toBe(1000);
      expectStatus(await putChunk(alice.client, session.id, 1000, bytes.subarray(1000, 2000), checksum), 200);
      const done = expectStatus(await complete(alice.client, session.id), 201);
      expect(done.body.checksum).toBe(`sha256:${sha256(bytes.subarray(0, 2000))}`);
    });

    it('X-Prefix-Sha256 checks a chunk by the hash of every byte through it, also after a restart', async () => {
      const bytes = testBytes(3000, 6);
      const { body: session } = await create(alice.client, { path: `${dir}/${uniqueName('prefix')}` });
      const put = (offset: number, chunk: Buffer, prefix: string) =>
        alice.client.request<UploadSessionDto>('PUT', `/api/v1/uploads/${session.id}`, {
          query: { offset },
          headers: { 'content-type': 'application/octet-stream', 'x-prefix-sha256': prefix },
          body: chunk,
        });
      expectStatus(await put(0, bytes.subarray(0, 1000), sha256(bytes.subarray(0, 1000))), 200);
      const damaged = Buffer.from(bytes.subarray(1000, 2000));
      damaged.writeUInt8(damaged.readUInt8(5) ^ 0xff, 5);
      const refused = expectError(
        await put(1000, damaged, sha256(bytes.subarray(0, 2000))),
        422,
        ErrorCode.ChecksumMismatch,
      );
      expect(refused.details).toEqual({ received: ['1000'] });
      expect((await alice.client.get<UploadSessionDto>(`/api/v1/uploads/${session.id}`)).body.received).toBe(
        1000,
      );
      // The hash of a chunk alone is not the hash through it.
      expectError(
        await put(1000, bytes.subarray(1000, 2000), sha256(bytes.subarray(1000, 2000))),
        422,
        ErrorCode.ChecksumMismatch,
      );
      expectStatus(await put(1000, bytes.subarray(1000, 2000), sha256(bytes.subarray(0, 2000))), 200);
      // A restart loses the running hash: the site hashes the bytes it holds, then checks as before.
      const uploads = site.siteApp.app.get<UploadsService, { hashes: Map<string, unknown> }>(UploadsService);
      uploads.hashes.clear();
      expectError(
        await put(2000, bytes.subarray(2000), sha256(bytes.subarray(2000))),
        422,
        ErrorCode.ChecksumMismatch,
      );
      expectStatus(await put(2000, bytes.subarray(2000), sha256(bytes)), 200);
      expectError(
        await alice.client.request('PUT', `/api/v1/uploads/${session.id}`, {
          query: { offset: 3000 },
          headers: { 'content-type': 'application/octet-stream', 'x-prefix-sha256': 'zz' },
          body: Buffer.from('x'),
        }),
        422,
        ErrorCode.ValidationFailed,
      );
      const done = expectStatus(await complete(alice.client, session.id, { sha256: sha256(bytes) }), 201);
      expect(done.body.checksum).toBe(`sha256:${sha256(bytes)}`);
    });

    it('a chunk that arrives before its predecessor waits for it (pipelined chunks)', async () => {
      const bytes = testBytes(2 * MiB, 6);
      const { body: session } = await create(alice.client, { path: `${dir}/${uniqueName('pipelined')}` });
      const second = putChunk(alice.client, session.id, MiB, bytes.subarray(MiB));
      await new Promise((r) => setTimeout(r, 100));
      const first = putChunk(alice.client, session.id, 0, bytes.subarray(0, MiB));
      expectStatus(await first, 200);
      expect(expectStatus(await second, 200).body.received).toBe(2 * MiB);
      expect(expectStatus(await complete(alice.client, session.id), 201).body.checksum).toBe(
        `sha256:${sha256(bytes)}`,
      );
    });

    // On a local resource the session's file becomes the object (a rename); an object store uploads
    // it once at completion (TRIBUTARY_TEST_STORAGE=s3), so there the inode is not checked.
    it('completing commits the session file in place: the object is that file, not a copy', async () => {
      const local = site.config.storage.defaultResource === 'default';
      const bytes = testBytes(3 * MiB, 21);
      const target = `${dir}/${uniqueName('in-place')}.bin`;
      const { body: session } = await create(alice.client, { path: target });
      expectStatus(await putChunk(alice.client, session.id, 0, bytes.subarray(0, MiB)), 200);
      expectStatus(await putChunk(alice.client, session.id, MiB, bytes.subarray(MiB)), 200);
      const { ino } = await stat(path.join(site.config.storageRoot, '.uploads', session.id));
      const done = expectStatus(await complete(alice.client, session.id, { sha256: sha256(bytes) }), 201);
      expect(done.body.checksum).toBe(`sha256:${sha256(bytes)}`);
      if (local) expect(await objectInodes()).toContain(ino);
      expect(await sessionFiles()).not.toContain(session.id);
      const download = await alice.client.get('/api/v1/data', { query: { path: target } });
      expect(download.bytes.equals(bytes)).toBe(true);
    });

    it('without the hash measured on arrival (a restart), completing hashes the file and still checks it', async () => {
      const bytes = testBytes(200_000, 22);
      const uploads = site.siteApp.app.get<UploadsService, { hashes: Map<string, unknown> }>(UploadsService);
      const wrong = await create(alice.client, { path: `${dir}/${uniqueName('rehash')}` });
      expectStatus(await putChunk(alice.client, wrong.body.id, 0, bytes), 200);
      uploads.hashes.clear();
      expectError(
        await complete(alice.client, wrong.body.id, { sha256: sha256(Buffer.from('other bytes')) }),
        422,
        ErrorCode.ChecksumMismatch,
      );
      const target = `${dir}/${uniqueName('rehash')}`;
      const right = await create(alice.client, { path: target });
      expectStatus(await putChunk(alice.client, right.body.id, 0, bytes.subarray(0, 1000)), 200);
      uploads.hashes.clear();
      // A chunk after the restart: the hash cannot go on, so the file is read at completion.
      expectStatus(await putChunk(alice.client, right.body.id, 1000, bytes.subarray(1000)), 200);
      const done = expectStatus(await complete(alice.client, right.body.id, { sha256: sha256(bytes) }), 201);
      expect(done.body.checksum).toBe(`sha256:${sha256(bytes)}`);
      const download = await alice.client.get('/api/v1/data', { query: { path: target } });
      expect(download.bytes.equals(bytes)).toBe(true);
    });

    it('completing with a name taken meanwhile keeps the session and its bytes for another try', async () => {
      const bytes = testBytes(50_000, 23);
      const target = `${dir}/${uniqueName('taken')}`;
      const { body: session } = await create(alice.client, { path: target });
      expectStatus(await putChunk(alice.client, session.id, 0, bytes), 200);
      expectStatus(
        await alice.client.request('PUT', '/api/v1/data', {
          query: { path: target },
          headers: { 'content-type': 'application/octet-stream' },
          body: Buffer.from('first'),
        }),
        201,
      );
      expectError(await complete(alice.client, session.id), 409, ErrorCode.NameTaken);
      expect(await sessionFiles()).toContain(session.id);
      const state = await alice.client.get<UploadSessionDto>(`/api/v1/uploads/${session.id}`);
      expect(state.body.received).toBe(bytes.length);
      expectStatus(await alice.client.delete('/api/v1/namespace', { query: { path: target } }), 200);
      const done = expectStatus(await complete(alice.client, session.id, { sha256: sha256(bytes) }), 201);
      expect(done.body.size).toBe(bytes.length);
    });

    it('completing needs every declared byte and the right whole-object checksum', async () => {
      const bytes = testBytes(10_000, 5);
      const objectsBefore = await objectInodes();
      const { body: session } = await create(alice.client, {
        path: `${dir}/${uniqueName('incomplete')}`,
        size: bytes.length,
        sha256: sha256(Buffer.from('something else')),
      });
      expectStatus(await putChunk(alice.client, session.id, 0, bytes.subarray(0, 5000)), 200);
      expectError(await complete(alice.client, session.id), 400, ErrorCode.UploadIncomplete);
      expectError(await putChunk(alice.client, session.id, 5000, bytes), 413, ErrorCode.PayloadTooLarge);
      expectStatus(await putChunk(alice.client, session.id, 5000, bytes.subarray(5000)), 200);
      expectError(await complete(alice.client, session.id), 422, ErrorCode.ChecksumMismatch);
      // Wrong bytes end the session, and nothing was created: no object, no file anywhere.
      expectError(await alice.client.get(`/api/v1/uploads/${session.id}`), 404, ErrorCode.NotFound);
      expect(await sessionFiles()).not.toContain(session.id);
      expectError(
        await alice.client.get('/api/v1/data', { query: { path: session.path } }),
        404,
        ErrorCode.NotFound,
      );
      expect(await objectInodes()).toEqual(objectsBefore);
      expect(await stagingFiles()).toEqual([]);
    });

    it('checks access and input like an upload, and keeps sessions private to their owner', async () => {
      expectError(
        await create(alice.client, { path: `/home/${bob.username}/x` }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(await create(alice.client, { path: `${dir}/missing/x` }), 404, ErrorCode.NotFound);
      expectError(await create(alice.client, { path: 'relative' }), 422, ErrorCode.ValidationFailed);
      expectError(
        await create(alice.client, { path: `${dir}/x`, size: -1 }),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(
        await create(alice.client, { path: `${dir}/x`, sha256: 'abc' }),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(
        await create(alice.client, { path: `${dir}/x`, size: 4 * 1024 * MiB }),
        413,
        ErrorCode.PayloadTooLarge,
      );
      const existing = `${dir}/${uniqueName('existing')}`;
      expectStatus(
        await alice.client.request('PUT', '/api/v1/data', {
          query: { path: existing },
          headers: { 'content-type': 'application/octet-stream' },
          body: 'old',
        }),
        201,
      );
      expectError(await create(alice.client, { path: existing }), 409, ErrorCode.NameTaken);
      const { body: session } = await create(alice.client, { path: `${dir}/${uniqueName('private')}` });
      expectError(await bob.client.get(`/api/v1/uploads/${session.id}`), 404, ErrorCode.NotFound);
      expectError(await putChunk(bob.client, session.id, 0, Buffer.from('x')), 404, ErrorCode.NotFound);
      expectError(await alice.client.get('/api/v1/uploads/not-a-uuid'), 422, ErrorCode.ValidationFailed);
      expectError(
        await putChunk(alice.client, session.id, '-1', Buffer.from('x')),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(
        await putChunk(alice.client, session.id, 'abc', Buffer.from('x')),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(
        await putChunk(alice.client, session.id, 0, Buffer.from('x'), 'zz'),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(
        await site.anonymous().get(`/api/v1/uploads/${session.id}`),
        401,
        ErrorCode.Unauthenticated,
      );
      // A chunk sent as JSON is parsed by the JSON body parser, not stored: refused, never a 500.
      const asJson = await alice.client.request('PUT', `/api/v1/uploads/${session.id}`, {
        query: { offset: 0 },
        headers: { 'content-type': 'application/json' },
        body: '{"a":1}',
      });
      expect(asJson.status).toBeGreaterThanOrEqual(400);
      expect(asJson.status).toBeLessThan(500);
      const after = await alice.client.get<UploadSessionDto>(`/api/v1/uploads/${session.id}`);
      expect(after.body.received).toBe(0);
    });

    it('a restart keeps live sessions and removes files that have no session', async () => {
      const { body: session } = await create(alice.client, { path: `${dir}/${uniqueName('restart')}` });
      expectStatus(await putChunk(alice.client, session.id, 0, Buffer.from('kept')), 200);
      const stray = path.join(site.config.storageRoot, '.uploads', 'stray-leftover');
      await writeFile(stray, 'x');
      await site.siteApp.app.get(UploadsService).onModuleInit();
      expect(await sessionFiles()).toContain(session.id);
      expect(await sessionFiles()).not.toContain('stray-leftover');
      const state = await alice.client.get<UploadSessionDto>(`/api/v1/uploads/${session.id}`);
      expect(state.body.received).toBe(4);
    });

    it('overwrite replaces the bytes as a new version; abort and expiry end a session', async () => {
      const target = `${dir}/${uniqueName('versioned')}`;
      const first = await create(alice.client, { path: target });
      expectStatus(await putChunk(alice.client, first.body.id, 0, Buffer.from('one')), 200);
      expectStatus(await complete(alice.client, first.body.id), 201);
      const second = await create(alice.client, { path: target, overwrite: true });
      expectStatus(await putChunk(alice.client, second.body.id, 0, Buffer.from('two!')), 200);
      const replaced = expectStatus(await complete(alice.client, second.body.id), 200);
      expect(replaced.body).toMatchObject({ version: 2, size: 4 });

      const aborted = await create(alice.client, { path: `${dir}/${uniqueName('aborted')}` });
      expectStatus(await alice.client.delete(`/api/v1/uploads/${aborted.body.id}`), 204);
      expectError(await alice.client.get(`/api/v1/uploads/${aborted.body.id}`), 404, ErrorCode.NotFound);

      const expiring = await create(alice.client, { path: `${dir}/${uniqueName('expiring')}` });
      await site.query(`UPDATE upload_sessions SET expires_at = now() - interval '1 minute' WHERE id = $1`, [
        expiring.body.id,
      ]);
      expectError(
        await putChunk(alice.client, expiring.body.id, 0, Buffer.from('late')),
        410,
        ErrorCode.UploadExpired,
      );
      expectError(await alice.client.get(`/api/v1/uploads/${expiring.body.id}`), 404, ErrorCode.NotFound);
      expect(await sessionFiles()).not.toContain(expiring.body.id);
    });
  });

  describe('transfer engine against the API', () => {
    it('a 1 GiB upload interrupted half way resumes from the acknowledged byte; the download matches', async () => {
      const size = 1024 * MiB;
      const source = path.join(tmp, 'one-gib.bin');
      // Streamed to disk, 16 MiB at a time, each block different so misplaced chunks would show.
      const block = testBytes(16 * MiB, 11);
      const file = await open(source, 'w');
      const hash = createHash('sha256');
      for (let offset = 0; offset < size; offset += block.length) {
        block.writeUInt32BE(offset / block.length, 0);
        hash.update(block);
        await file.write(block, 0, block.length, offset);
      }
      await file.close();
      const localSha = hash.digest('hex');

      const target = `${dir}/${uniqueName('big')}.bin`;
      const controller = new AbortController();
      let sessionId: string | undefined;
      let stoppedAt = 0;
      await expect(
        uploadFile(api, source, target, {
          sha256: localSha,
          chunkBytes: 16 * MiB,
          signal: controller.signal,
          onSession: (s) => (sessionId = s.id),
          onProgress: (p) => {
            if (p.phase === 'transfer' && p.bytes >= size / 2 && !controller.signal.aborted) {
              stoppedAt = p.bytes;
              controller.abort();
            }
          },
        }),
      ).rejects.toThrow();
      expect(sessionId).toBeDefined();
      const held = (await alice.client.get<UploadSessionDto>(`/api/v1/uploads/${sessionId}`)).body.received;
      expect(held).toBeGreaterThanOrEqual(stoppedAt);
      expect(held).toBeLessThan(size);

      const sent: number[] = [];
      const entry = await uploadFile(api, source, target, {
        sessionId,
        chunkBytes: 16 * MiB,
        onProgress: (p) => p.phase === 'transfer' && sent.push(p.bytes),
      });
      expect(sent[0]).toBe(held); // resumed, not restarted
      expect(entry).toMatchObject({ path: target, size, checksum: `sha256:${localSha}` });

      const copy = path.join(tmp, 'one-gib.copy');
      const result = await downloadFile(api, target, copy, { streams: 4, chunkBytes: 32 * MiB });
      // downloadFile hashed the file it wrote and compared it with the catalog's checksum.
      expect(result).toEqual({ size, sha256: localSha });
      await rm(source);
      await rm(copy);
    }, 180_000);

    it('a chunk corrupted on the way is refused by the API and sent again', async () => {
      const source = path.join(tmp, 'corrupt.bin');
      const bytes = testBytes(3 * MiB, 12);
      await (await open(source, 'w')).writeFile(bytes).then(() => undefined);
      let corrupted = 0;
      const damaging = new ApiConnection({
        ...api.options,
        fetch: (input, init) => {
          if (init?.method === 'PUT' && init.body instanceof Uint8Array && corrupted < 2) {
            corrupted++;
            const damaged = Buffer.from(init.body);
            damaged.writeUInt8(damaged.readUInt8(damaged.length >> 1) ^ 0x40, damaged.length >> 1);
            return fetch(input, { ...init, body: damaged });
          }
          return fetch(input, init);
        },
      });
      const retries: TransferRetry[] = [];
      const entry = await uploadFile(damaging, source, `${dir}/${uniqueName('corrupt')}`, {
        chunkBytes: 1 * MiB,
        onRetry: (r) => retries.push(r),
      });
      expect(entry.checksum).toBe(`sha256:${sha256(bytes)}`);
      expect(retries.map((r) => r.reason)).toEqual(['checksum', 'checksum']);
      expect(corrupted).toBe(2);
    });

    it('a connection lost after the API stored a chunk is retried and re-synchronised', async () => {
      const source = path.join(tmp, 'reset.bin');
      const bytes = testBytes(2 * MiB, 13);
      await (await open(source, 'w')).writeFile(bytes).then(() => undefined);
      let dropped = 0;
      const flaky = new ApiConnection({
        ...api.options,
        fetch: async (input, init) => {
          const res = await fetch(input, init);
          if (init?.method === 'PUT' && dropped === 0) {
            dropped++;
            await res.arrayBuffer();
            throw new TypeError('fetch failed: socket hang up');
          }
          return res;
        },
      });
      const retries: TransferRetry[] = [];
      const entry = await uploadFile(flaky, source, `${dir}/${uniqueName('reset')}`, {
        chunkBytes: 512 * 1024,
        retry: { retries: 3, baseDelayMs: 1, maxDelayMs: 5 },
        onRetry: (r) => retries.push(r),
      });
      expect(entry.checksum).toBe(`sha256:${sha256(bytes)}`);
      expect(retries.map((r) => r.reason)).toEqual(['transient', 'offset']);
    });

    it('the advance buffer over the API: 4 KiB writes become a few chunks, reads come back identical', async () => {
      const target = `${dir}/${uniqueName('buffered')}.bin`;
      const bytes = testBytes(5 * MiB + 123, 14);
      let requests = 0;
      // No injected fetch: read-ahead windows travel over the zero-copy reader (HttpIntoClient).
      const counting = new ApiConnection({ ...api.options, onRequest: () => void requests++ });
      const writer = new BufferedFile(ApiRemoteFile.openForWrite(counting, target), { bufferBytes: 2 * MiB });
      for (let offset = 0; offset < bytes.length; offset += 4096) {
        await writer.write(offset, bytes.subarray(offset, Math.min(offset + 4096, bytes.length)));
      }
      await writer.close();
      expect(requests).toBeLessThan(20); // unbuffered: 1,283 chunk requests
      requests = 0;
      const reader = new BufferedFile(await ApiRemoteFile.openForRead(counting, target), {
        bufferBytes: 2 * MiB,
      });
      const parts: Buffer[] = [];
      for (let offset = 0; offset < bytes.length; offset += 4096) {
        parts.push(Buffer.from(await reader.read(offset, 4096)));
      }
      await reader.close();
      expect(Buffer.concat(parts).equals(bytes)).toBe(true);
      expect(requests).toBeLessThan(20);

      // The site's error envelopes come through the zero-copy reader as the API's errors.
      const gone = ApiRemoteFile.forRead(counting, `${dir}/${uniqueName('missing')}.bin`, 1 * MiB);
      await expect(gone.read(0, 4096)).rejects.toMatchObject({ status: 404, code: 'NOT_FOUND' });
      const stranger = ApiRemoteFile.forRead(
        new ApiConnection({ ...api.options, token: 'trib_not-a-real-token' }),
        target,
        bytes.length,
      );
      await expect(stranger.read(0, 4096)).rejects.toMatchObject({ status: 401, code: 'TOKEN_INVALID' });
    });
  });
});
