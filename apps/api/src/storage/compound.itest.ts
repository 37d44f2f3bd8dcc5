import type { EntryDetailDto, ObjectStagingDto } from '@tributary/shared';
import { prng, startS3Server, testBucket, waitFor, type S3Server, type TestClient } from '@tributary/testkit';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { filesBelow, s3Keys } from '../test/storage';
import { expectStatus, startTestSite, type TestSite } from '../test/test-site';
import type { ResourceSpec } from './resource-config';
import { StorageService } from './storage.service';

/**
 * Compound resources (docs/storage.md, "Compound resources"): a local cache in front of an s3 or a
 * local archive, on a real SeaweedFS and a real site. The randomized run interleaves writes, new
 * versions, archive and eviction passes and reads; COMPOUND_RANDOM_STEPS makes it longer and
 * COMPOUND_RANDOM_SEED replays one (the seed is printed).
 */

const KiB = 1024;
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

async function put(client: TestClient, objectPath: string, bytes: Buffer, overwrite = false) {
  const res = await client.request('PUT', '/api/v1/data', {
    query: { path: objectPath, ...(overwrite ? { overwrite: 'true' } : {}) },
    body: bytes,
  });
  expect([200, 201], `PUT ${objectPath}: ${res.status} ${res.text}`).toContain(res.status);
}

async function stat(client: TestClient, objectPath: string): Promise<EntryDetailDto> {
  return expectStatus(
    await client.get<EntryDetailDto>('/api/v1/namespace/stat', { query: { path: objectPath } }),
    200,
  ).body;
}

/** The tier of the object's copy at the site (on its compound resource). */
async function tierOf(client: TestClient, objectPath: string) {
  const entry = await stat(client, objectPath);
  const tier = entry.replicas[0]?.tier;
  expect(tier, `${objectPath}: ${JSON.stringify(entry.replicas)}`).toBeDefined();
  return { entry, tier: tier! };
}

/** A small deterministic generator (mulberry32). */

