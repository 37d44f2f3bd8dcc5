import { ErrorCode, MAX_LIST_OFFSET, type EntryDto, type Page } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueName } from '@tributary/testkit';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

/**
 * GET /api/v1/namespace/children with `offset`: any position of a listing in one request (the portal
 * opens the end, or wherever the scrollbar is dragged, without loading the pages in between), then
 * `nextCursor` from there as usual.
 */
describe('namespace listing at an offset', () => {
  let site: TestSite;
  let alice: TestUser;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    alice = await site.createUser();
  });
  afterAll(async () => {
    await site?.close();
  });

  async function children(client: TestClient, path: string, query: Record<string, string | number> = {}) {
    return client.get<Page<EntryDto>>('/api/v1/namespace/children', { query: { path, ...query } });
  }
  const names = (items: EntryDto[]): string[] => items.map((e) => e.name);

  describe('a small collection: every slice agrees with the whole listing', () => {
    let dir: string;
    beforeAll(async () => {
      dir = `/home/${alice.username}/${uniqueName('small')}`;
      expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: dir }), 201);
      for (const d of ['d-b', 'd-a', 'd-c'])
        expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: `${dir}/${d}` }), 201);
      for (const [f, size] of Object.entries({ 'f-c': 30, 'f-a': 10, 'f-b': 20, 'f-d': 0, 'f-e': 10 })) {
        const res = await alice.client.request('PUT', '/api/v1/data', {
          query: { path: `${dir}/${f}` },
          headers: { 'content-type': 'application/octet-stream' },
          body: 'z'.repeat(size),
        });
        expectStatus(res, 201);
      }
    });

    it('offset + limit is the same slice of every order, across the collections/objects boundary', async () => {
      for (const sort of ['name', 'size', 'modified'] as const) {
        for (const order of ['asc', 'desc'] as const) {
          const whole = expectStatus(
            await children(alice.client, dir, { sort, order, limit: 100 }),
            200,
          ).body;
          expect(whole.total).toBe(8);
          for (let offset = 0; offset <= 9; offset++) {
            for (const limit of [1, 2, 3, 5]) {
              const page = expectStatus(
                await children(alice.client, dir, { sort, order, limit, offset }),
                200,
              ).body;
              const label = `${sort} ${order} offset ${offset} limit ${limit}`;
              expect(names(page.items), label).toEqual(names(whole.items.slice(offset, offset + limit)));
              expect(page.total, label).toBe(8);
              expect(page.nextCursor === undefined, label).toBe(offset + limit >= 8);
            }
          }
        }
      }
    });

    it('nextCursor after an offset page continues exactly where it ended', async () => {
      const whole = expectStatus(await children(alice.client, dir, { limit: 100 }), 200).body.items;
      const first = expectStatus(await children(alice.client, dir, { limit: 2, offset: 2 }), 200).body;
      const next = expectStatus(
        await children(alice.client, dir, { limit: 3, cursor: first.nextCursor ?? '' }),
        200,
      ).body;
      expect(names([...first.items, ...next.items])).toEqual(names(whole.slice(2, 7)));
    });

    it('validates offset: not negative, bounded, not with a cursor (422 VALIDATION_FAILED)', async () => {
      for (const offset of [-1, 1.5, 'x', MAX_LIST_OFFSET + 1]) {
        const err = expectError(
          await children(alice.client, dir, { offset }),
          422,
          ErrorCode.ValidationFailed,
        );
        expect(Object.keys(err.details ?? {})).toContain('offset');
      }
      const cursor = expectStatus(await children(alice.client, dir, { limit: 1 }), 200).body.nextCursor ?? '';
      const both = expectError(
        await children(alice.client, dir, { cursor, offset: 3 }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(both.details?.offset?.[0]).toMatch(/not both/);
      // Past the end: an empty page that still says how many there are.
      const past = expectStatus(await children(alice.client, dir, { offset: MAX_LIST_OFFSET }), 200).body;
      expect(past).toEqual({ items: [], total: 8 });
    });
  });

  describe('100,000 entries', () => {
    const N = 100_000;
    const DIRS = 12;
    let dir: string;
    /** The names in listing order by name: the collections first, then the objects. */
    const nameAt = (i: number): string =>
      i < DIRS ? `c-${String(i).padStart(2, '0')}` : `f-${String(i - DIRS).padStart(6, '0')}`;

    beforeAll(async () => {
      dir = `/home/${alice.username}/${uniqueName('large')}`;
      expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: dir }), 201);
      // One statement each instead of 100,000 uploads; capture is switched off for this transaction
      // (the rows are test scaffolding, not changes for peers).
      await site.query(`
        BEGIN;
        SET LOCAL tributary.capture = 'off';
        INSERT INTO collections (parent_id, name, path, owner_id)
          SELECT c.id, 'c-' || lpad(i::text, 2, '0'), c.path || '/c-' || lpad(i::text, 2, '0'), c.owner_id
            FROM collections c, generate_series(0, ${DIRS - 1}) i WHERE c.path = '${dir}' AND c.trash_id = 0;
        INSERT INTO data_objects (collection_id, name, size, checksum, owner_id, updated_at)
          SELECT c.id, 'f-' || lpad(i::text, 6, '0'), (i * 7919) % 1000, 'sha256:' || repeat('0', 64), c.owner_id,
                 timestamptz '2026-01-01' + (i % 5000) * interval '1 second'
            FROM collections c, generate_series(0, ${N - DIRS - 1}) i WHERE c.path = '${dir}' AND c.trash_id = 0;
        COMMIT;
        ANALYZE collections;
        ANALYZE data_objects;`);
    }, 120_000);

    it('opens the end with one request', async () => {
      const last = expectStatus(await children(alice.client, dir, { limit: 500, offset: N - 500 }), 200).body;
      expect(last.total).toBe(N);
      expect(last.items).toHaveLength(500);
      expect(last.items[0]?.name).toBe(nameAt(N - 500));
      expect(last.items.at(-1)?.name).toBe(nameAt(N - 1));
      expect(last.nextCursor).toBeUndefined();
      // A page that runs past the end is cut at the end.
      const tail = expectStatus(await children(alice.client, dir, { limit: 500, offset: N - 10 }), 200).body;
      expect(names(tail.items)).toEqual(Array.from({ length: 10 }, (_, k) => nameAt(N - 10 + k)));
    });

    it('opens 70% (a scrollbar drag) and continues from there by cursor', async () => {
      const at = Math.floor(N * 0.7);
      const page = expectStatus(await children(alice.client, dir, { limit: 500, offset: at }), 200).body;
      expect(names(page.items)).toEqual(Array.from({ length: 500 }, (_, k) => nameAt(at + k)));
      const next = expectStatus(
        await children(alice.client, dir, { limit: 500, cursor: page.nextCursor ?? '' }),
        200,
      ).body;
      expect(next.items[0]?.name).toBe(nameAt(at + 500));
      expect(next.items.at(-1)?.name).toBe(nameAt(at + 999));
    });

    it('the same positions in descending order, and the boundary between collections and objects', async () => {
      // Descending: collections first (c-11 .. c-00), then the objects from the highest name down.
      const descAt = (p: number): string => (p < DIRS ? nameAt(DIRS - 1 - p) : nameAt(N - 1 - p + DIRS));
      const end = expectStatus(
        await children(alice.client, dir, { order: 'desc', limit: 20, offset: N - 15 }),
        200,
      ).body;
      expect(names(end.items)).toEqual(Array.from({ length: 15 }, (_, k) => descAt(N - 15 + k)));
      expect(end.items.at(-1)?.name).toBe('f-000000');
      for (const order of ['asc', 'desc'] as const) {
        const at = order === 'asc' ? nameAt : descAt;
        const boundary = expectStatus(
          await children(alice.client, dir, { order, limit: 4, offset: DIRS - 2 }),
          200,
        ).body;
        expect(names(boundary.items), order).toEqual([0, 1, 2, 3].map((k) => at(DIRS - 2 + k)));
      }
    });

    it('sorted by size (with ties), an offset slice equals the same slice of the whole order', async () => {
      for (const order of ['asc', 'desc'] as const) {
        for (const at of [DIRS + 3, 31_000, 88_888, N - 7]) {
          const page = expectStatus(
            await children(alice.client, dir, { sort: 'size', order, limit: 7, offset: at }),
            200,
          ).body;
          const dirText = order === 'asc' ? 'ASC' : 'DESC';
          const expected = await site.query<{ name: string }>(
            `SELECT name FROM data_objects WHERE collection_id = (SELECT id FROM collections WHERE path = $1)
              ORDER BY size ${dirText}, name ${dirText}, id ${dirText} OFFSET $2 LIMIT 7`,
            [dir, at - DIRS],
          );
          expect(names(page.items), `${order} at ${at}`).toEqual(expected.rows.map((r) => r.name));
        }
      }
    });
  });
});
