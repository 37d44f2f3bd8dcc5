import {
  ErrorCode,
  type CacheChangeDto,
  type CacheListDto,
  type CacheStatusDto,
  type ObjectCopiesDto,
  type PlacementRuleDto,
  type StageStatusDto,
  type SubscriptionDto,
  type SubscriptionListDto,
} from '@tributary/shared';
import {
  parseRequestCounts,
  prng,
  testBytes,
  uniqueName,
  type Federation,
  type FederationSite,
} from '@tributary/testkit';
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { storageFile } from '../test/copies';
import { until, useFederation } from '../test/federation';
import { expectError, expectStatus } from '../test/test-site';

/**
 * Caching sites and subscriptions (docs/caching.md) on three real site processes, lsu, tulane and
 * uno, with a 1 s replication cycle, a 200 ms mover and a cache of 3 MiB at each: objects are
 * mostly written at lsu (which holds them) and read at tulane; the randomized eviction run uses all
 * three (CACHE_SEED repeats a run).
 */

const IDS = ['lsu', 'tulane', 'uno'];
const MiB = 1024 * 1024;
const LIMIT = 3 * MiB;
const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

interface CopyRow {
  status: string;
  cached: boolean;
  pinned: boolean;
  checksum: string;
  physical_path: string;
}