for (const archiveKind of ['s3', 'local'] as const) {
  describe(`a compound resource with a${archiveKind === 's3' ? 'n s3' : ' local'} archive`, () => {
    let s3: S3Server | undefined;
    let site: TestSite;
    let admin: TestClient;
    let dirs: string;
    const CACHE_MAX = 600 * KiB;

    const keysIn = async (name: 'cache' | 'archive'): Promise<string[]> => {
      const spec = site.config.storage.resources.find((r) => r.name === name)!;
      if (spec.kind === 's3') return s3Keys(spec);
      const root = (spec as Extract<ResourceSpec, { kind: 'local' }>).root;
      return (await filesBelow(path.join(root, 'objects'))).map((f) => path.basename(f)).sort();
    };
    const compound = () => site.siteApp.app.get(StorageService).compound('tiered')!;

    beforeAll(async () => {
      dirs = await mkdtemp(path.join(os.tmpdir(), 'tributary-compound-'));
      const archive =
        archiveKind === 's3'
          ? await (async () => {
              s3 = await startS3Server();
              return {
                name: 'archive',
                kind: 's3',
                endpoint: s3.endpoint,
                bucket: testBucket('compound'),
                region: s3.region,
                createBucket: true,
              };
            })()
          : { name: 'archive', kind: 'local', root: path.join(dirs, 'archive') };
      site = await startTestSite({
        STORAGE_RESOURCES: JSON.stringify([
          { name: 'cache', kind: 'local', root: path.join(dirs, 'cache') },
          archive,
          { name: 'tiered', kind: 'compound', cache: 'cache', archive: 'archive', cacheMaxBytes: CACHE_MAX },
        ]),
        STORAGE_DEFAULT_RESOURCE: 'tiered',
        STORAGE_COMPOUND_PASS_MS: '100',
        ...(s3
          ? {
              STORAGE_ARCHIVE_ACCESS_KEY_ID: s3.accessKeyId,
              STORAGE_ARCHIVE_SECRET_ACCESS_KEY: s3.secretAccessKey,
            }
          : {}),
      });
      admin = await site.admin();
    }, 60_000);

    afterAll(async () => {
      await site?.close();
      await s3?.close();
      await rm(dirs, { recursive: true, force: true });
    });

    it('writes to the cache, archives verified, evicts within the limit, and stages reads back equal', async () => {
      expectStatus(await admin.post('/api/v1/namespace/collections', { path: '/projects/tier' }), 201);
      const files = new Map<string, Buffer>();
      for (let i = 0; i < 5; i++) files.set(`/projects/tier/f${i}.bin`, randomBytes(200 * KiB + i));
      for (const [p, b] of files) await put(admin, p, b);

      // Written: in the cache at once (archived in the background, passes every 100 ms).
      let archived = false;
      const settled = await waitFor(async () => {
        const tiers = await Promise.all([...files.keys()].map((p) => tierOf(admin, p)));
        archived = tiers.every((t) => t.tier.archive === 'archived');
        const cachedBytes = tiers.filter((t) => t.tier.cache).reduce((n, t) => n + t.entry.size, 0);
        return archived && cachedBytes <= CACHE_MAX;
      }, 30_000);
      expect(settled, `archived: ${archived}`).toBe(true);
      const tiers = new Map(
        await Promise.all([...files.keys()].map(async (p) => [p, (await tierOf(admin, p)).tier] as const)),
      );
      const evicted = [...tiers].filter(([, t]) => !t.cache).map(([p]) => p);
      expect(evicted.length).toBeGreaterThanOrEqual(2);

      // Every key is in the archive; the evicted ones are no longer in the cache.
      const keys = new Map<string, string>();
      for (const p of files.keys()) keys.set(p, (await stat(admin, p)).replicas[0]!.resource);
      expect([...keys.values()].every((r) => r === 'tiered')).toBe(true);
      const replicaKeys = await site.query<{ physical_path: string }>('SELECT physical_path FROM replicas');
      const allKeys = replicaKeys.rows.map((r) => r.physical_path).sort();
      expect(await keysIn('archive')).toEqual(allKeys);
      const cacheKeys = await keysIn('cache');
      expect(cacheKeys.length).toBe(files.size - evicted.length);

      // A read of an evicted object: 202 with Retry-After, then the bytes once staged.
      const first = evicted[0]!;
      const staging = await admin.get<ObjectStagingDto>('/api/v1/data', { query: { path: first } });
      expectStatus(staging, 202);
      expect(staging.headers.get('retry-after')).toBe('2');
      expect(staging.body).toMatchObject({
        path: first,
        status: 'staging',
        bytesTotal: files.get(first)!.length,
      });
      let bytes: Buffer | undefined;
      expect(
        await waitFor(async () => {
          const res = await admin.get('/api/v1/data', { query: { path: first } });
          if (res.status === 200) bytes = res.bytes;
          return res.status === 200;
        }, 30_000),
      ).toBe(true);
      expect(sha256(bytes!)).toBe(sha256(files.get(first)!));
      expect((await tierOf(admin, first)).tier.cache).toBe(true);

      // Prefer: wait=N streams once staged.
      const second = evicted[1]!;
      const waited = await admin.request('GET', '/api/v1/data', {
        query: { path: second },
        headers: { Prefer: 'wait=30' },
      });
      expect(sha256(expectStatus(waited, 200).bytes)).toBe(sha256(files.get(second)!));

      // Every object reads back equal (staged where needed; `wait` in the query as links send it).
      for (const [p, b] of files) {
        const res = await admin.get('/api/v1/data', { query: { path: p, wait: '30' } });
        expect(sha256(expectStatus(res, 200).bytes), p).toBe(sha256(b));
      }
      expectStatus(await admin.get('/api/v1/data', { query: { path: first, wait: '601' } }), 422);
    }, 120_000);

    it('moves a collection out of the compound and back, staging what is archived only', async () => {
      const move = async (resource: string) => {
        const started = expectStatus(
          await admin.post<{ id: string }>('/api/v1/storage/moves', { path: '/projects/tier', resource }),
          202,
        ).body;
        let status = '';
        const done = await waitFor(async () => {
          const m = await admin.get<{ status: string; error: string | null }>(
            `/api/v1/storage/moves/${started.id}`,
          );
          status = `${m.body.status} ${m.body.error ?? ''}`;
          return m.body.status !== 'running';
        }, 60_000);
        expect(done && status.startsWith('done'), status).toBe(true);
      };
      const before = await site.query<{ physical_path: string }>(
        `SELECT r.physical_path FROM replicas r JOIN data_objects o ON o.id = r.object_id
           JOIN collections c ON c.id = o.collection_id WHERE c.path = '/projects/tier'`,
      );
      const keys = before.rows.map((r) => r.physical_path);
      const expected = new Map<string, string>();
      for (let i = 0; i < 5; i++) {
        const p = `/projects/tier/f${i}.bin`;
        expected.set(p, (await stat(admin, p)).checksum!);
      }
      // Out: every copy on the default resource, read back equal; the compound forgets the keys.
      await move('default');
      const gone = await waitFor(async () => {
        const rows = await site.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM compound_objects WHERE key = ANY($1::text[])`,
          [keys],
        );
        return rows.rows[0]!.n === '0';
      }, 30_000);
      expect(gone).toBe(true);
      for (const [p, checksum] of expected) {
        const res = await admin.get('/api/v1/data', { query: { path: p } });
        expect(`sha256:${sha256(expectStatus(res, 200).bytes)}`, p).toBe(checksum);
        expect((await stat(admin, p)).replicas[0]!.resource).toBe('default');
      }
      // Back in: written to the cache, archived again.
      await move('tiered');
      expect(
        await waitFor(async () => {
          const tiers = await Promise.all([...expected.keys()].map((p) => tierOf(admin, p)));
          return tiers.every((t) => t.tier.archive === 'archived');
        }, 30_000),
      ).toBe(true);
      for (const [p, checksum] of expected) {
        const res = await admin.get('/api/v1/data', { query: { path: p, wait: '30' } });
        expect(`sha256:${sha256(expectStatus(res, 200).bytes)}`, p).toBe(checksum);
      }
    }, 120_000);

    it('keeps every version through interleaved writes, updates, archiving, eviction and reads (randomized)', async () => {
      const seed = Number(process.env.COMPOUND_RANDOM_SEED ?? Math.floor(Math.random() * 2 ** 31));
      const steps = Number(process.env.COMPOUND_RANDOM_STEPS ?? 40);
      console.log(
        `compound randomized run (${archiveKind} archive): COMPOUND_RANDOM_SEED=${seed}, ${steps} steps`,
      );
      const random = prng(seed);
      const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
      expectStatus(await admin.post('/api/v1/namespace/collections', { path: '/projects/rand' }), 201);
      /** What each object must read as: the bytes last written. */
      const latest = new Map<string, Buffer>();
      const driver = compound();
      const background: Array<Promise<unknown>> = [];
      const failures: string[] = [];

      const read = async (p: string): Promise<void> => {
        const res = await admin.request('GET', '/api/v1/data', {
          query: { path: p },
          headers: { Prefer: 'wait=60' },
        });
        const catalog = await stat(admin, p);
        if (res.status !== 200) {
          failures.push(`read ${p}: ${res.status} ${res.text}`);
          return;
        }
        // Every read returns the catalog's SHA-256, which is that of the last version written.
        const got = sha256(res.bytes);
        if (`sha256:${got}` !== catalog.checksum)
          failures.push(`read ${p}: bytes ${got}, catalog ${catalog.checksum}`);
        if (got !== sha256(latest.get(p)!))
          failures.push(`read ${p}: bytes ${got} are not the last version's`);
      };

      for (let step = 0; step < steps; step++) {
        const roll = random();
        const names = [...latest.keys()];
        if (names.length === 0 || roll < 0.25) {
          const p = `/projects/rand/o${step}.bin`;
          const bytes = randomBytes(20 * KiB + Math.floor(random() * 120 * KiB));
          await put(admin, p, bytes);
          latest.set(p, bytes);
        } else if (roll < 0.45) {
          const p = pick(names);
          const bytes = randomBytes(Math.floor(random() * 150 * KiB));
          await put(admin, p, bytes, true);
          latest.set(p, bytes);
        } else if (roll < 0.6) {
          background.push(driver.archivePass());
        } else if (roll < 0.75) {
          background.push(driver.evictPass());
        } else {
          // Reads, some at the same time as a pass.
          const p = pick(names);
          if (random() < 0.5) background.push(driver.evictPass());
          await read(p);
        }
        if (background.length > 8) await Promise.all(background.splice(0));
      }
      await Promise.all(background);
      expect(failures).toEqual([]);
      console.log(`compound randomized run (${archiveKind} archive): ${JSON.stringify(driver.counts)}`);
      expect(driver.counts.evicted).toBeGreaterThan(0);

      // Settled: everything archived, the cache within its limit, and every object's last version
      // reads back equal from wherever it now is.
      expect(
        await waitFor(async () => {
          await driver.kick();
          const rows = await site.query<{ n: string }>(
            `SELECT count(*)::text AS n FROM compound_objects WHERE archive = 'pending'`,
          );
          return rows.rows[0]!.n === '0';
        }, 30_000),
      ).toBe(true);
      for (const [p, bytes] of latest) {
        const res = await admin.request('GET', '/api/v1/data', {
          query: { path: p },
          headers: { Prefer: 'wait=60' },
        });
        expect(sha256(expectStatus(res, 200).bytes), p).toBe(sha256(bytes));
        expect((await stat(admin, p)).checksum, p).toBe(`sha256:${sha256(bytes)}`);
      }
      // No copy row names bytes that are in neither tier.
      const lost = await site.query<{ physical_path: string }>(
        `SELECT r.physical_path FROM replicas r
           LEFT JOIN compound_objects c ON c.key = r.physical_path AND c.resource = 'tiered'
          WHERE c.key IS NULL`,
      );
      expect(lost.rows).toEqual([]);
      const archiveKeys = new Set(await keysIn('archive'));
      const cacheKeys = new Set(await keysIn('cache'));
      const states = await site.query<{ key: string; in_cache: boolean; archive: string }>(
        `SELECT key, in_cache, archive FROM compound_objects WHERE resource = 'tiered'`,
      );
      for (const s of states.rows) {
        if (s.in_cache) expect(cacheKeys.has(s.key), `${s.key} in the cache`).toBe(true);
        if (s.archive === 'archived') expect(archiveKeys.has(s.key), `${s.key} in the archive`).toBe(true);
      }
    }, 300_000);
  });
}
