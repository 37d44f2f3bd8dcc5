import type { StorageMoveDto, StorageResourceListDto } from '@tributary/shared';
import {
  s3ResourceEnv,
  startS3Server,
  startSite,
  testBucket,
  waitFor,
  type S3Server,
  type SiteProcess,
  type TestClient,
} from '@tributary/testkit';
import { createHash, randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../config/config';
import { filesBelow, s3Keys } from '../test/storage';
import { expectError, expectStatus, startTestSite, type TestSite } from '../test/test-site';

const MiB = 1024 * 1024;
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

async function upload(client: TestClient, objectPath: string, bytes: Buffer): Promise<void> {
  expectStatus(
    await client.request('PUT', '/api/v1/data', { query: { path: objectPath }, body: bytes }),
    201,
  );
}

async function until(client: TestClient, id: string, done: (m: StorageMoveDto) => boolean, ms: number) {
  let last: StorageMoveDto | undefined;
  const ok = await waitFor(async () => {
    last = expectStatus(await client.get<StorageMoveDto>(`/api/v1/storage/moves/${id}`), 200).body;
    return done(last);
  }, ms);
  expect(ok, `move ${id}: ${JSON.stringify(last)}`).toBe(true);
  return last!;
}

/** The copies of this site: resource name and key per object id. */
async function copies(query: (sql: string) => Promise<{ rows: Array<Record<string, string>> }>) {
  const res = await query(
    `SELECT r.object_id::text AS id, s.name AS resource, r.physical_path AS key
       FROM replicas r JOIN storage_resources s ON s.id = r.resource_id ORDER BY r.object_id`,
  );
  return res.rows;
}

describe('moving a collection to another storage resource', () => {
  let s3: S3Server;

  beforeAll(async () => {
    s3 = await startS3Server();
  }, 60_000);
  afterAll(async () => {
    await s3?.close();
  });

  describe('within one site', () => {
    let site: TestSite;
    let admin: TestClient;

    beforeAll(async () => {
      site = await startTestSite({
        ...s3ResourceEnv(s3, { name: 'archive', bucket: testBucket('moves'), asDefault: false }),
        // The storage of this suite is its own: local default, an s3 archive.
        STORAGE_DEFAULT_RESOURCE: 'default',
      });
      admin = await site.admin();
    }, 60_000);
    afterAll(async () => {
      await site?.close();
    });

    it('moves every copy under the collection, verified, and removes the old bytes', async () => {
      const files = new Map<string, Buffer>([
        ['/projects/survey/a.bin', randomBytes(3 * MiB + 5)],
        ['/projects/survey/empty.bin', Buffer.alloc(0)],
        ['/projects/survey/deep/b.bin', randomBytes(20_000)],
        ['/projects/survey/deep/er/c.bin', randomBytes(7 * MiB)],
      ]);
      expectStatus(
        await admin.post('/api/v1/namespace/collections', {
          path: '/projects/survey/deep/er',
          parents: true,
        }),
        201,
      );
      expectStatus(await admin.post('/api/v1/namespace/collections', { path: '/projects/other' }), 201);
      for (const [p, b] of files) await upload(admin, p, b);
      const stay = randomBytes(1000);
      await upload(admin, '/projects/other/stay.bin', stay);

      const started = expectStatus(
        await admin.post<StorageMoveDto>('/api/v1/storage/moves', {
          path: '/projects/survey',
          resource: 'archive',
        }),
        202,
      ).body;
      expect(started).toMatchObject({ status: 'running', objectsTotal: 4, resource: 'archive' });
      expect(started.bytesTotal).toBe([...files.values()].reduce((n, b) => n + b.length, 0));
      const done = await until(admin, started.id, (m) => m.status !== 'running', 30_000);
      expect(done).toMatchObject({
        status: 'done',
        objectsMoved: 4,
        bytesMoved: started.bytesTotal,
        error: null,
      });

      const rows = await copies((sql) => site.query(sql));
      expect(rows.filter((r) => r.resource === 'archive')).toHaveLength(4);
      expect(rows.filter((r) => r.resource === 'default')).toHaveLength(1);
      for (const [p, b] of files) {
        const read = await admin.get('/api/v1/data', { query: { path: p } });
        expect(sha256(expectStatus(read, 200).bytes), p).toBe(sha256(b));
      }
      expect(
        expectStatus(
          await admin.get('/api/v1/data', { query: { path: '/projects/other/stay.bin' } }),
          200,
        ).bytes.equals(stay),
      ).toBe(true);
      // The old bytes go with the garbage sweep; the bucket holds exactly the moved keys.
      const local = path.join(site.config.storageRoot, 'objects');
      expect(await waitFor(async () => (await filesBelow(local)).length === 1, 10_000)).toBe(true);
      const archive = site.config.storage.resources.find((r) => r.name === 'archive');
      if (archive?.kind !== 's3') throw new Error('no archive');
      expect(await s3Keys(archive)).toEqual(
        rows
          .filter((r) => r.resource === 'archive')
          .map((r) => r.key)
          .sort(),
      );
      const listed = expectStatus(
        await admin.get<StorageResourceListDto>('/api/v1/storage/resources'),
        200,
      ).body;
      expect(listed.items.find((r) => r.name === 'archive')).toMatchObject({
        objects: 4,
        bytes: started.bytesTotal,
      });

      // Moving back works the same way.
      const back = expectStatus(
        await admin.post<StorageMoveDto>('/api/v1/storage/moves', {
          path: '/projects/survey',
          resource: 'default',
        }),
        202,
      ).body;
      expect(await until(admin, back.id, (m) => m.status !== 'running', 30_000)).toMatchObject({
        status: 'done',
        objectsMoved: 4,
      });
      expect(await waitFor(async () => (await s3Keys(archive)).length === 0, 10_000)).toBe(true);
      const again = await admin.get('/api/v1/data', { query: { path: '/projects/survey/deep/er/c.bin' } });
      expect(sha256(again.bytes)).toBe(sha256(files.get('/projects/survey/deep/er/c.bin')!));
    }, 90_000);

    it('an update of a moved object puts its one copy where the new bytes went and sweeps the old', async () => {
      expectStatus(await admin.post('/api/v1/namespace/collections', { path: '/projects/upd' }), 201);
      await upload(admin, '/projects/upd/f.bin', randomBytes(50_000));
      const move = expectStatus(
        await admin.post<StorageMoveDto>('/api/v1/storage/moves', {
          path: '/projects/upd',
          resource: 'archive',
        }),
        202,
      ).body;
      await until(admin, move.id, (m) => m.status === 'done', 30_000);
      const archive = site.config.storage.resources.find((r) => r.name === 'archive');
      if (archive?.kind !== 's3') throw new Error('no archive');
      const before = (await copies((sql) => site.query(sql))).find((r) => r.resource === 'archive')!;
      expect((await s3Keys(archive)).includes(before.key!)).toBe(true);

      const next = randomBytes(70_000);
      expectStatus(
        await admin.request('PUT', '/api/v1/data', {
          query: { path: '/projects/upd/f.bin', overwrite: 'true' },
          body: next,
        }),
        200,
      );
      const rows = (await copies((sql) => site.query(sql))).filter((r) => r.id === before.id);
      expect(rows).toHaveLength(1);
      expect(rows[0]!.resource).toBe('default');
      const read = await admin.get('/api/v1/data', { query: { path: '/projects/upd/f.bin' } });
      expect(sha256(expectStatus(read, 200).bytes)).toBe(sha256(next));
      // The old bytes, on the archive, go with the garbage sweep (after each replication cycle).
      await site.runReplicationCycle();
      expect(await waitFor(async () => !(await s3Keys(archive)).includes(before.key!), 10_000)).toBe(true);
    });

    it('is for administrators, and refuses unknown resources and paths', async () => {
      const user = await site.createUser();
      expectError(
        await user.client.post('/api/v1/storage/moves', {
          path: `/home/${user.username}`,
          resource: 'archive',
        }),
        403,
        'ADMIN_REQUIRED',
      );
      expectError(await user.client.get('/api/v1/storage/moves'), 403, 'ADMIN_REQUIRED');
      const unknown = await admin.post('/api/v1/storage/moves', { path: '/projects', resource: 'tape' });
      expectError(unknown, 422, 'VALIDATION_FAILED');
      expect(JSON.stringify(unknown.body)).toContain('archive');
      expectError(
        await admin.post('/api/v1/storage/moves', { path: '/nowhere', resource: 'archive' }),
        404,
        'NOT_FOUND',
      );
      await upload(admin, '/projects/one.bin', Buffer.from('x'));
      expectError(
        await admin.post('/api/v1/storage/moves', { path: '/projects/one.bin', resource: 'archive' }),
        409,
        'NOT_A_COLLECTION',
      );
      expectError(await admin.post('/api/v1/storage/moves', { path: '/projects' }), 422, 'VALIDATION_FAILED');
      expectError(await admin.get('/api/v1/storage/moves/999999'), 404, 'NOT_FOUND');
      expectError(await admin.get('/api/v1/storage/moves/x'), 404, 'NOT_FOUND');
      expectError(await admin.get('/api/v1/storage/moves/9999999999999999999'), 404, 'NOT_FOUND');
    });
  });

  it('a site killed (SIGKILL) mid-move resumes after its restart and loses nothing', async () => {
    const bucket = testBucket('moves-kill');
    let site: SiteProcess | undefined;
    try {
      site = await startSite({
        env: {
          ...s3ResourceEnv(s3, { name: 'archive', bucket, asDefault: false }),
          STORAGE_DEFAULT_RESOURCE: 'default',
        },
      });
      const admin = await site.admin();
      expectStatus(await admin.post('/api/v1/namespace/collections', { path: '/projects/big' }), 201);
      const files = Array.from({ length: 24 }, (_, i) => ({
        path: `/projects/big/f${String(i).padStart(2, '0')}.bin`,
        bytes: randomBytes(3 * MiB + i),
      }));
      for (const f of files) await upload(admin, f.path, f.bytes);

      const move = expectStatus(
        await admin.post<StorageMoveDto>('/api/v1/storage/moves', {
          path: '/projects/big',
          resource: 'archive',
        }),
        202,
      ).body;
      const part = await until(admin, move.id, (m) => m.objectsMoved >= 3 || m.status !== 'running', 60_000);
      expect(part.status).toBe('running');
      const fedSite = site.federation.sites[0]!;
      await fedSite.kill('SIGKILL');
      await fedSite.restart();
      const after = await site.admin();
      const done = await until(after, move.id, (m) => m.status !== 'running', 120_000);
      expect(done).toMatchObject({ status: 'done', objectsMoved: files.length });
      for (const f of files) {
        const read = await after.get('/api/v1/data', { query: { path: f.path } });
        expect(sha256(expectStatus(read, 200).bytes), f.path).toBe(sha256(f.bytes));
      }
      const rows = await copies((sql) => site!.query(sql));
      expect(rows.every((r) => r.resource === 'archive')).toBe(true);
      // Nothing left behind: no old file, nothing in the bucket that no copy names.
      const config = loadConfig({ ...fedSite.env });
      const archive = config.storage.resources.find((r) => r.name === 'archive');
      if (archive?.kind !== 's3') throw new Error('no archive');
      expect(
        await waitFor(
          async () => (await filesBelow(path.join(config.storageRoot, 'objects'))).length === 0,
          15_000,
        ),
      ).toBe(true);
      const keys = await s3Keys(archive);
      expect(keys.filter((k) => !rows.some((r) => r.key === k))).toEqual([]);
      expect(keys).toHaveLength(files.length);
    } finally {
      await site?.close();
    }
  }, 240_000);
});
