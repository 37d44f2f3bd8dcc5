import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { ErrorCode, type EntryDto, type VerifyReportDto } from '@tributary/shared';
import { testBytes, uniqueName } from '@tributary/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesBelow } from '../test/storage';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';
import { SCRUB_CONCURRENCY } from './scrub.constants';
import { ScrubRepository } from './scrub.repository';
import { ScrubService } from './scrub.service';

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');
const MiB = 1024 * 1024;
const anyString: unknown = expect.any(String);

interface CopyRow {
  id: string;
  physical_path: string;
  status: string;
  error: string | null;
  verified_at: Date | null;
  checksum: string;
}

describe('scrub', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;
  let dir: string;
  let scrub: ScrubService;

  beforeAll(async () => {
    // The scrub alone: no mover (it would take the suspect copies at once) and no background loop
    // (PLACEMENT_ENABLED=false); the tests call pass(), paced at 1 MiB/s, and the verify route.
    site = await startTestSite({
      PLACEMENT_ENABLED: 'false',
      LOGIN_RATE_LIMIT: '1000',
      SCRUB_RATE_MIBS: '1',
      SCRUB_INTERVAL_MS: '86400000',
      MAX_UPLOAD_BYTES: String(64 * MiB),
    });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    dir = `/home/${alice.username}/${uniqueName('scrub')}`;
    expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: dir }), 201);
    scrub = site.siteApp.app.get(ScrubService);
  });
  afterAll(async () => {
    await site?.close();
  });

  async function put(
    client: TestClient,
    objectPath: string,
    body: Buffer,
    overwrite = false,
  ): Promise<EntryDto> {
    const res = await client.request<EntryDto>('PUT', '/api/v1/data', {
      query: { path: objectPath, ...(overwrite ? { overwrite: 'true' } : {}) },
      headers: { 'content-type': 'application/octet-stream' },
      body,
    });
    expect(res.status, res.text).toBe(overwrite ? 200 : 201);
    return res.body;
  }

  async function copyOf(objectPath: string): Promise<CopyRow> {
    const { parent, name } = {
      parent: path.posix.dirname(objectPath),
      name: path.posix.basename(objectPath),
    };
    const rows = await site.query<CopyRow>(
      `SELECT r.id::text, r.physical_path, r.status::text, r.error, r.verified_at, r.checksum
         FROM replicas r JOIN data_objects o ON o.id = r.object_id JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 AND o.name = $2`,
      [parent, name],
    );
    expect(rows.rows).toHaveLength(1);
    return rows.rows[0]!;
  }

  /** The file of a copy on disk (the test finds it; the scrub reads only through the storage). */
  async function fileOf(objectPath: string): Promise<string> {
    const key = (await copyOf(objectPath)).physical_path;
    const root = path.join(site.config.storageRoot, 'objects');
    const found = (await filesBelow(root)).find((f) => path.basename(f) === key);
    expect(found, `file of ${objectPath}`).toBeDefined();
    return path.join(root, found!);
  }

  const verify = (client: TestClient, objectPath: string) =>
    client.request<VerifyReportDto>('POST', '/api/v1/placement/verify', { query: { path: objectPath } });

  async function metric(name: string): Promise<number> {
    const res = await (await site.admin()).get('/metrics');
    const line = res.text.split('\n').find((l) => l.startsWith(name));
    return line ? Number(line.split(' ').pop()) : 0;
  }

  it('finds a corrupted and a deleted file: both suspect with the error, no longer served; a good file is verified', async () => {
    const good = testBytes(300_000, 1);
    const corrupt = testBytes(200_000, 2);
    const gone = testBytes(100_000, 3);
    await put(alice.client, `${dir}/good.bin`, good);
    await put(alice.client, `${dir}/corrupt.bin`, corrupt);
    await put(alice.client, `${dir}/gone.bin`, gone);
    const damaged = Buffer.from(corrupt);
    damaged[1234] = damaged[1234]! ^ 0xff;
    await fs.writeFile(await fileOf(`${dir}/corrupt.bin`), damaged);
    await fs.rm(await fileOf(`${dir}/gone.bin`));
    const mismatchesBefore = await metric('tributary_scrub_mismatches_total{kind="mismatch"}');
    const missingBefore = await metric('tributary_scrub_mismatches_total{kind="missing"}');
    const bytesBefore = await metric('tributary_scrub_bytes_total');

    const stats = await scrub.pass();
    expect(stats.mismatch).toBeGreaterThanOrEqual(1);
    expect(stats.missing).toBeGreaterThanOrEqual(1);

    const c = await copyOf(`${dir}/corrupt.bin`);
    expect(c.status).toBe('suspect');
    expect(c.error).toBe(`SHA-256 differs: found ${sha256(damaged)} expected ${sha256(corrupt)}`);
    const g = await copyOf(`${dir}/gone.bin`);
    expect(g.status).toBe('suspect');
    expect(g.error).toBe('file missing');
    const ok = await copyOf(`${dir}/good.bin`);
    expect(ok.status).toBe('good');
    expect(ok.error).toBeNull();
    expect(ok.verified_at).toBeInstanceOf(Date);
    expect(Date.now() - ok.verified_at!.getTime()).toBeLessThan(60_000);

    // No other site holds a good copy: neither is served any more.
    for (const name of ['corrupt.bin', 'gone.bin'])
      expectError(
        await alice.client.get('/api/v1/data', { query: { path: `${dir}/${name}` } }),
        503,
        ErrorCode.ReplicaUnavailable,
      );
    const served = await alice.client.get('/api/v1/data', { query: { path: `${dir}/good.bin` } });
    expect(served.status).toBe(200);
    expect(sha256(served.bytes)).toBe(sha256(good));

    expect(await metric('tributary_scrub_mismatches_total{kind="mismatch"}')).toBe(mismatchesBefore + 1);
    expect(await metric('tributary_scrub_mismatches_total{kind="missing"}')).toBe(missingBefore + 1);
    expect(await metric('tributary_scrub_bytes_total')).toBeGreaterThanOrEqual(
      bytesBefore + 300_000 + 200_000,
    );

    // The verify route reports them, and finds them the same.
    const vc = expectStatus(await verify(alice.client, `${dir}/corrupt.bin`), 200).body;
    expect(vc).toMatchObject({ path: `${dir}/corrupt.bin`, local: 'mismatch' });
    expect(vc.copies).toEqual([
      expect.objectContaining({
        site: 'lsu',
        state: 'suspect',
        current: false,
        error: `SHA-256 differs: found ${sha256(damaged)} expected ${sha256(corrupt)}`,
      }),
    ]);
    const vg = expectStatus(await verify(alice.client, `${dir}/gone.bin`), 200).body;
    expect(vg.local).toBe('missing');
    expect(vg.copies).toEqual([expect.objectContaining({ state: 'suspect', error: 'file missing' })]);

    // The bytes put back by hand: verify finds them good, and the object is served again.
    await fs.writeFile(await fileOf(`${dir}/corrupt.bin`), corrupt);
    const repaired = expectStatus(await verify(alice.client, `${dir}/corrupt.bin`), 200).body;
    expect(repaired.local).toBe('ok');
    expect(repaired.copies).toEqual([
      expect.objectContaining({ state: 'good', current: true, error: null, verifiedAt: anyString }),
    ]);
    const back = await alice.client.get('/api/v1/data', { query: { path: `${dir}/corrupt.bin` } });
    expect(back.status).toBe(200);
    expect(sha256(back.bytes)).toBe(sha256(corrupt));
  });

  it('verify: a good copy gets verifiedAt; 404 for what the caller cannot read or what is not there; 422 for a collection', async () => {
    const bytes = testBytes(50_000, 9);
    await put(alice.client, `${dir}/v.bin`, bytes);
    expect((await copyOf(`${dir}/v.bin`)).verified_at).toBeNull();
    const report = expectStatus(await verify(alice.client, `${dir}/v.bin`), 200).body;
    expect(report).toEqual({
      path: `${dir}/v.bin`,
      local: 'ok',
      copies: [
        {
          site: 'lsu',
          state: 'good',
          current: true,
          size: 50_000,
          checksum: sha256(bytes),
          verifiedAt: anyString,
          error: null,
          wanted: false,
          cached: false,
          pinned: false,
          updatedAt: anyString,
        },
      ],
    });
    expect((await copyOf(`${dir}/v.bin`)).verified_at).toBeInstanceOf(Date);

    expectError(await verify(bob.client, `${dir}/v.bin`), 404, ErrorCode.NotFound);
    expectError(await verify(alice.client, `${dir}/nothing.bin`), 404, ErrorCode.NotFound);
    expectError(await verify(bob.client, `${dir}/nothing.bin`), 404, ErrorCode.NotFound);
    const collection = expectError(await verify(alice.client, dir), 422, ErrorCode.ValidationFailed);
    expect(collection.details).toHaveProperty('path');
    expectError(await verify(alice.client, `${dir}/`), 422, ErrorCode.ValidationFailed);
    expectError(await verify(alice.client, 'relative'), 422, ErrorCode.ValidationFailed);
    expectError(
      await site.anonymous().request('POST', '/api/v1/placement/verify', { query: { path: `${dir}/v.bin` } }),
      401,
      ErrorCode.Unauthenticated,
    );
    // A read token may verify (it reads the bytes; the finding is the site's).
    const token = expectStatus(
      await alice.client.post<{ secret: string }>('/api/v1/tokens', { name: 'verify', scope: 'read' }),
      201,
    ).body.secret;
    expect(expectStatus(await verify(site.asToken(token), `${dir}/v.bin`), 200).body.local).toBe('ok');
  });

  it('takes never-verified copies first, then the oldest verified', async () => {
    const names = ['o1', 'o2', 'o3', 'o4'];
    for (const [i, n] of names.entries()) await put(alice.client, `${dir}/${n}`, testBytes(1000, 20 + i));
    const ids = await Promise.all(names.map(async (n) => (await copyOf(`${dir}/${n}`)).id));
    // o1 verified long ago, o2 never, o3 verified recently, o4 never.
    await site.query(`UPDATE replicas SET verified_at = now() - interval '10 days' WHERE id = $1`, [ids[0]]);
    await site.query(`UPDATE replicas SET verified_at = now() - interval '1 day' WHERE id = $1`, [ids[2]]);
    const repo = site.siteApp.app.get(ScrubRepository);
    const order: string[] = [];
    let after: Awaited<ReturnType<ScrubRepository['nextGood']>>[number] | null = null;
    const startedAt = new Date();
    for (;;) {
      const batch = await repo.nextGood('lsu', after, 2, startedAt);
      if (batch.length === 0) break;
      order.push(...batch.map((c) => c.id).filter((id) => ids.includes(id)));
      after = batch.at(-1)!;
    }
    expect(order).toEqual([ids[1], ids[3], ids[0], ids[2]]);
  });

  it('an update racing the scrub is not damage: no false suspect', async () => {
    // First in scrub order (never verified, lower ids): large objects that keep the scrub's workers
    // waiting out the 1 MiB/s budget, so the pass reaches the small one about 2 s after it starts.
    const bigs = Array.from({ length: SCRUB_CONCURRENCY + 2 }, (_, i) => `${dir}/race-big-${i}.bin`);
    const small = `${dir}/race-small.bin`;
    await site.query(`UPDATE replicas SET verified_at = now() WHERE site_id = 'lsu'`);
    for (const [i, big] of bigs.entries()) await put(alice.client, big, testBytes(MiB, 40 + i));
    await put(alice.client, small, testBytes(10_000, 41));
    const before = await copyOf(small);
    const missingBefore = await metric('tributary_scrub_mismatches_total{kind="missing"}');
    const pass = scrub.pass();
    // While the pass hashes the big ones, the small one gets new bytes: its old file goes.
    await new Promise((r) => setTimeout(r, 300));
    const updated = testBytes(12_000, 42);
    await put(alice.client, small, updated, true);
    const stats = await pass;
    const after = await copyOf(small);
    expect(after.physical_path).not.toBe(before.physical_path);
    expect(after.status).toBe('good');
    expect(after.error).toBeNull();
    expect(after.checksum).toBe(sha256(updated));
    expect(stats.changed).toBeGreaterThanOrEqual(1);
    expect(stats.missing + stats.mismatch).toBe(0);
    expect(await metric('tributary_scrub_mismatches_total{kind="missing"}')).toBe(missingBefore);
    for (const big of bigs) expect((await copyOf(big)).status).toBe('good');
  });

  it('many updates while unpaced checks run: never a suspect copy', async () => {
    const names = Array.from({ length: 12 }, (_, i) => `${dir}/churn-${i}.bin`);
    for (const [i, n] of names.entries()) await put(alice.client, n, testBytes(64 * 1024, 100 + i));
    const repo = site.siteApp.app.get(ScrubRepository);
    let stop = false;
    const writer = (async () => {
      for (let round = 0; !stop; round++)
        for (const [i, n] of names.entries())
          await put(alice.client, n, testBytes(64 * 1024 + round, 200 + i + round), true);
    })();
    const checker = (async () => {
      const end = Date.now() + 3000;
      let checks = 0;
      while (Date.now() < end) {
        for (const n of names) {
          const { parent, name } = { parent: path.posix.dirname(n), name: path.posix.basename(n) };
          const id = (
            await site.query<{ id: string }>(
              `SELECT o.id::text FROM data_objects o JOIN collections c ON c.id = o.collection_id WHERE c.path = $1 AND o.name = $2`,
              [parent, name],
            )
          ).rows[0]!.id;
          const copy = await repo.localCopy('lsu', BigInt(id));
          if (copy) {
            await scrub.checkNow(copy);
            checks++;
          }
        }
      }
      return checks;
    })();
    const checks = await checker;
    stop = true;
    await writer;
    expect(checks).toBeGreaterThan(12);
    const states = await Promise.all(names.map(async (n) => (await copyOf(n)).status));
    expect(states).toEqual(names.map(() => 'good'));
  });
});
