import type { PlacementRuleDto, StorageMoveDto } from '@tributary/shared';
import { prng, type Federation, type FederationSite, type TestClient } from '@tributary/testkit';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until, useFederation } from '../test/federation';
import { filesBelow } from '../test/storage';
import { expectStatus } from '../test/test-site';

/**
 * Moves between storage resources racing other sites (docs/storage.md, "Moving between resources"):
 * two real site processes, each with a second local resource `bulk`. An update made at another site
 * while a collection is moved survives, and old bytes go only once nothing names them; a copy moved
 * to `bulk` and then refreshed by the mover after an update elsewhere is readable where its row says;
 * a placement rule naming `bulk` for a site puts that site's copies there; and a randomized run
 * interleaves moves, updates at both sites, reads, exchanges and a SIGKILL with restart.
 * STORAGE_MOVES_RANDOM_STEPS makes the run longer, STORAGE_MOVES_RANDOM_SEED replays one.
 */

const KiB = 1024;
const sha256 = (b: Buffer): string => createHash('sha256').update(b).digest('hex');
const bulkRoot = mkdtempSync(path.join(os.tmpdir(), 'tributary-bulk-'));

describe('storage moves racing other sites', () => {
  let fed: Federation;
  useFederation(
    {
      ids: ['lsu', 'tulane'],
      cycleSeconds: 3600,
      env: {
        STORAGE_RESOURCES: JSON.stringify([
          { name: 'bulk', kind: 'local', root: path.join(bulkRoot, '{site}') },
        ]),
        STORAGE_DEFAULT_RESOURCE: 'default',
        PLACEMENT_INTERVAL_MS: '300',
        // The scrub's verifications are replicated writes at any time: exchanges settle without them.
        SCRUB_RATE_MIBS: '0',
      },
    },
    (started) => (fed = started),
    8000,
  );
  // Each site's registration reaches the other (rules may name both).
  beforeAll(async () => {
    await exchange();
  }, 120_000);
  afterAll(() => rmSync(bulkRoot, { recursive: true, force: true }));

  const site = (id: string): FederationSite => fed.site(id);

  /** Cycles at both sites until their catalogs agree (the movers may still be writing). */
  async function exchange(): Promise<void> {
    let last: unknown;
    for (let round = 0; round < 6; round++) {
      for (let i = 0; i < 3; i++)
        for (const id of ['lsu', 'tulane'])
          expectStatus(await site(id).http.post('/api/v1/replication/cycle'), 200);
      try {
        await fed.waitForConvergence(10_000);
        return;
      } catch (err) {
        last = err;
      }
    }
    throw last;
  }

  async function put(client: TestClient, p: string, bytes: Buffer, overwrite = false) {
    return client.request('PUT', '/api/v1/data', {
      query: { path: p, ...(overwrite ? { overwrite: 'true' } : {}) },
      body: bytes,
    });
  }

  async function moveAndWait(s: FederationSite, p: string, resource: string): Promise<StorageMoveDto> {
    const move = expectStatus(
      await s.http.post<StorageMoveDto>('/api/v1/storage/moves', { path: p, resource }),
      202,
    ).body;
    let last = move;
    const done = await until(async () => {
      last = expectStatus(await s.http.get<StorageMoveDto>(`/api/v1/storage/moves/${move.id}`), 200).body;
      return last.status !== 'running';
    }, 60_000);
    expect(done, JSON.stringify(last)).toBe(true);
    return last;
  }

  /** Reads `p` at `s` and expects `bytes`. */
  async function expectBytes(s: FederationSite, p: string, bytes: Buffer): Promise<void> {
    const res = await s.http.request('GET', '/api/v1/data', {
      query: { path: p },
      headers: { Prefer: 'wait=60' },
    });
    expect(res.status, `${s.id} ${p}: ${res.text.slice(0, 300)}`).toBe(200);
    expect(sha256(res.bytes), `${s.id} ${p}`).toBe(sha256(bytes));
  }

  /**
   * Every copy row of the site names bytes that are where it says (the file exists on its
   * resource), and once the garbage is swept no file is on a resource that no row names there.
   */
  async function expectFilesMatchRows(s: FederationSite): Promise<void> {
    const dirs: Record<string, string> = {
      default: path.join(fed.dataDir, 'sites', s.id, 'storage', 'objects'),
      bulk: path.join(bulkRoot, s.id, 'objects'),
    };
    let problems: string[] = [];
    const ok = await until(async () => {
      expectStatus(await s.http.post('/api/v1/replication/cycle'), 200);
      const rows = await s.query<{ key: string; resource: string }>(
        `SELECT r.physical_path AS key, x.name AS resource FROM replicas r
           JOIN storage_resources x ON x.id = r.resource_id
          WHERE r.site_id = $1 AND r.physical_path <> '' AND r.status = 'good'`,
        [s.id],
      );
      const garbage = await s.query<{ n: string }>('SELECT count(*)::text AS n FROM storage_garbage');
      problems = [];
      const files = new Map<string, Set<string>>();
      for (const [name, dir] of Object.entries(dirs))
        files.set(name, new Set((await filesBelow(dir)).map((f) => path.basename(f))));
      for (const r of rows.rows)
        if (!files.get(r.resource)?.has(r.key)) problems.push(`${s.id}: ${r.key} is not on ${r.resource}`);
      if (garbage.rows[0]!.n === '0') {
        const named = new Set(rows.rows.map((r) => `${r.resource}/${r.key}`));
        for (const [name, keys] of files)
          for (const key of keys)
            if (!named.has(`${name}/${key}`)) problems.push(`${s.id}: ${name}/${key} is nobody's`);
      } else {
        problems.push(`${s.id}: ${garbage.rows[0]!.n} keys wait to be swept`);
      }
      return problems.length === 0;
    }, 30_000);
    expect(ok ? [] : problems).toEqual([]);
  }

  it('keeps an update made at another site during a move, and removes old bytes only once moved', async () => {
    const lsu = site('lsu');
    const tulane = site('tulane');
    expectStatus(await lsu.http.post('/api/v1/namespace/collections', { path: '/projects/moving' }), 201);
    const latest = new Map<string, Buffer>();
    for (let i = 0; i < 30; i++) {
      const p = `/projects/moving/f${i}.bin`;
      const bytes = randomBytes(256 * KiB + i);
      expectStatus(await put(lsu.http, p, bytes), 201);
      latest.set(p, bytes);
    }
    await exchange();
    // The move at lsu (which holds the bytes) while tulane updates a third of the objects: each
    // update is forwarded to lsu and lands on its default resource.
    const move = expectStatus(
      await lsu.http.post<StorageMoveDto>('/api/v1/storage/moves', {
        path: '/projects/moving',
        resource: 'bulk',
      }),
      202,
    ).body;
    for (let i = 0; i < 30; i += 3) {
      const p = `/projects/moving/f${i}.bin`;
      const bytes = randomBytes(200 * KiB + i);
      const res = await put(tulane.http, p, bytes, true);
      expect(res.status, res.text).toBe(200);
      latest.set(p, bytes);
    }
    const done = await until(async () => {
      const m = expectStatus(
        await lsu.http.get<StorageMoveDto>(`/api/v1/storage/moves/${move.id}`),
        200,
      ).body;
      return m.status === 'done';
    }, 60_000);
    expect(done).toBe(true);
    await exchange();
    for (const [p, bytes] of latest) {
      await expectBytes(lsu, p, bytes);
      await expectBytes(tulane, p, bytes);
    }
    await expectFilesMatchRows(lsu);
  }, 180_000);

  it('refreshes a copy moved to another resource after an update elsewhere, readable where its row says', async () => {
    const lsu = site('lsu');
    const tulane = site('tulane');
    expectStatus(await lsu.http.post('/api/v1/namespace/collections', { path: '/projects/kept' }), 201);
    expectStatus(
      await lsu.http.post<PlacementRuleDto>('/api/v1/placement/rules', {
        path: '/projects/kept',
        copies: 2,
        sites: ['lsu', 'tulane'],
      }),
      201,
    );
    const latest = new Map<string, Buffer>();
    for (let i = 0; i < 6; i++) {
      const p = `/projects/kept/k${i}.bin`;
      const bytes = randomBytes(100 * KiB + i);
      expectStatus(await put(lsu.http, p, bytes), 201);
      latest.set(p, bytes);
    }
    await exchange();
    const copiesGood = async (checksums: Map<string, Buffer>) =>
      until(async () => {
        await exchange();
        const rows = await tulane.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM replicas r JOIN data_objects o ON o.id = r.object_id
            WHERE r.site_id = 'tulane' AND r.status = 'good' AND r.checksum = ANY($1::text[])`,
          [[...checksums.values()].map(sha256)],
        );
        return Number(rows.rows[0]!.n) === checksums.size;
      }, 60_000);
    const copiesAt = async () =>
      JSON.stringify(
        (
          await tulane.query(
            `SELECT r.site_id, r.status, r.resource_id::text, r.physical_path, r.error FROM replicas r
               JOIN data_objects o ON o.id = r.object_id JOIN collections c ON c.id = o.collection_id
              WHERE c.path = '/projects/kept' ORDER BY r.object_id, r.site_id`,
          )
        ).rows,
      );
    expect(await copiesGood(latest), await copiesAt()).toBe(true);
    expect(await moveAndWait(tulane, '/projects/kept', 'bulk')).toMatchObject({
      status: 'done',
      objectsMoved: 6,
    });
    for (const p of [...latest.keys()].slice(0, 3)) {
      const bytes = randomBytes(90 * KiB);
      expect((await put(lsu.http, p, bytes, true)).status).toBe(200);
      latest.set(p, bytes);
    }
    // tulane's copies go stale and its mover copies the new bytes (onto its default resource).
    expect(await copiesGood(latest), await copiesAt()).toBe(true);
    for (const [p, bytes] of latest) await expectBytes(tulane, p, bytes);
    await expectFilesMatchRows(tulane);
  }, 180_000);

  it('puts a site’s copies on the resource a placement rule names, and refuses an unknown one', async () => {
    const lsu = site('lsu');
    const tulane = site('tulane');
    expectStatus(await lsu.http.post('/api/v1/namespace/collections', { path: '/projects/ruled' }), 201);
    const refused = await lsu.http.post('/api/v1/placement/rules', {
      path: '/projects/ruled',
      copies: 2,
      resources: [{ site: 'tulane', resource: 'tape' }],
    });
    expect(refused.status).toBe(422);
    expect(refused.text).toContain('resources.0.resource');
    const rule = expectStatus(
      await lsu.http.post<PlacementRuleDto>('/api/v1/placement/rules', {
        path: '/projects/ruled',
        copies: 2,
        sites: ['lsu', 'tulane'],
        resources: [{ site: 'tulane', resource: 'bulk' }],
      }),
      201,
    ).body;
    expect(rule.resources).toEqual([{ site: 'tulane', resource: 'bulk' }]);
    const files = new Map<string, Buffer>();
    for (let i = 0; i < 4; i++) {
      const p = `/projects/ruled/r${i}.bin`;
      const bytes = randomBytes(64 * KiB + i);
      expectStatus(await put(lsu.http, p, bytes), 201);
      files.set(p, bytes);
    }
    await exchange();
    // Replicated: tulane sees the rule with its resources, makes its copies and keeps them on bulk.
    const there = expectStatus(
      await tulane.http.get<{ items: PlacementRuleDto[] }>('/api/v1/placement/rules', {
        query: { path: '/projects/ruled' },
      }),
      200,
    ).body.items;
    expect(there.map((r) => r.resources)).toEqual([[{ site: 'tulane', resource: 'bulk' }]]);
    const placed = await until(async () => {
      await exchange();
      const rows = await tulane.query<{ resource: string; n: string }>(
        `SELECT x.name AS resource, count(*)::text AS n FROM replicas r
           JOIN storage_resources x ON x.id = r.resource_id
           JOIN data_objects o ON o.id = r.object_id JOIN collections c ON c.id = o.collection_id
          WHERE r.site_id = 'tulane' AND r.status = 'good' AND c.path = '/projects/ruled'
          GROUP BY x.name`,
      );
      return rows.rows.length === 1 && rows.rows[0]!.resource === 'bulk' && rows.rows[0]!.n === '4';
    }, 60_000);
    expect(placed).toBe(true);
    // lsu's copies stay on its default.
    const atLsu = await lsu.query<{ resource: string }>(
      `SELECT DISTINCT x.name AS resource FROM replicas r JOIN storage_resources x ON x.id = r.resource_id
         JOIN data_objects o ON o.id = r.object_id JOIN collections c ON c.id = o.collection_id
        WHERE r.site_id = 'lsu' AND c.path = '/projects/ruled'`,
    );
    expect(atLsu.rows).toEqual([{ resource: 'default' }]);
    for (const [p, bytes] of files) await expectBytes(tulane, p, bytes);
    await expectFilesMatchRows(tulane);
  }, 180_000);

  it('loses nothing through interleaved moves, updates at both sites, reads and a SIGKILL (randomized)', async () => {
    const seed = Number(process.env.STORAGE_MOVES_RANDOM_SEED ?? Math.floor(Math.random() * 2 ** 31));
    const steps = Number(process.env.STORAGE_MOVES_RANDOM_STEPS ?? 10);
    console.log(`storage moves randomized run: STORAGE_MOVES_RANDOM_SEED=${seed}, ${steps} steps`);
    const random = prng(seed);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
    const lsu = site('lsu');
    expectStatus(await lsu.http.post('/api/v1/namespace/collections', { path: '/projects/rand' }), 201);
    expectStatus(
      await lsu.http.post('/api/v1/placement/rules', {
        path: '/projects/rand',
        copies: 2,
        sites: ['lsu', 'tulane'],
      }),
      201,
    );
    const latest = new Map<string, Buffer>();
    for (let i = 0; i < 12; i++) {
      const p = `/projects/rand/o${i}.bin`;
      const bytes = randomBytes(64 * KiB + Math.floor(random() * 200 * KiB));
      expectStatus(await put(lsu.http, p, bytes), 201);
      latest.set(p, bytes);
    }
    await exchange();
    const names = [...latest.keys()];
    // Once in every run, at a step of the seed's choosing: a move started and the site SIGKILLed
    // at once, then started again (its moves resume).
    const killAt = Math.floor(random() * steps);
    for (let step = 0; step < steps; step++) {
      const roll = random();
      const s = site(pick(['lsu', 'tulane']));
      if (step === killAt) {
        expect(
          (
            await s.http.post('/api/v1/storage/moves', {
              path: '/projects/rand',
              resource: pick(['bulk', 'default']),
            })
          ).status,
        ).toBe(202);
        await new Promise((r) => setTimeout(r, Math.floor(random() * 300)));
        await s.kill('SIGKILL');
        await s.restart();
      } else if (roll < 0.3) {
        // A move of the collection at one site, to either resource (not waited for).
        expect(
          (
            await s.http.post('/api/v1/storage/moves', {
              path: '/projects/rand',
              resource: pick(['bulk', 'default']),
            })
          ).status,
        ).toBe(202);
      } else if (roll < 0.6) {
        const p = pick(names);
        const bytes = randomBytes(Math.floor(random() * 200 * KiB));
        const res = await put(s.http, p, bytes, true);
        // One site's updates per cycle: the other is refused and its bytes are not the object's.
        if (res.status === 200) latest.set(p, bytes);
        else expect(res.status, res.text).toBe(409);
      } else if (roll < 0.85) {
        // A read answers bytes that hash to the catalog's checksum there (ETag).
        const res = await s.http.request('GET', '/api/v1/data', {
          query: { path: pick(names) },
          headers: { Prefer: 'wait=60' },
        });
        expect(res.status, res.text.slice(0, 300)).toBe(200);
        expect(`"${sha256(res.bytes)}"`).toBe(res.headers.get('etag'));
      } else {
        await exchange();
      }
    }
    // Settled: every move finished, every copy good, every read the last bytes at both sites.
    for (const s of [site('lsu'), site('tulane')]) {
      const settled = await until(async () => {
        const moves = expectStatus(
          await s.http.get<{ items: StorageMoveDto[] }>('/api/v1/storage/moves'),
          200,
        ).body;
        return moves.items.every((m) => m.status !== 'running');
      }, 120_000);
      expect(settled).toBe(true);
      for (const m of expectStatus(
        await s.http.get<{ items: StorageMoveDto[] }>('/api/v1/storage/moves'),
        200,
      ).body.items)
        expect(m.status, JSON.stringify(m)).toBe('done');
    }
    const allGood = await until(async () => {
      await exchange();
      const rows = await Promise.all(
        ['lsu', 'tulane'].map((id) =>
          site(id).query<{ n: string }>(
            `SELECT count(*)::text AS n FROM replicas r JOIN data_objects o ON o.id = r.object_id
              WHERE r.site_id = $1 AND r.status = 'good' AND r.checksum = o.checksum
                AND o.checksum = ANY($2::text[])`,
            [id, [...latest.values()].map(sha256)],
          ),
        ),
      );
      return rows.every((r) => Number(r.rows[0]!.n) === latest.size);
    }, 120_000);
    expect(allGood).toBe(true);
    for (const [p, bytes] of latest)
      for (const id of ['lsu', 'tulane']) await expectBytes(site(id), p, bytes);
    await expectFilesMatchRows(site('lsu'));
    await expectFilesMatchRows(site('tulane'));
  }, 600_000);
});