describe('caching sites and subscriptions', () => {
  let fed: Federation;
  let lsu: FederationSite;
  let tulane: FederationSite;
  let uno: FederationSite;

  useFederation(
    {
      ids: IDS,
      cycleSeconds: 1,
      env: { PLACEMENT_INTERVAL_MS: '200', CACHE_MAX_BYTES: String(LIMIT), PEER_DOWN_MS: '2000' },
    },
    (started) => {
      fed = started;
      [lsu, tulane, uno] = IDS.map((id) => fed.site(id)) as [FederationSite, FederationSite, FederationSite];
    },
  );

  async function publish(dir: string, name: string, bytes: Buffer): Promise<{ path: string; id: string }> {
    const entry = await lsu.client.upload(`${dir}/${name}`, bytes, { overwrite: true });
    return { path: `${dir}/${name}`, id: entry.id };
  }

  async function read(
    site: FederationSite,
    p: string,
    range?: { start: number; end: number },
  ): Promise<Buffer> {
    const res = await site.client.download(p, range);
    expect(res.status, `read of ${p} at ${site.id}`).toBe(range ? 206 : 200);
    return Buffer.from(await res.arrayBuffer());
  }

  async function rowAt(site: FederationSite, objectId: string): Promise<CopyRow | undefined> {
    const res = await site.query<CopyRow>(
      `SELECT status::text AS status, cached, pinned, checksum, physical_path FROM replicas
        WHERE object_id = $1 AND site_id = $2`,
      [objectId, site.id],
    );
    return res.rows[0];
  }

  async function goodCachedAt(site: FederationSite, objectId: string, bytes: Buffer): Promise<boolean> {
    const row = await rowAt(site, objectId);
    return row?.status === 'good' && row.cached && row.checksum === sha256(bytes);
  }

  /** Bytes of tulane's cached copies that hold or will hold bytes (what the limit counts). */
  async function cachedBytes(site: FederationSite): Promise<number> {
    const res = await site.query<{ n: string }>(
      `SELECT COALESCE(sum(size), 0)::text AS n FROM replicas
        WHERE site_id = $1 AND cached AND status IN ('good', 'pending', 'copying')`,
      [site.id],
    );
    return Number(res.rows[0]!.n);
  }

  /** Requests for object bytes that `site` answered for its peers, so far. */
  async function peerReadsServed(site: FederationSite): Promise<number> {
    const { text } = await site.http.get<string>('/metrics');
    let n = 0;
    for (const [key, v] of parseRequestCounts(text))
      if (key.startsWith('GET /api/v1/replication/peer/objects/:id ')) n += v.count;
    return n;
  }

  async function metric(site: FederationSite, name: string): Promise<number> {
    const { text } = await site.http.get<string>('/metrics');
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line ? Number(line.split(' ')[1]) : 0;
  }

  async function converged(): Promise<void> {
    await fed.waitForConvergence(60_000);
  }

  it('a first read faults the bytes in as one transfer; the second is served here without asking the holder', async () => {
    const dir = `/projects/${uniqueName('cache')}`;
    await lsu.client.createCollection(dir);
    const bytes = testBytes(1_500_000, 11);
    const { path: p, id } = await publish(dir, 'a.bin', bytes);
    await converged();

    const before = await peerReadsServed(lsu);
    expect((await read(tulane, p)).equals(bytes)).toBe(true);
    // One transfer: the reader's answer was the only request to lsu.
    expect(await peerReadsServed(lsu)).toBe(before + 1);
    expect(await until(() => goodCachedAt(tulane, id, bytes), 10_000), 'a good cached copy at tulane').toBe(
      true,
    );
    const row = (await rowAt(tulane, id))!;
    expect(sha256(await readFile(storageFile(fed, 'tulane', row.physical_path)))).toBe(sha256(bytes));

    const hits = await metric(tulane, 'tributary_cache_hits_total');
    for (let i = 0; i < 3; i++) expect((await read(tulane, p)).equals(bytes)).toBe(true);
    expect(await read(tulane, p, { start: 100, end: 199 })).toEqual(bytes.subarray(100, 200));
    expect(await peerReadsServed(lsu), 'later reads do not touch the holding site').toBe(before + 1);
    expect(await metric(tulane, 'tributary_cache_hits_total')).toBe(hits + 4);

    // Every site's copy listing says which copy is cached.
    await converged();
    const copies = expectStatus(
      await lsu.http.get<ObjectCopiesDto>('/api/v1/placement/copies', { query: { path: p } }),
      200,
    ).body;
    expect(copies.copies.map((c) => [c.site, c.state, c.cached])).toEqual([
      ['lsu', 'good', false],
      ['tulane', 'good', true],
    ]);
  }, 120_000);

  it('a range read is served at once and fills the cache in the background', async () => {
    const dir = `/projects/${uniqueName('range')}`;
    await lsu.client.createCollection(dir);
    const bytes = testBytes(600_000, 12);
    const { path: p, id } = await publish(dir, 'r.bin', bytes);
    await converged();
    expect(await read(tulane, p, { start: 1000, end: 1999 })).toEqual(bytes.subarray(1000, 2000));
    expect(await until(() => goodCachedAt(tulane, id, bytes), 20_000)).toBe(true);
  }, 60_000);

  it('holds the limit under three times its size of reads, and never evicts a wanted copy or the last good one', async () => {
    // Objects a rule wants at both sites: tulane's copies are not cached ones.
    const wantedDir = `/projects/${uniqueName('wanted')}`;
    await lsu.client.createCollection(wantedDir);
    const wanted: Array<{ path: string; id: string; bytes: Buffer }> = [];
    for (let i = 0; i < 3; i++) {
      const bytes = testBytes(900_000, 100 + i);
      wanted.push({ ...(await publish(wantedDir, `w${i}.bin`, bytes)), bytes });
    }
    expectStatus(
      await lsu.http.post<PlacementRuleDto>('/api/v1/placement/rules', {
        path: wantedDir,
        copies: 2,
        sites: ['lsu', 'tulane'],
      }),
      201,
    );
    await converged();
    for (const w of wanted) {
      expect(
        await until(async () => (await rowAt(tulane, w.id))?.status === 'good', 30_000),
        `the wanted copy of ${w.path} at tulane`,
      ).toBe(true);
    }

    const dir = `/projects/${uniqueName('lru')}`;
    await lsu.client.createCollection(dir);
    const objects: Array<{ path: string; id: string; bytes: Buffer }> = [];
    for (let i = 0; i < 12; i++) {
      const bytes = testBytes(768 * 1024, 200 + i);
      objects.push({ ...(await publish(dir, `o${i}.bin`, bytes)), bytes });
    }
    await converged();
    const evictionsBefore = await metric(tulane, 'tributary_cache_evictions_total');
    // 9 MiB of reads through a 3 MiB cache, each object twice (the second read may hit or miss).
    for (const round of [0, 1]) {
      for (const o of objects) {
        expect((await read(tulane, o.path)).equals(o.bytes), `${o.path}, round ${round}`).toBe(true);
        for (const w of wanted) expect((await read(tulane, w.path)).equals(w.bytes)).toBe(true);
        expect(await cachedBytes(tulane)).toBeLessThanOrEqual(LIMIT);
      }
    }
    // Once the last fault-ins are recorded the limit still holds.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await cachedBytes(tulane)).toBeLessThanOrEqual(LIMIT);
    expect(await metric(tulane, 'tributary_cache_evictions_total')).toBeGreaterThanOrEqual(
      evictionsBefore + 6,
    );
    for (const w of wanted) {
      const row = (await rowAt(tulane, w.id))!;
      expect([row.status, row.cached], `the wanted copy of ${w.path} stays`).toEqual(['good', false]);
    }
    await converged();
    for (const o of objects) expect((await rowAt(lsu, o.id))?.status, `lsu keeps ${o.path}`).toBe('good');
    // Every object is still read right at both sites.
    for (const o of objects) expect((await read(lsu, o.path)).equals(o.bytes)).toBe(true);
  }, 240_000);

  it('an update at the holding site makes the cached copy stale, and the next read returns the new bytes', async () => {
    const dir = `/projects/${uniqueName('stale')}`;
    await lsu.client.createCollection(dir);
    const old = testBytes(400_000, 21);
    const { path: p, id } = await publish(dir, 's.bin', old);
    await converged();
    expect((await read(tulane, p)).equals(old)).toBe(true);
    expect(await until(() => goodCachedAt(tulane, id, old), 10_000)).toBe(true);

    const fresh = testBytes(410_000, 22);
    await publish(dir, 's.bin', fresh);
    await converged();
    const row = await rowAt(tulane, id);
    expect(row?.status === 'good' && row.checksum === sha256(fresh), 'not yet read: not refreshed').toBe(
      false,
    );
    expect(row === undefined || row.status === 'stale', `tulane's cached copy is ${row?.status}`).toBe(true);
    expect((await read(tulane, p)).equals(fresh)).toBe(true);
    expect(await until(() => goodCachedAt(tulane, id, fresh), 10_000)).toBe(true);
    expect((await read(tulane, p)).equals(fresh)).toBe(true);
  }, 120_000);

  it('stages a collection with progress, pins, unpins and evicts on request', async () => {
    const dir = `/projects/${uniqueName('stage')}`;
    await lsu.client.createCollection(dir);
    await lsu.client.createCollection(`${dir}/sub`);
    const objects: Array<{ path: string; id: string; bytes: Buffer }> = [];
    for (let i = 0; i < 5; i++) {
      const bytes = testBytes(100_000, 300 + i);
      objects.push({ ...(await publish(i < 3 ? dir : `${dir}/sub`, `f${i}.bin`, bytes)), bytes });
    }
    await converged();
    const started = expectStatus(
      await tulane.http.post<StageStatusDto>('/api/v1/cache/stage', { path: dir }),
      202,
    ).body;
    expect(started).toMatchObject({ path: dir, site: 'tulane', objects: 5, bytes: 500_000 });
    expect(
      await until(async () => {
        const s = await tulane.http.get<StageStatusDto>('/api/v1/cache/stage', { query: { path: dir } });
        return s.body.done && s.body.readyObjects === 5;
      }, 30_000),
    ).toBe(true);
    for (const o of objects) expect(await goodCachedAt(tulane, o.id, o.bytes)).toBe(true);

    const listed = expectStatus(
      await tulane.http.get<CacheListDto>('/api/v1/cache/entries', { query: { path: dir } }),
      200,
    ).body;
    expect(listed.total).toBe(5);
    expect(listed.bytes).toBe(500_000);

    // Pinned: kept by an eviction; unpinned: evicted (lsu promises to keep its own copy).
    const pinned = objects[0]!;
    expectStatus(await tulane.http.post('/api/v1/cache/pin', { path: pinned.path }), 202);
    expect((await rowAt(tulane, pinned.id))?.pinned).toBe(true);
    const evicted = expectStatus(
      await tulane.http.post<CacheChangeDto>('/api/v1/cache/evict', { path: dir }),
      200,
    ).body;
    expect(evicted.changed).toBe(4);
    expect((await rowAt(tulane, pinned.id))?.status).toBe('good');
    for (const o of objects.slice(1)) expect(await rowAt(tulane, o.id)).toBeUndefined();
    expectStatus(await tulane.http.post('/api/v1/cache/unpin', { path: dir }), 200);
    expect(
      expectStatus(await tulane.http.post<CacheChangeDto>('/api/v1/cache/evict', { path: pinned.path }), 200)
        .body.changed,
    ).toBe(1);
    // Never the last good copy: lsu's own copies are not cached ones, and lsu reads them all.
    await converged();
    for (const o of objects) expect((await read(tulane, o.path)).equals(o.bytes)).toBe(true);

    const status = expectStatus(await tulane.http.get<CacheStatusDto>('/api/v1/cache'), 200).body;
    expect(status).toMatchObject({ site: 'tulane', enabled: true, limitBytes: LIMIT });
    expect(status.usedBytes).toBeLessThanOrEqual(LIMIT);
    expect(status.evictions).toBeGreaterThanOrEqual(5);

    // More than the cache holds is refused, with nothing staged.
    const big = `/projects/${uniqueName('big')}`;
    await lsu.client.createCollection(big);
    for (let i = 0; i < 4; i++) await publish(big, `b${i}.bin`, testBytes(MiB, 400 + i));
    await converged();
    expectError(await tulane.http.post('/api/v1/cache/stage', { path: big }), 409, ErrorCode.CacheFull);
    const none = await tulane.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM replicas r JOIN data_objects o ON o.id = r.object_id
        JOIN collections c ON c.id = o.collection_id WHERE c.path = $1 AND r.site_id = 'tulane'`,
      [big],
    );
    expect(none.rows[0]!.n).toBe(0);
    expectError(
      await tulane.http.post('/api/v1/cache/stage', { path: `${big}/none` }),
      404,
      ErrorCode.NotFound,
    );
    expectError(
      await tulane.http.post('/api/v1/cache/stage', { path: 'relative' }),
      422,
      ErrorCode.ValidationFailed,
    );
  }, 180_000);

  it('a subscription copies 100 files published at another site without any read, and refreshes updated bytes', async () => {
    const dir = `/projects/${uniqueName('pub')}`;
    await lsu.client.createCollection(dir);
    await converged();
    const sub = expectStatus(
      await tulane.http.post<SubscriptionDto>('/api/v1/placement/subscriptions', { path: dir }),
      201,
    ).body;
    expect(sub).toMatchObject({ path: dir, site: 'tulane', condition: null });
    const misses = await metric(tulane, 'tributary_cache_misses_total');
    const files: Array<{ path: string; id: string; bytes: Buffer }> = [];
    for (let i = 0; i < 100; i++) {
      const bytes = testBytes(4096 + i, 500 + i);
      files.push({ ...(await publish(dir, `p${i}.dat`, bytes)), bytes });
    }
    const copied = async (): Promise<boolean> => {
      const res = await tulane.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM replicas r JOIN data_objects o ON o.id = r.object_id
          WHERE r.object_id = ANY($1::bigint[]) AND r.site_id = 'tulane' AND r.status = 'good'
            AND r.checksum = o.checksum AND NOT r.cached`,
        [files.map((f) => f.id)],
      );
      return res.rows[0]!.n === files.length;
    };
    expect(await until(copied, 60_000, 500), 'every published file at the subscriber').toBe(true);
    expect(await metric(tulane, 'tributary_cache_misses_total'), 'no read brought them').toBe(misses);
    const one = files[7]!;
    const row = (await rowAt(tulane, one.id))!;
    expect(sha256(await readFile(storageFile(fed, 'tulane', row.physical_path)))).toBe(sha256(one.bytes));
    // The publisher keeps its copies (a subscription makes nothing surplus).
    await converged();
    for (const f of files.slice(0, 10)) expect((await rowAt(lsu, f.id))?.status).toBe('good');

    // Updated bytes reach the subscriber.
    const fresh = testBytes(5000, 999);
    await publish(dir, 'p7.dat', fresh);
    expect(
      await until(async () => {
        const r = await rowAt(tulane, one.id);
        return r?.status === 'good' && r.checksum === sha256(fresh);
      }, 30_000),
    ).toBe(true);

    // Listed at both sites, then removed; the copies made stay.
    await converged();
    const listed = expectStatus(
      await lsu.http.get<SubscriptionListDto>('/api/v1/placement/subscriptions', { query: { path: dir } }),
      200,
    ).body;
    expect(listed.items.map((s) => [s.id, s.site])).toEqual([[sub.id, 'tulane']]);
    const rules = expectStatus(
      await lsu.http.get<{ items: PlacementRuleDto[] }>('/api/v1/placement/rules', { query: { path: dir } }),
      200,
    ).body;
    expect(rules.items.map((r) => [r.id, r.subscription, r.copies, r.sites])).toEqual([
      [sub.id, true, 1, ['tulane']],
    ]);
    expectError(
      await lsu.http.post('/api/v1/placement/subscriptions', { path: dir, site: 'nowhere' }),
      422,
      ErrorCode.ValidationFailed,
    );
    expectStatus(await lsu.http.delete(`/api/v1/placement/subscriptions/${sub.id}`), 204);
    expectError(await lsu.http.delete(`/api/v1/placement/subscriptions/${sub.id}`), 404, ErrorCode.NotFound);
    await converged();
    expect(
      (
        await tulane.http.get<SubscriptionListDto>('/api/v1/placement/subscriptions', {
          query: { path: dir },
        })
      ).body.items,
    ).toEqual([]);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await copied()).toBe(true);
  }, 180_000);

  it('random evictions, limit evictions and reads with a concurrent update elsewhere never lose the last good copy', async () => {
    const seed = Number(process.env.CACHE_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const random = prng(seed);
    // Printed first, so that a failure anywhere in the run (a convergence wait too) can be replayed.
    console.log(`random eviction run: seed ${seed} (CACHE_SEED)`);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const sites = [lsu, tulane, uno];
    const root = `/projects/${uniqueName('evict-random')}`;
    await lsu.client.createCollection(root);
    await converged();
    interface Case {
      path: string;
      id: string;
      bytes: Buffer;
      home: FederationSite;
      ruled: boolean;
    }
    const cases: Case[] = [];
    for (let i = 0; i < 6; i++) {
      const home = pick(sites);
      const bytes = testBytes(100_000 + Math.floor(random() * 500_000), 600 + i);
      const entry = await home.client.upload(`${root}/o${i}.bin`, bytes);
      cases.push({ path: `${root}/o${i}.bin`, id: entry.id, bytes, home, ruled: random() < 0.3 });
    }
    for (const c of cases)
      if (c.ruled)
        expectStatus(
          await lsu.http.post('/api/v1/placement/rules', { path: root, copies: 1, sites: [pick(IDS)] }),
          201,
        );
    const context = `seed ${seed} (CACHE_SEED): ${cases.map((c) => `${c.home.id}${c.ruled ? '+rule' : ''}`).join(', ')}`;
    await converged();
    // Every site reads every object: the other sites' caches fill (and the limit starts evicting).
    for (const site of sites)
      for (const c of cases) expect((await read(site, c.path)).equals(c.bytes), context).toBe(true);

    const lost: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const good = new Map<string, number>();
        for (const site of sites) {
          const { rows } = await site.query<{ id: string }>(
            `SELECT r.object_id::text AS id FROM replicas r JOIN data_objects o ON o.id = r.object_id
              WHERE r.site_id = $1 AND r.status = 'good' AND r.checksum = o.checksum AND r.object_id = ANY($2::bigint[])`,
            [site.id, cases.map((c) => c.id)],
          );
          for (const r of rows) good.set(r.id, (good.get(r.id) ?? 0) + 1);
        }
        for (const c of cases) if (!good.get(c.id)) lost.push(`${c.path} at ${new Date().toISOString()}`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    const latest = new Map(cases.map((c) => [c.path, c.bytes]));
    /** An update whose answer was lost (a busy machine) may have been made all the same. */
    const maybe = new Map<string, Buffer>();
    await Promise.all(
      cases.map(async (c, i) => {
        await new Promise((resolve) => setTimeout(resolve, Math.floor(random() * 500)));
        const evicting = pick(sites);
        const updating = pick(sites.filter((s) => s !== evicting));
        const bytes = testBytes(100_000 + Math.floor(random() * 400_000), 700 + i);
        const [, updated] = await Promise.all([
          evicting.http.post<CacheChangeDto>('/api/v1/cache/evict', { path: c.path }),
          updating.client.upload(c.path, bytes, { overwrite: true }).then(
            () => true,
            () => false,
          ),
          // Reads elsewhere meanwhile (each may fault in, and so evict for the limit).
          read(pick(sites), pick(cases).path).catch(() => Buffer.alloc(0)),
        ]);
        if (updated) latest.set(c.path, bytes);
        else maybe.set(c.path, bytes);
        await evicting.http.post('/api/v1/cache/evict', { path: c.path });
      }),
    );
    await converged();
    // Evictions for the limit and on request after the updates reached every site.
    for (const site of sites) {
      for (const c of cases) {
        const res = await site.client.download(c.path);
        if (res.status === 200) await res.arrayBuffer();
        await site.http.post('/api/v1/cache/evict', { path: c.path });
      }
    }
    watching = false;
    await watcher;
    expect(lost, context).toEqual([]);
    // The concurrent updates survived: every site reads each object's latest bytes.
    for (const c of cases) {
      const seen = new Set<string>();
      for (const site of sites) seen.add(sha256(await read(site, c.path)));
      expect(seen.size, `${context}: every site reads the same bytes of ${c.path}`).toBe(1);
      const candidates = [latest.get(c.path)!, ...(maybe.has(c.path) ? [maybe.get(c.path)!] : [])];
      expect(
        candidates.map((b) => sha256(b)),
        `${context}: ${c.path}`,
      ).toContain([...seen][0]);
    }
    for (const site of sites)
      expect(await cachedBytes(site), `${context}: ${site.id}`).toBeLessThanOrEqual(LIMIT);
  }, 180_000);
});

