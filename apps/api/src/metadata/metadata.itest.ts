import {
  ErrorCode,
  type BulkMetadataResult,
  type EntryTriplesDto,
  type MetadataQueryRequest,
  type MetadataQueryResult,
  type TripleDto,
} from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

describe('metadata', () => {
  let site: TestSite;
  let admin: TestClient;
  let alice: TestUser;
  let bob: TestUser;
  let base: string;

  async function upload(client: TestClient, path: string): Promise<void> {
    const res = await client.request('PUT', '/api/v1/data', {
      query: { path },
      headers: { 'content-type': 'application/octet-stream' },
      body: `bytes of ${path}`,
    });
    expectStatus(res, 201);
  }

  async function bulk(client: TestClient, body: unknown) {
    return client.post<BulkMetadataResult>('/api/v1/metadata/bulk', body);
  }

  /** Adds triples to the entry at `path` (POST /api/v1/metadata). */
  async function addTriples(client: TestClient, path: string, triples: Record<string, unknown>[]) {
    return client.post<TripleDto[]>('/api/v1/metadata', { triples }, { query: { path } });
  }

  async function query(client: TestClient, body: MetadataQueryRequest) {
    return client.post<MetadataQueryResult>('/api/v1/metadata/query', body);
  }

  async function names(client: TestClient, body: MetadataQueryRequest): Promise<string[]> {
    const res = expectStatus(await query(client, { scope: base, limit: 1000, ...body }), 200);
    return res.body.items.map((i) => i.name).sort();
  }

  // Ten objects f0..f9 in base/a (f0-f4) and base/b (f5-f9), with typed triples.
  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    admin = await site.admin();
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    base = `/home/${alice.username}/md`;
    for (const dir of ['a', 'b']) {
      expectStatus(
        await alice.client.post('/api/v1/namespace/collections', { path: `${base}/${dir}`, parents: true }),
        201,
      );
    }
    const ops = [];
    for (let i = 0; i < 10; i++) {
      const path = `${base}/${i < 5 ? 'a' : 'b'}/f${i}`;
      await upload(alice.client, path);
      ops.push({
        paths: [path],
        add: [
          { attribute: 'filetype', value: i % 2 === 0 ? 'fits' : 'hdf5' },
          { attribute: 'size', value: i * 1000, unit: 'bytes' },
          { attribute: 'dateOfCreation', value: `2020-01-${String(i + 1).padStart(2, '0')}`, type: 'time' },
          { attribute: 'project', value: i < 3 ? 'coastal-erosion' : i < 6 ? 'coast-guard' : 'hurricane' },
        ],
      });
    }
    // f9 has two projects (many values per attribute).
    ops.push({ paths: [`${base}/b/f9`], add: [{ attribute: 'project', value: 'coastal-erosion' }] });
    const res = expectStatus(await bulk(alice.client, { operations: ops }), 200);
    expect(res.body).toEqual({ targets: 10, added: 41, updated: 0, removed: 0 });
  });
  afterAll(async () => {
    await site?.close();
  });

  describe('one object', () => {
    it('adds, lists, changes and removes triples; values are typed; identical triples are not doubled', async () => {
      const path = `${base}/a/f0`;
      const added = expectStatus(
        await addTriples(alice.client, path, [
          { attribute: 'note', value: 'first' },
          { attribute: 'note', value: 'second' },
          { attribute: 'note', value: 'first' },
        ]),
        201,
      ).body;
      expect(added.map((t) => t.value)).toEqual(['first', 'second']);
      const again = expectStatus(
        await addTriples(alice.client, path, [{ attribute: 'note', value: 'first' }]),
        201,
      ).body;
      expect(again).toEqual([]);
      const list = expectStatus(
        await alice.client.get<EntryTriplesDto>('/api/v1/metadata', { query: { path } }),
        200,
      ).body;
      expect(list.kind).toBe('object');
      const size = list.triples.find((t) => t.attribute === 'size')!;
      expect(size).toMatchObject({ value: 0, type: 'number', unit: 'bytes' });
      expect(list.triples.find((t) => t.attribute === 'dateOfCreation')).toMatchObject({
        value: '2020-01-01T00:00:00.000Z',
        type: 'time',
      });
      const changed = expectStatus(
        await alice.client.patch<TripleDto>(`/api/v1/metadata/triples/${added[1]!.id}`, {
          value: 42,
          unit: 'm',
        }),
        200,
      ).body;
      expect(changed).toMatchObject({ id: added[1]!.id, value: 42, type: 'number', unit: 'm' });
      expectStatus(await alice.client.delete(`/api/v1/metadata/triples/${added[0]!.id}`), 204);
      expectStatus(await alice.client.delete(`/api/v1/metadata/triples/${added[1]!.id}`), 204);
      expectError(
        await alice.client.delete(`/api/v1/metadata/triples/${added[1]!.id}`),
        404,
        ErrorCode.NotFound,
      );
      const after = expectStatus(
        await alice.client.get<EntryTriplesDto>('/api/v1/metadata', { query: { path } }),
        200,
      ).body;
      expect(after.triples.filter((t) => t.attribute === 'note')).toEqual([]);
    });

    it('tags collections too', async () => {
      const path = `${base}/a`;
      expectStatus(await addTriples(alice.client, path, [{ attribute: 'campaign', value: 'spring' }]), 201);
      const list = expectStatus(
        await alice.client.get<EntryTriplesDto>('/api/v1/metadata', { query: { path } }),
        200,
      ).body;
      expect(list).toMatchObject({
        kind: 'collection',
        triples: [{ attribute: 'campaign', value: 'spring' }],
      });
      expect(await names(alice.client, { kind: 'collection', q: 'campaign = spring' })).toEqual(['a']);
    });

    it('refuses bad attribute names, values and unknown paths with clear codes', async () => {
      const path = `${base}/a/f1`;
      const bad = expectError(
        await addTriples(alice.client, path, [{ attribute: '1bad name', value: 'x' }]),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(Object.keys(bad.details ?? {})).toContain('triples.0.attribute');
      expectError(
        await addTriples(alice.client, path, [{ attribute: 'when', value: 'yesterday', type: 'time' }]),
        422,
        ErrorCode.ValidationFailed,
      );
      expectError(
        await alice.client.get('/api/v1/metadata', { query: { path: `${base}/a/nope` } }),
        404,
        ErrorCode.NotFound,
      );
    });

    it('needs read to list and write to change', async () => {
      const path = `${base}/a/f1`;
      expectError(
        await bob.client.get('/api/v1/metadata', { query: { path } }),
        403,
        ErrorCode.PermissionDenied,
      );
      expectError(
        await addTriples(bob.client, path, [{ attribute: 'x', value: 'y' }]),
        403,
        ErrorCode.PermissionDenied,
      );
      const list = (await alice.client.get<EntryTriplesDto>('/api/v1/metadata', { query: { path } })).body;
      expectError(
        await bob.client.delete(`/api/v1/metadata/triples/${list.triples[0]!.id}`),
        404,
        ErrorCode.NotFound,
      );
    });
  });

  describe('query semantics', () => {
    it('compares text, numbers and times with every operator', async () => {
      expect(await names(alice.client, { q: 'filetype = fits' })).toEqual(['f0', 'f2', 'f4', 'f6', 'f8']);
      expect(await names(alice.client, { q: 'filetype != fits' })).toEqual(['f1', 'f3', 'f5', 'f7', 'f9']);
      // Numbers compare as numbers (9000 > 10000 would hold as text).
      expect(await names(alice.client, { q: 'size > 7000' })).toEqual(['f8', 'f9']);
      expect(await names(alice.client, { q: 'size >= 7000' })).toEqual(['f7', 'f8', 'f9']);
      expect(await names(alice.client, { q: 'size < 2000' })).toEqual(['f0', 'f1']);
      expect(await names(alice.client, { q: 'size <= 2e3' })).toEqual(['f0', 'f1', 'f2']);
      expect(await names(alice.client, { q: 'size between 3000 and 5000' })).toEqual(['f3', 'f4', 'f5']);
      expect(
        await names(alice.client, { q: 'dateOfCreation between 2020-01-02 and 2020-01-03T00:00:00Z' }),
      ).toEqual(['f1', 'f2']);
      expect(await names(alice.client, { q: 'dateOfCreation > 2020-01-09' })).toEqual(['f9']);
      expect(await names(alice.client, { q: "project like 'coast%'" })).toEqual([
        'f0',
        'f1',
        'f2',
        'f3',
        'f4',
        'f5',
        'f9',
      ]);
      expect(await names(alice.client, { q: "project like 'coast_guard'" })).toEqual(['f3', 'f4', 'f5']);
      expect(await names(alice.client, { q: 'project prefix coastal' })).toEqual(['f0', 'f1', 'f2', 'f9']);
      expect(await names(alice.client, { q: 'project in (hurricane, coast-guard)' })).toEqual([
        'f3',
        'f4',
        'f5',
        'f6',
        'f7',
        'f8',
        'f9',
      ]);
      expect(await names(alice.client, { q: 'size in (0, 9000)' })).toEqual(['f0', 'f9']);
      expect(await names(alice.client, { q: 'size exists' })).toHaveLength(10);
      expect(await names(alice.client, { q: 'nothing exists' })).toEqual([]);
      // A text value does not equal a number of the same digits.
      expect(await names(alice.client, { q: "size = '1000'" })).toEqual([]);
      expect(await names(alice.client, { q: 'size = 1000' })).toEqual(['f1']);
      // Many values: f9 is in both projects; != means "has the attribute, and no value equal".
      expect(await names(alice.client, { q: 'project = hurricane and project = coastal-erosion' })).toEqual([
        'f9',
      ]);
      expect(await names(alice.client, { q: 'project != hurricane' })).toEqual([
        'f0',
        'f1',
        'f2',
        'f3',
        'f4',
        'f5',
      ]);
    });

    it('combines with and/or and parentheses, in both forms', async () => {
      expect(
        await names(alice.client, { q: 'filetype = fits and size > 3000 or project = coastal-erosion' }),
      ).toEqual(['f0', 'f1', 'f2', 'f4', 'f6', 'f8', 'f9']);
      expect(
        await names(alice.client, { q: 'filetype = fits and (size > 3000 or project = coastal-erosion)' }),
      ).toEqual(['f0', 'f2', 'f4', 'f6', 'f8']);
      expect(
        await names(alice.client, {
          where: {
            or: [
              {
                and: [
                  { attribute: 'filetype', op: '=', value: 'hdf5' },
                  { attribute: 'size', op: '<', value: 4000 },
                ],
              },
              { attribute: 'dateOfCreation', op: '>=', value: '2020-01-10', type: 'time' },
            ],
          },
        }),
      ).toEqual(['f1', 'f3', 'f9']);
    });

    it('scopes to a collection subtree, sorts, pages with a stable cursor, counts and facets', async () => {
      expect(await names(alice.client, { q: 'size exists', scope: `${base}/b` })).toEqual([
        'f5',
        'f6',
        'f7',
        'f8',
        'f9',
      ]);
      // Pages of one query: the same options, then each page's cursor.
      const byName: MetadataQueryRequest = {
        q: 'size exists',
        scope: base,
        sort: 'name',
        order: 'desc',
        limit: 4,
      };
      const first = expectStatus(
        await query(alice.client, { ...byName, facets: ['project', 'filetype'] }),
        200,
      ).body;
      expect(first.total).toBe(10);
      expect(first.items.map((i) => i.name)).toEqual(['f9', 'f8', 'f7', 'f6']);
      expect(first.items[0]!.path).toBe(`${base}/b/f9`);
      expect(first.facets!.project).toEqual([
        { value: 'coastal-erosion', count: 4 },
        { value: 'hurricane', count: 4 },
        { value: 'coast-guard', count: 3 },
      ]);
      expect(first.facets!.filetype).toEqual([
        { value: 'fits', count: 5 },
        { value: 'hdf5', count: 5 },
      ]);
      const second = expectStatus(
        await query(alice.client, { ...byName, cursor: first.nextCursor }),
        200,
      ).body;
      expect(second.items.map((i) => i.name)).toEqual(['f5', 'f4', 'f3', 'f2']);
      const third = expectStatus(
        await query(alice.client, { ...byName, cursor: second.nextCursor }),
        200,
      ).body;
      expect(third.items.map((i) => i.name)).toEqual(['f1', 'f0']);
      expect(third.nextCursor).toBeUndefined();
      const bySize = expectStatus(
        await query(alice.client, {
          q: 'size exists',
          scope: base,
          sort: 'size',
          limit: 3,
          withTriples: true,
        }),
        200,
      ).body;
      expect(bySize.items.map((i) => i.name)).toEqual(
        ['f0', 'f1', 'f2', 'f3', 'f4', 'f5', 'f6', 'f7', 'f8', 'f9'].slice(0, 3),
      );
      expect(bySize.items[0]!.triples!.map((t) => t.attribute)).toContain('filetype');
      // A cursor of another sort is refused.
      expectError(
        await query(alice.client, {
          q: 'size exists',
          sort: 'size',
          order: 'desc',
          cursor: first.nextCursor,
        }),
        422,
        ErrorCode.InvalidCursor,
      );
      // Facets over a number attribute come back as numbers.
      const f = expectStatus(
        await query(alice.client, { q: 'size < 2000', scope: base, limit: 0, facets: ['size'] }),
        200,
      ).body;
      expect(f.items).toEqual([]);
      expect(f.facets!.size).toEqual([
        { value: 0, count: 1 },
        { value: 1000, count: 1 },
      ]);
    });

    it('keeps pages stable while matching objects are added', async () => {
      const dir = `${base}/c`;
      expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: dir }), 201);
      for (const n of ['m1', 'm3', 'm5', 'm7']) await upload(alice.client, `${dir}/${n}`);
      const tag = { attribute: 'batch', value: 'pg' };
      expectStatus(await bulk(alice.client, { operations: [{ under: dir, add: [tag] }] }), 200);
      const body = { q: 'batch = pg', scope: dir, limit: 2 } as const;
      const p1 = expectStatus(await query(alice.client, body), 200).body;
      expect(p1.items.map((i) => i.name)).toEqual(['m1', 'm3']);
      // Meanwhile: new matching objects before and after the cursor.
      await Promise.all(['m0', 'm2', 'm4', 'm9'].map((n) => upload(alice.client, `${dir}/${n}`)));
      expectStatus(
        await bulk(alice.client, {
          operations: [{ paths: ['m0', 'm2', 'm4', 'm9'].map((n) => `${dir}/${n}`), add: [tag] }],
        }),
        200,
      );
      const seen = p1.items.map((i) => i.name);
      let cursor = p1.nextCursor;
      while (cursor) {
        const p = expectStatus(await query(alice.client, { ...body, cursor }), 200).body;
        seen.push(...p.items.map((i) => i.name));
        cursor = p.nextCursor;
      }
      // Nothing twice, nothing that existed before skipped; newcomers after the cursor show up.
      expect(seen).toEqual(['m1', 'm3', 'm4', 'm5', 'm7', 'm9']);
    });

    it('leaves out trashed objects and includes restored ones', async () => {
      const del = expectStatus(
        await alice.client.delete<{ id: string }>('/api/v1/namespace', { query: { path: `${base}/a/f0` } }),
        200,
      );
      expect(await names(alice.client, { q: 'filetype = fits' })).toEqual(['f2', 'f4', 'f6', 'f8']);
      const facet = expectStatus(
        await query(admin, { q: 'filetype = fits', limit: 0, facets: ['filetype'], scope: '/' }),
        200,
      ).body;
      expect(facet.facets!.filetype).toEqual([{ value: 'fits', count: 4 }]);
      // The administrator's totals over the whole catalog (counted from the indexes, trashed objects
      // left out by an anti-join) agree with the items, for a leaf, a conjunction answered from the
      // terms, and a disjunction.
      const conditions = [
        'filetype = fits',
        "filetype = fits and project = 'coastal-erosion'",
        "filetype = fits and project = 'coastal-erosion' and size exists",
        "filetype = fits or project = 'hurricane'",
      ];
      const totals = async (): Promise<void> => {
        for (const q of conditions) {
          const page = expectStatus(await query(admin, { q, scope: '/', limit: 200 }), 200).body;
          expect(page.nextCursor, q).toBeUndefined();
          expect(page.total, q).toBe(page.items.length);
          // The total of a request without a page agrees too.
          const counted = expectStatus(await query(admin, { q, scope: '/', limit: 0 }), 200).body;
          expect(counted.total, q).toBe(page.items.length);
        }
      };
      await totals();
      const all = expectStatus(
        await query(admin, { q: 'filetype = fits', scope: '/', limit: 200 }),
        200,
      ).body;
      expect(all.items.map((i) => i.path)).not.toContain(`${base}/a/f0`);
      expectStatus(await alice.client.post(`/api/v1/trash/${del.body.id}/restore`), 200);
      expect(await names(alice.client, { q: 'filetype = fits' })).toEqual(['f0', 'f2', 'f4', 'f6', 'f8']);
      await totals();
    });
  });

  describe('permissions', () => {
    it('returns only what the caller may read; grants widen it', async () => {
      expect(await names(bob.client, { q: 'size exists' })).toEqual([]);
      const none = expectStatus(await query(bob.client, { q: 'size exists', facets: ['project'] }), 200).body;
      expect(none.total).toBe(0);
      expect(none.facets!.project).toEqual([]);
      expectStatus(
        await alice.client.put('/api/v1/permissions', {
          path: `${base}/b`,
          user: bob.username,
          level: 'read',
        }),
        200,
      );
      expect(await names(bob.client, { q: 'size exists' })).toEqual(['f5', 'f6', 'f7', 'f8', 'f9']);
      expect((await query(bob.client, { q: 'size exists', scope: '/' })).body.total).toBe(5);
      expect((await query(bob.client, { q: 'size exists', scope: '/', limit: 0 })).body.total).toBe(5);
      const second = expectStatus(
        await query(bob.client, {
          q: 'size exists',
          scope: '/',
          limit: 2,
          cursor: (await query(bob.client, { q: 'size exists', scope: '/', limit: 2 })).body.nextCursor,
        }),
        200,
      ).body;
      expect(second.items).toHaveLength(2);
      expect(second.total).toBe(5);
      // The administrator sees everything.
      expect((await query(admin, { q: 'size exists', scope: base })).body.total).toBe(10);
      // Reading is not writing.
      expectError(
        await bulk(bob.client, {
          operations: [{ paths: [`${base}/b/f5`], add: [{ attribute: 'x', value: 'y' }] }],
        }),
        403,
        ErrorCode.PermissionDenied,
      );
    });
  });

  describe('bulk tagging', () => {
    it('applies to everything under a collection and removes again', async () => {
      const res = expectStatus(
        await bulk(alice.client, {
          operations: [{ under: base, add: [{ attribute: 'reviewed', value: 'yes' }] }],
        }),
        200,
      );
      expect(res.body.added).toBeGreaterThanOrEqual(10);
      expect(await names(alice.client, { q: 'reviewed = yes and size exists' })).toHaveLength(10);
      const set = expectStatus(
        await bulk(alice.client, {
          operations: [{ paths: [`${base}/a/f1`, `${base}/a/f3`], set: [{ attribute: 'size', value: 5 }] }],
        }),
        200,
      );
      expect(set.body).toMatchObject({ targets: 2, updated: 2, added: 0, removed: 0 });
      expect(await names(alice.client, { q: 'size = 5' })).toEqual(['f1', 'f3']);
      const removed = expectStatus(
        await bulk(alice.client, { operations: [{ under: base, remove: [{ attribute: 'reviewed' }] }] }),
        200,
      );
      expect(removed.body.removed).toBe(res.body.added);
      expect(await names(alice.client, { q: 'reviewed exists' })).toEqual([]);
    });

    it('sets an attribute: values already there stay, the others are updated in place, removed or added', async () => {
      const dir = `/home/${alice.username}/set-md`;
      expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: dir }), 201);
      const [s1, s2] = [`${dir}/s1`, `${dir}/s2`];
      await upload(alice.client, s1);
      await upload(alice.client, s2);
      const band = (value: string) => ({ attribute: 'band', value });
      expectStatus(
        await bulk(alice.client, {
          operations: [
            { paths: [s1], add: [band('a'), band('b'), band('c'), { attribute: 'other', value: 'x' }] },
          ],
        }),
        200,
      );
      const triples = async (path: string): Promise<TripleDto[]> =>
        expectStatus(await alice.client.get<EntryTriplesDto>('/api/v1/metadata', { query: { path } }), 200)
          .body.triples;
      const idOf = (list: TripleDto[], attribute: string, value: string) =>
        list.find((t) => t.attribute === attribute && t.value === value)?.id;
      const before = await triples(s1);

      const res = expectStatus(
        await bulk(alice.client, { operations: [{ paths: [s1, s2], set: [band('b'), band('d')] }] }),
        200,
      );
      // s1: b stays, a (the older of a and c) becomes d, c goes; s2: b and d are added.
      expect(res.body).toEqual({ targets: 2, updated: 1, removed: 1, added: 2 });
      const after = await triples(s1);
      const values = (list: TripleDto[]) => list.map((t) => `${t.attribute}=${t.value}`).sort();
      expect(values(after)).toEqual(['band=b', 'band=d', 'other=x']);
      expect(idOf(after, 'band', 'b')).toBe(idOf(before, 'band', 'b'));
      expect(idOf(after, 'band', 'd')).toBe(idOf(before, 'band', 'a'));
      expect(idOf(after, 'other', 'x')).toBe(idOf(before, 'other', 'x'));
      expect(values(await triples(s2))).toEqual(['band=b', 'band=d']);
    });

    it('keeps values with backslashes and other characters COPY treats specially as they were sent', async () => {
      const dir = `/home/${alice.username}/odd-md`;
      expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: dir }), 201);
      const path = `${dir}/odd`;
      await upload(alice.client, path);
      const values = ['C:\\data\\new', '\\N', '\\.', 'a\\tb', 'Zürich ✓', 'it\'s "quoted"'];
      const res = expectStatus(
        await bulk(alice.client, {
          operations: [
            { paths: [path], add: values.map((value) => ({ attribute: 'odd', value, unit: value })) },
          ],
        }),
        200,
      );
      expect(res.body.added).toBe(values.length);
      const listed = expectStatus(
        await alice.client.get<EntryTriplesDto>('/api/v1/metadata', { query: { path } }),
        200,
      ).body.triples;
      expect(listed.map((t) => [t.value, t.unit]).sort()).toEqual(values.map((v) => [v, v]).sort());
    });

    it('adds a triple once to a target that several operations name, and not again if it is there', async () => {
      const f5 = `${base}/b/f5`;
      const f6 = `${base}/b/f6`;
      const tag = { attribute: 'batchmark', value: 'one' };
      const res = expectStatus(
        await bulk(alice.client, {
          operations: [
            { paths: [f5, f6], add: [tag, { ...tag }] },
            { paths: [f5], add: [tag, { attribute: 'batchmark', value: 'two' }] },
            { under: `${base}/b`, include: 'objects', add: [tag] },
          ],
        }),
        200,
      );
      const tagged = await names(alice.client, { q: 'batchmark exists' });
      expect(tagged).toEqual(['f5', 'f6', 'f7', 'f8', 'f9']);
      expect(res.body.added).toBe(6);
      expect(await names(alice.client, { q: 'batchmark = two' })).toEqual(['f5']);
      const listed = expectStatus(
        await alice.client.get<EntryTriplesDto>('/api/v1/metadata', { query: { path: f5 } }),
        200,
      ).body.triples.filter((t) => t.attribute === 'batchmark');
      expect(listed.map((t) => t.value).sort()).toEqual(['one', 'two']);
      const again = expectStatus(
        await bulk(alice.client, { operations: [{ paths: [f5, f6], add: [tag] }] }),
        200,
      );
      expect(again.body.added).toBe(0);
    });

    it('adds a table of triples: one value per path and column, null for none', async () => {
      const paths = [`${base}/a/f0`, `${base}/a/f1`, `${base}/a`, `${base}/a/f0`];
      const res = expectStatus(
        await bulk(alice.client, {
          operations: [
            {
              paths,
              columns: [
                { attribute: 'tabular', values: ['t0', 't1', 'dir', 't0'] },
                { attribute: 'exposure', unit: 's', values: [30, null, 5, null] },
                {
                  attribute: 'observed',
                  type: 'time',
                  values: ['2024-05-01T10:00:00Z', '2024-05-02', null, null],
                },
                { attribute: 'tabular', values: [null, 'extra', null, 't0-again'] },
              ],
            },
          ],
        }),
        200,
      );
      // f0: tabular t0 (twice in the table: once), exposure, observed, t0-again; f1: t1, observed,
      // extra; the collection: dir, exposure.
      expect(res.body).toEqual({ targets: 3, added: 9, updated: 0, removed: 0 });
      expect(await names(alice.client, { q: 'tabular exists and observed < 2024-05-02T00:00:01Z' })).toEqual([
        'f0',
        'f1',
      ]);
      expect(await names(alice.client, { q: 'exposure > 10' })).toEqual(['f0']);
      const f0 = expectStatus(
        await alice.client.get<EntryTriplesDto>('/api/v1/metadata', { query: { path: `${base}/a/f0` } }),
        200,
      ).body.triples.filter((t) => ['tabular', 'exposure', 'observed'].includes(t.attribute));
      expect(f0.map((t) => [t.attribute, t.value, t.unit]).sort()).toEqual([
        ['exposure', 30, 's'],
        ['observed', '2024-05-01T10:00:00.000Z', null],
        ['tabular', 't0', null],
        ['tabular', 't0-again', null],
      ]);
      const dir = expectStatus(
        await alice.client.get<EntryTriplesDto>('/api/v1/metadata', { query: { path: `${base}/a` } }),
        200,
      ).body.triples.filter((t) => ['tabular', 'exposure', 'observed'].includes(t.attribute));
      expect(dir.map((t) => [t.attribute, t.value]).sort()).toEqual([
        ['exposure', 5],
        ['tabular', 'dir'],
      ]);

      // A column of the wrong length, a bad value, or columns without paths: 422 naming the place.
      const short = expectError(
        await bulk(alice.client, {
          operations: [{ paths: paths.slice(0, 2), columns: [{ attribute: 'tabular', values: ['x'] }] }],
        }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(Object.keys(short.details!)).toEqual(['operations.0.columns.0.values']);
      expect(String(short.details!['operations.0.columns.0.values'])).toMatch(/1 values for 2 paths/);
      const bad = expectError(
        await bulk(alice.client, {
          operations: [
            { paths: [`${base}/a/f2`], add: [{ attribute: 'tabular', value: 'ok' }] },
            {
              paths: paths.slice(0, 2),
              columns: [{ attribute: 'exposure', type: 'number', values: [1, 'many'] }],
            },
          ],
        }),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(Object.keys(bad.details!)).toEqual(['operations.1.columns.0.values.1']);
      expectError(
        await bulk(alice.client, {
          operations: [{ under: `${base}/a`, columns: [{ attribute: 'tabular', values: [] }] }],
        }),
        422,
        ErrorCode.ValidationFailed,
      );
      // Nothing of the refused requests was written.
      expect(await names(alice.client, { q: "tabular = 'ok' or tabular = x" })).toEqual([]);
    });

    it('is all or nothing: one unknown path or one bad triple changes nothing', async () => {
      const tag = { attribute: 'atomic', value: 'x' };
      const missing = expectError(
        await bulk(alice.client, {
          operations: [
            { paths: [`${base}/a/f2`], add: [tag] },
            { paths: [`${base}/a/missing`], add: [tag] },
          ],
        }),
        404,
        ErrorCode.NotFound,
      );
      expect(missing.details!.paths).toEqual([`${base}/a/missing`]);
      expectError(
        await bulk(alice.client, {
          operations: [{ paths: [`${base}/a/f2`], add: [tag, { attribute: 'bad attr', value: 1 }] }],
        }),
        422,
        ErrorCode.ValidationFailed,
      );
      // A failure inside the transaction (an object purged between the path lookup and the insert is
      // simulated by a trigger that fails on the second target) rolls back the first.
      await site.query(`CREATE FUNCTION fail_second() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN IF NEW.attribute = 'atomic' AND NEW.value = 'boom' THEN RAISE EXCEPTION 'boom'; END IF; RETURN NEW; END $$`);
      await site.query(
        `CREATE TRIGGER fail_second BEFORE INSERT ON metadata_triples FOR EACH ROW EXECUTE FUNCTION fail_second()`,
      );
      try {
        const res = await bulk(alice.client, {
          operations: [
            { paths: [`${base}/a/f2`], add: [tag] },
            { paths: [`${base}/a/f4`], add: [{ attribute: 'atomic', value: 'boom' }] },
          ],
        });
        expect(res.status).toBe(500);
        // The same for objects with no triple yet, whose rows go by COPY: the failing row comes after
        // the first chunk of rows was sent.
        const fresh = `/home/${alice.username}/atomic-md`;
        expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: fresh }), 201);
        for (const n of ['n1', 'n2', 'n3']) await upload(alice.client, `${fresh}/${n}`);
        const many = Array.from({ length: 1000 }, (_, i) => ({ attribute: 'atomic', value: `v${i}` }));
        const copied = await bulk(alice.client, {
          operations: [
            { paths: [`${fresh}/n1`, `${fresh}/n2`], add: many },
            { paths: [`${fresh}/n3`], add: [{ attribute: 'atomic', value: 'boom' }] },
          ],
        });
        expect(copied.status).toBe(500);
        expect(await names(alice.client, { q: 'atomic exists', scope: fresh })).toEqual([]);
      } finally {
        await site.query('DROP TRIGGER fail_second ON metadata_triples');
      }
      expect(await names(alice.client, { q: 'atomic exists' })).toEqual([]);
      // Afterwards the same request without the bad triple goes through.
      const again = await bulk(alice.client, {
        operations: [
          { paths: [`/home/${alice.username}/atomic-md/n1`], add: [{ attribute: 'atomic', value: 'ok' }] },
        ],
      });
      expect(expectStatus(again, 200).body.added).toBe(1);
    });
  });

  describe('the text form', () => {
    it('points at the offending position', async () => {
      const err = expectError(
        await query(alice.client, { q: 'filetype = fits and size >' }),
        422,
        ErrorCode.InvalidQuery,
      );
      expect(err.message).toContain('position 27');
      expect(err.details!.position).toEqual(['26']);
      const e2 = expectError(
        await query(alice.client, { q: "project like 'coast" }),
        422,
        ErrorCode.InvalidQuery,
      );
      expect(e2.message).toContain('unterminated string');
      expectError(
        await query(alice.client, { where: { attribute: 'x', op: 'between', value: [1] } }),
        422,
        ErrorCode.InvalidQuery,
      );
      expectError(await query(alice.client, { where: { and: [] } }), 422, ErrorCode.InvalidQuery);
      expectError(
        await query(alice.client, { q: 'a = 1', where: { attribute: 'a', op: 'exists' } }),
        422,
        ErrorCode.ValidationFailed,
      );
    });

    it('refuses a field it does not know instead of matching everything', async () => {
      // `text` is not a field (the text form is `q`): dropped, it would have queried everything.
      const err = expectError(
        await query(alice.client, { text: 'filetype = fits' } as MetadataQueryRequest),
        422,
        ErrorCode.ValidationFailed,
      );
      expect(JSON.stringify(err)).toContain('text');
    });
  });
});
