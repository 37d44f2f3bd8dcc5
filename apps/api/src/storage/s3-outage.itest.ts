import type { HealthDto, StorageResourceListDto, UploadSessionDto } from '@tributary/shared';
import { s3ResourceEnv, startS3Server, testBucket, waitFor, type S3Server } from '@tributary/testkit';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { s3Keys } from '../test/storage';
import { completeUpload, putUploadChunk } from '../test/upload-requests';
import { expectError, expectStatus, startTestSite, type TestSite, type TestUser } from '../test/test-site';

const MiB = 1024 * 1024;
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

/**
 * A site whose default resource is an S3 bucket, with the S3 server stopped under it (SIGKILL):
 * health says so, requests get 503 STORAGE_UNAVAILABLE naming the resource, nothing is recorded
 * half-way, and everything works again once the server is back (docs/storage.md, "When the store
 * fails").
 */
describe('an s3 resource whose store stops', () => {
  let s3: S3Server;
  let site: TestSite;
  let alice: TestUser;
  let dir: string;

  const objectCount = async (): Promise<number> =>
    Number((await site.query<{ n: string }>('SELECT count(*) AS n FROM data_objects')).rows[0]!.n);
  const s3Resource = () => {
    const r = site.config.storage.resources.find((x) => x.name === 'archive');
    if (r?.kind !== 's3') throw new Error('no s3 resource');
    return r;
  };
  const health = async (): Promise<{ status: number; body: HealthDto }> => {
    const res = await site.anonymous().get<HealthDto>('/api/health');
    return { status: res.status, body: res.body };
  };

  beforeAll(async () => {
    s3 = await startS3Server();
    site = await startTestSite({
      ...s3ResourceEnv(s3, { name: 'archive', bucket: testBucket('outage'), prefix: 'lsu/' }),
      STORAGE_CHECK_SECONDS: '1',
      LOGIN_RATE_LIMIT: '1000',
    });
    alice = await site.createUser();
    dir = `/home/${alice.username}`;
  }, 120_000);

  afterAll(async () => {
    await site?.close();
    await s3?.close();
  });

  it('lists the resource for administrators and in health, never with its keys', async () => {
    const h = await health();
    expect(h.status).toBe(200);
    expect(h.body.storage).toEqual([
      { name: 'archive', kind: 's3', default: true, status: 'ok' },
      { name: 'default', kind: 'local', default: false, status: 'ok' },
    ]);
    const admin = await site.admin();
    const listed = expectStatus(await admin.get<StorageResourceListDto>('/api/v1/storage/resources'), 200);
    expect(listed.body.items.map((r) => [r.name, r.kind, r.default, r.configured, r.status])).toEqual([
      ['archive', 's3', true, true, 'ok'],
      ['default', 'local', false, true, 'ok'],
    ]);
    expect(listed.body.items[0]!.settings).toMatchObject({ endpoint: s3.endpoint, prefix: 'lsu/' });
    expect(listed.text).not.toContain(s3.secretAccessKey);
    expect(listed.text).not.toContain(s3.accessKeyId);
    const rows = await site.query('SELECT * FROM storage_resources');
    expect(JSON.stringify(rows.rows)).not.toContain(s3.secretAccessKey);
    expectError(await alice.client.get('/api/v1/storage/resources'), 403, 'ADMIN_REQUIRED');
  });

  it('answers 503 STORAGE_UNAVAILABLE while the store is down, records nothing, and works again after', async () => {
    const kept = randomBytes(300_000);
    expectStatus(
      await alice.client.request('PUT', '/api/v1/data', { query: { path: `${dir}/kept.bin` }, body: kept }),
      201,
    );
    // An upload session's chunks arrive before the stop (drafts are local until completion).
    const sessionBytes = randomBytes(6 * MiB);
    const session = expectStatus(
      await alice.client.post<UploadSessionDto>('/api/v1/uploads', { path: `${dir}/session.bin` }),
      201,
    ).body;
    expectStatus(await putUploadChunk(alice.client, session.id, 0, sessionBytes.subarray(0, 4 * MiB)), 200);
    const before = await objectCount();

    await s3.kill();
    try {
      const refusedPut = await alice.client.request('PUT', '/api/v1/data', {
        query: { path: `${dir}/new.bin` },
        body: randomBytes(50_000),
      });
      expectError(refusedPut, 503, 'STORAGE_UNAVAILABLE');
      expect((refusedPut.body as { error: { message: string } }).error.message).toContain('"archive"');
      expect(refusedPut.headers.get('retry-after')).toBeTruthy();

      const refusedGet = await alice.client.get('/api/v1/data', { query: { path: `${dir}/kept.bin` } });
      expectError(refusedGet, 503, 'STORAGE_UNAVAILABLE');
      expect((refusedGet.body as { error: { message: string } }).error.message).toContain('"archive"');

      // The session goes on taking chunks; only its completion needs the store.
      expectStatus(
        await putUploadChunk(alice.client, session.id, 4 * MiB, sessionBytes.subarray(4 * MiB)),
        200,
      );
      expectError(await completeUpload(alice.client, session.id), 503, 'STORAGE_UNAVAILABLE');

      expect(await waitFor(async () => (await health()).status === 503)).toBe(true);
      const h = await health();
      expect(h.body.status).toBe('degraded');
      expect(h.body.storage?.find((r) => r.name === 'archive')?.status).toBe('failing');
      expect(await objectCount()).toBe(before);
      expectError(
        await alice.client.get('/api/v1/namespace/stat', { query: { path: `${dir}/new.bin` } }),
        404,
        'NOT_FOUND',
      );
    } finally {
      await s3.start();
    }

    expect(await waitFor(async () => (await health()).status === 200, 30_000)).toBe(true);
    const back = await alice.client.get('/api/v1/data', { query: { path: `${dir}/kept.bin` } });
    expect(expectStatus(back, 200).bytes.equals(kept)).toBe(true);
    // The session survived the outage: completing now commits it.
    const done = expectStatus(await completeUpload(alice.client, session.id), 201);
    expect(done.body.checksum).toBe(`sha256:${sha256(sessionBytes)}`);
    const read = await alice.client.get('/api/v1/data', { query: { path: `${dir}/session.bin` } });
    expect(sha256(read.bytes)).toBe(sha256(sessionBytes));
    const rows = await site.query<{ physical_path: string }>('SELECT physical_path FROM replicas');
    expect(await s3Keys(s3Resource())).toEqual(rows.rows.map((r) => r.physical_path).sort());
  }, 120_000);

  it('a store stopped mid-upload and mid-download: clear errors, nothing recorded, nothing left behind', async () => {
    const size = 48 * MiB;
    const big = randomBytes(size);
    expectStatus(
      await alice.client.request('PUT', '/api/v1/data', { query: { path: `${dir}/big.bin` }, body: big }),
      201,
    );
    const before = await objectCount();

    // Mid-upload: the body goes up slowly; the store dies a few parts in.
    const upload = slowPut(site.url, alice.client.authHeaders('PUT'), `${dir}/cut.bin`, big, 2 * MiB, 20);
    await new Promise((r) => setTimeout(r, 500));
    await s3.kill();
    const answer = await upload;
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.text)).toMatchObject({ error: { code: 'STORAGE_UNAVAILABLE' } });
    expect(await objectCount()).toBe(before);
    await s3.start();
    expect(await waitFor(async () => (await health()).status === 200, 30_000)).toBe(true);

    // A store just restarted answers its health check before it serves every object again.
    const readable = async (): Promise<boolean> =>
      (
        await alice.client.get('/api/v1/data', {
          query: { path: `${dir}/big.bin` },
          headers: { range: 'bytes=0-0' },
        })
      ).status === 206;
    expect(await waitFor(readable, 30_000)).toBe(true);

    // Mid-download: the answer has begun; it breaks off short of its length (never a clean end).
    const download = slowGet(site.url, alice.client.authHeaders(), `${dir}/big.bin`);
    const got = await download.started;
    expect(got.status).toBe(200);
    await s3.kill();
    const outcome = await download.finished;
    expect(outcome.complete).toBe(false);
    expect(outcome.received).toBeLessThan(size);
    await s3.start();
    expect(await waitFor(async () => (await health()).status === 200, 30_000)).toBe(true);

    // Nothing of the cut upload stays: no object row, no object, no unfinished multipart upload.
    const rows = await site.query<{ physical_path: string }>('SELECT physical_path FROM replicas');
    const expected = rows.rows.map((r) => r.physical_path).sort();
    expect(
      await waitFor(
        async () => JSON.stringify(await s3Keys(s3Resource())) === JSON.stringify(expected),
        15_000,
      ),
    ).toBe(true);
    const again = await alice.client.get('/api/v1/data', { query: { path: `${dir}/big.bin` } });
    expect(sha256(expectStatus(again, 200).bytes)).toBe(sha256(big));
  }, 180_000);
});