/** A fault-in cut by a SIGKILL of the caching site (a larger cache, so a large object is teed). */
describe('a caching site killed during a fault-in', () => {
  let fed: Federation;
  let lsu: FederationSite;
  let tulane: FederationSite;

  useFederation(
    {
      ids: IDS.slice(0, 2),
      cycleSeconds: 1,
      env: { PLACEMENT_INTERVAL_MS: '200', CACHE_MAX_BYTES: '256MiB' },
    },
    (started) => {
      fed = started;
      [lsu, tulane] = IDS.slice(0, 2).map((id) => fed.site(id)) as [FederationSite, FederationSite];
    },
  );

  async function rowAt(site: FederationSite, objectId: string): Promise<CopyRow | undefined> {
    const res = await site.query<CopyRow>(
      `SELECT status::text AS status, cached, pinned, checksum, physical_path FROM replicas
        WHERE object_id = $1 AND site_id = $2`,
      [objectId, site.id],
    );
    return res.rows[0];
  }

  async function publish(dir: string, name: string, bytes: Buffer): Promise<{ path: string; id: string }> {
    const entry = await lsu.client.upload(`${dir}/${name}`, bytes, { overwrite: true });
    return { path: `${dir}/${name}`, id: entry.id };
  }

  async function read(site: FederationSite, p: string): Promise<Buffer> {
    const res = await site.client.download(p);
    expect(res.status).toBe(200);
    return Buffer.from(await res.arrayBuffer());
  }

  async function converged(): Promise<void> {
    await fed.waitForConvergence(60_000);
  }

  const goodCachedAt = async (site: FederationSite, id: string, bytes: Buffer): Promise<boolean> => {
    const row = await rowAt(site, id);
    return row?.status === 'good' && row.cached && row.checksum === sha256(bytes);
  };

  it('a SIGKILL during a fault-in leaves no good partial copy', async () => {
    const dir = `/projects/${uniqueName('kill')}`;
    await lsu.client.createCollection(dir);
    // Far more than the sockets between lsu, tulane and this reader hold: the read is cut midway.
    const bytes = testBytes(48 * MiB + 12345, 31);
    const { path: p, id } = await publish(dir, 'k.bin', bytes);
    await converged();
    const res = await tulane.client.download(p);
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let received = 0;
    while (received < 256 * 1024) {
      const next = await reader.read();
      if (next.done) break;
      received += next.value.byteLength;
    }
    expect(received).toBeLessThan(bytes.length);
    await tulane.kill('SIGKILL');
    await reader.cancel().catch(() => undefined);
    const draftsDir = path.join(fed.dataDir, 'sites', 'tulane', 'storage', '.copies');
    const drafts = async (): Promise<string[]> =>
      (await readdir(draftsDir).catch(() => [] as string[])).filter((f) => f.startsWith('f'));
    await tulane.restart();
    expect(await rowAt(tulane, id), 'no copy row at tulane').toBeUndefined();
    expect(await until(async () => (await drafts()).length === 0, 10_000), 'the partial draft is gone').toBe(
      true,
    );
    expect((await read(tulane, p)).equals(bytes)).toBe(true);
    expect(await until(() => goodCachedAt(tulane, id, bytes), 10_000)).toBe(true);
  }, 120_000);
});
