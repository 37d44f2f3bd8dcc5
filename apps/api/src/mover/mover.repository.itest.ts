import { wantedSites, type PlacementSite } from '@tributary/placement';
import type { MoverStatusDto, ObjectCopiesDto } from '@tributary/shared';
import { uniqueName } from '@tributary/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectError, expectStatus, startTestSite, type TestClient, type TestSite } from '../test/test-site';
import { MoverRepository } from './mover.repository';

/**
 * The planner's SQL against a real catalog: the copies it plans at each site are exactly those
 * that `wantedSites()` (packages/placement) computes from the same rules and sites, home site and
 * rendezvous order included, conditions compiled by the metadata compiler; retries leave no
 * replicated change. One site with four sites in its catalog; the mover itself is off.
 */
describe('the mover planner', () => {
  let site: TestSite;
  let admin: TestClient;
  let repo: MoverRepository;
  let dir: string;
  let sub: string;
  let sites: PlacementSite[];
  const raw = new Set<string>();

  beforeAll(async () => {
    site = await startTestSite({ PLACEMENT_ENABLED: 'false' });
    admin = await site.admin();
    repo = site.siteApp.app.get(MoverRepository);
    for (const [i, id] of ['tulane', 'uno', 'xavier'].entries()) {
      await site.query(
        `INSERT INTO sites (id, name, id_range_start, id_range_end, is_local)
         VALUES ($1, upper($1), $2::bigint << 48, ($2::bigint + 1 << 48) - 1, false)`,
        [id, i + 2],
      );
    }
    sites = await repo.sites();
    dir = `/projects/${uniqueName('plan')}`;
    sub = `${dir}/sub`;
    expectStatus(await admin.post('/api/v1/namespace/collections', { path: sub, parents: true }), 201);
    for (let i = 0; i < 24; i++) {
      const path = `${i % 2 ? sub : dir}/f${i}`;
      expectStatus(
        await admin.request('PUT', '/api/v1/data', {
          query: { path },
          headers: { 'content-type': 'application/octet-stream' },
          body: `bytes ${i}`,
        }),
        201,
      );
      if (i % 4 === 1) {
        expectStatus(
          await admin.post(
            '/api/v1/metadata',
            { triples: [{ attribute: 'kind', value: 'raw' }] },
            { query: { path } },
          ),
          201,
        );
      }
    }
    // Objects created at other sites (ids in their ranges), as replication would bring them.
    await site.query(
      `INSERT INTO data_objects (id, collection_id, name, size, checksum, owner_id)
       SELECT ((2 + k % 3)::bigint << 48) + 1000 + k, o.collection_id, o.name || '-r' || k, o.size, o.checksum, o.owner_id
         FROM data_objects o CROSS JOIN generate_series(0, 11) k
        WHERE o.name = 'f1' AND o.collection_id = (SELECT id FROM collections WHERE path = $1)`,
      [sub],
    );
    const { rows } = await site.query<{ id: string }>(
      `SELECT t.object_id::text AS id FROM metadata_triples t WHERE t.attribute = 'kind' AND t.value = 'raw'`,
    );
    for (const r of rows) raw.add(r.id);
    await site.query(
      `INSERT INTO placement_rules (collection_id, copies, sites, condition, owner_id)
       SELECT id, 2, NULL::text[], NULL, 1 FROM collections WHERE path = $1
       UNION ALL
       SELECT id, 1, '{uno,xavier,nowhere}'::text[], 'kind = ''raw''', 1 FROM collections WHERE path = $2`,
      [dir, sub],
    );
  });

  afterAll(async () => {
    await site?.close();
  });

  async function objects(): Promise<Array<{ id: string; inSub: boolean }>> {
    const { rows } = await site.query<{ id: string; path: string }>(
      `SELECT o.id::text, c.path FROM data_objects o JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 OR c.path = $2`,
      [dir, sub],
    );
    return rows.map((r) => ({ id: r.id, inSub: r.path === sub }));
  }

  it('plans at each site exactly the copies wantedSites() computes', async () => {
    const rules = await repo.liveRules();
    const resource = (await site.query<{ id: string }>('SELECT id::text FROM storage_resources LIMIT 1'))
      .rows[0]!.id;
    for (const s of sites) for (const rule of rules) await repo.planRule(rule, s.id, BigInt(resource));
    // Planning twice adds nothing.
    let again = 0;
    for (const s of sites)
      for (const rule of rules) again += await repo.planRule(rule, s.id, BigInt(resource));
    expect(again).toBe(0);

    const all = await objects();
    expect(all).toHaveLength(36);
    const [dirRule, subRule] = rules;
    let some = 0;
    for (const o of all) {
      const covering = [dirRule!, ...(o.inSub && raw.has(o.id) ? [subRule!] : [])];
      expect((await repo.rulesCovering(o.id)).map((r) => r.id)).toEqual(covering.map((r) => r.id));
      const wanted = wantedSites(BigInt(o.id), covering, sites);
      const { rows } = await site.query<{ site_id: string; status: string }>(
        `SELECT site_id, status::text AS status FROM replicas WHERE object_id = $1`,
        [o.id],
      );
      const uploadedHere = rows.filter((r) => r.status === 'good').map((r) => r.site_id);
      const planned = rows.filter((r) => r.status === 'pending').map((r) => r.site_id);
      expect(new Set([...uploadedHere, ...planned]), `object ${o.id}`).toEqual(
        new Set([...uploadedHere, ...wanted]),
      );
      expect(planned.every((s) => wanted.includes(s))).toBe(true);
      if (covering.length > 1) some += 1;
    }
    // The condition matched some objects (and the rule's unknown site was ignored).
    expect(some).toBeGreaterThan(0);
  });

  it('never marks the copy of bytes being updated here stale (stale marking racing updates)', async () => {
    const path = `${dir}/raced`;
    const put = async (i: number): Promise<void> => {
      expectStatus(
        await admin.request('PUT', '/api/v1/data', {
          query: { path, overwrite: 'true' },
          headers: { 'content-type': 'application/octet-stream' },
          body: `version ${i} `.repeat(50 + i),
        }),
        i === 0 ? 201 : 200,
      );
    };
    await put(0);
    let updating = true;
    let passes = 0;
    const marking = (async () => {
      while (updating) {
        await repo.markStale('lsu');
        passes++;
      }
    })();
    for (let i = 1; i <= 60; i++) await put(i);
    updating = false;
    await marking;
    expect(passes).toBeGreaterThan(10);
    const { rows } = await site.query<{ status: string; current: boolean }>(
      `SELECT r.status::text AS status, r.checksum = o.checksum AS current
         FROM replicas r JOIN data_objects o ON o.id = r.object_id
         JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 AND o.name = 'raced' AND r.site_id = 'lsu'`,
      [dir],
    );
    expect(rows).toEqual([{ status: 'good', current: true }]);
  });

  it('marks good copies of old bytes stale, and a retry changes no replicated column', async () => {
    const [object] = await objects();
    const { rows } = await site.query<{ id: string }>(
      `SELECT id::text FROM replicas WHERE object_id = $1 AND site_id = 'lsu' AND status = 'good'`,
      [object!.id],
    );
    const replica = rows[0]!.id;
    await site.query(`UPDATE data_objects SET checksum = repeat('0', 64) WHERE id = $1`, [object!.id]);
    expect(await repo.markStale('lsu')).toBe(1);
    const before = await site.query<{ updated_at: Date }>('SELECT updated_at FROM replicas WHERE id = $1', [
      replica,
    ]);
    await repo.recordFailure(replica, 'lsu', 'boom', 1, new Date(Date.now() + 1000));
    // The row's replicated version: a replicated change bumps it.
    const version = async (): Promise<string | undefined> =>
      (
        await site.query<{ stamp: string }>(
          `SELECT stamp::text FROM repl_versions WHERE tbl = 'replicas' AND row_key = $1`,
          [replica],
        )
      ).rows[0]?.stamp;
    const first = await version();
    expect(first).toBeDefined();
    await repo.recordFailure(replica, 'lsu', 'boom', 2, new Date(Date.now() + 2000));
    const after = await site.query<{ updated_at: Date; status: string; attempts: number }>(
      'SELECT updated_at, status::text AS status, attempts FROM replicas WHERE id = $1',
      [replica],
    );
    expect(after.rows[0]).toMatchObject({
      status: 'failed',
      attempts: 2,
      updated_at: before.rows[0]!.updated_at,
    });
    expect(await version()).toBe(first);
    // Only the copy's own row of the failed attempt is due later: not now.
    expect((await repo.due('lsu', 100, [])).map((d) => d.replicaId)).not.toContain(replica);
  });

  it('answers the copies of an object to readers and the mover to administrators, refusing the rest', async () => {
    const { rows } = await site.query<{ name: string }>(
      `SELECT o.name FROM data_objects o JOIN replicas r ON r.object_id = o.id
        WHERE o.collection_id = (SELECT id FROM collections WHERE path = $1) AND r.site_id = 'lsu' AND r.status = 'good'
        LIMIT 1`,
      [dir],
    );
    const file = `${dir}/${rows[0]!.name}`;
    const copies = expectStatus(
      await admin.get<ObjectCopiesDto>('/api/v1/placement/copies', { query: { path: file } }),
      200,
    ).body;
    expect(copies.rules).toHaveLength(1);
    expect(copies.wantedSites).toHaveLength(2);
    expect(copies.copies.find((c) => c.site === 'lsu')).toMatchObject({
      state: 'good',
      current: true,
      wanted: true,
    });
    const user = await site.createUser();
    // As for a download: /projects is listed to everyone, so the object is known but not readable.
    expectError(
      await user.client.get('/api/v1/placement/copies', { query: { path: file } }),
      403,
      'PERMISSION_DENIED',
    );
    expectError(await user.client.get('/api/v1/placement/mover'), 403, 'ADMIN_REQUIRED');
    expectError(await admin.get('/api/v1/placement/copies', { query: { path: dir } }), 409, 'NOT_AN_OBJECT');
    expectError(
      await admin.get('/api/v1/placement/copies', { query: { path: 'relative' } }),
      422,
      'VALIDATION_FAILED',
    );
    expectError(
      await admin.get('/api/v1/placement/copies', { query: { path: `${dir}/nope` } }),
      404,
      'NOT_FOUND',
    );
    const status = expectStatus(await admin.get<MoverStatusDto>('/api/v1/placement/mover'), 200).body;
    expect(status).toMatchObject({ site: 'lsu', inFlight: [], bytesTotal: 0 });
    expect(status.states.good).toBeGreaterThan(0);
  });
});