/** A PUT whose body is sent `piece` bytes at a time, `pauseMs` apart; resolves with the answer. */
function slowPut(
  base: string,
  headers: Record<string, string>,
  objectPath: string,
  body: Buffer,
  piece: number,
  pauseMs: number,
): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}/api/v1/data?path=${encodeURIComponent(objectPath)}`, {
      method: 'PUT',
      headers: {
        ...headers,
        'content-type': 'application/octet-stream',
        'content-length': String(body.length),
      },
    });
    req.once('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.once('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.once('error', reject);
    let at = 0;
    const next = (): void => {
      if (req.destroyed) return;
      if (at >= body.length) {
        req.end();
        return;
      }
      req.write(body.subarray(at, at + piece));
      at += piece;
      setTimeout(next, pauseMs);
    };
    next();
  });
}

/** A GET read slowly; `started` once its headers arrive, `finished` when the body ends or breaks. */
function slowGet(
  base: string,
  headers: Record<string, string>,
  objectPath: string,
): {
  started: Promise<{ status: number }>;
  finished: Promise<{ complete: boolean; received: number }>;
} {
  let onFinish!: (v: { complete: boolean; received: number }) => void;
  const finished = new Promise<{ complete: boolean; received: number }>((r) => (onFinish = r));
  const started = new Promise<{ status: number }>((resolve, reject) => {
    const req = http.get(`${base}/api/v1/data?path=${encodeURIComponent(objectPath)}`, { headers });
    req.once('error', reject);
    req.once('response', (res) => {
      const length = Number(res.headers['content-length']);
      let received = 0;
      res.on('data', (c: Buffer) => {
        received += c.length;
        // Slow reader: the site (and the store's answer) can only be part-way when the store dies.
        res.pause();
        setTimeout(() => res.resume(), 5);
      });
      res.once('end', () => onFinish({ complete: received === length, received }));
      res.once('error', () => onFinish({ complete: false, received }));
      res.once('aborted', () => onFinish({ complete: false, received }));
      resolve({ status: res.statusCode ?? 0 });
    });
  });
  return { started, finished };
}
