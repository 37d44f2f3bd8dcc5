import {
  MAX_NAME_BYTES,
  MAX_PATH_BYTES,
  type EntryDetailDto,
  type EntryDto,
  type Page,
  type TrashEntryDto,
} from '@tributary/shared';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { incompressibleNames, uniqueName } from '@tributary/testkit';
import {
  expectStatus,
  startTestSite,
  type TestClient,
  type TestSite,
  type TestUser,
} from '../test/test-site';

/**
 * Every path the rules allow (packages/shared/src/paths.ts: names up to 255 bytes, paths up to 4,096)
 * can be stored, listed, renamed, trashed and restored; no index entry outgrows PostgreSQL's btree
 * limit (2,704 bytes) on the way.
 */
describe('paths at the length limits', () => {
  let site: TestSite;
  let alice: TestUser;
  let base: string;

  beforeAll(async () => {
    site = await startTestSite();
    alice = await site.createUser();
    base = `/home/${alice.username}/${uniqueName('long')}`;
  });
  afterAll(async () => {
    await site?.close();
  });

  const bytes = (s: string) => Buffer.byteLength(s, 'utf8');

  const noise = incompressibleNames(12345);

  /** `prefix` extended with names of at most 255 bytes to exactly `total` bytes (a last name of `last` bytes). */
  function pathOf(prefix: string, total: number, last: number): string {
    let path = prefix;
    while (total - bytes(path) - (last + 1) > 0) {
      const room = total - bytes(path) - (last + 1) - 1;
      // Leave either nothing or room for a whole segment of at least one byte.
      const n = room <= MAX_NAME_BYTES ? room : Math.min(MAX_NAME_BYTES, room - 2);
      path += '/' + noise(Math.max(1, n));
    }
    path += '/' + noise(last);
    expect(bytes(path)).toBe(total);
    return path;
  }

  async function mkdirP(client: TestClient, path: string) {
    return client.post<EntryDto>('/api/v1/namespace/collections', { path, parents: true });
  }

  function put(client: TestClient, path: string, body = 'x') {
    return client.request<EntryDto>('PUT', '/api/v1/data', {
      query: { path },
      headers: { 'content-type': 'application/octet-stream' },
      body,
    });
  }

  function parentOf(path: string): string {
    return path.slice(0, path.lastIndexOf('/'));
  }

  /** `path` is the one entry its collection lists. */
  async function expectOnlyChild(path: string): Promise<void> {
    const listed = expectStatus(
      await alice.client.get<Page<EntryDto>>('/api/v1/namespace/children', {
        query: { path: parentOf(path) },
      }),
      200,
    ).body;
    expect(listed.items.map((e) => e.path)).toEqual([path]);
  }

  /** Moves `path` to the trash; its trash entry, which names the path. */
  async function trash(path: string): Promise<TrashEntryDto> {
    const entry = expectStatus(
      await alice.client.delete<TrashEntryDto>('/api/v1/namespace', { query: { path } }),
      200,
    ).body;
    expect(entry.originalPath).toBe(path);
    return entry;
  }

  it('creates, lists, renames, trashes and restores a collection at the longest path', async () => {
    const path = pathOf(base, MAX_PATH_BYTES, 40);
    const created = expectStatus(await mkdirP(alice.client, path), 201).body;
    expect(created.path).toBe(path);
    const stat = expectStatus(
      await alice.client.get<EntryDetailDto>('/api/v1/namespace/stat', { query: { path } }),
      200,
    ).body;
    expect(stat.kind).toBe('collection');
    await expectOnlyChild(path);

    // Renamed in place to another name of the same length.
    const renamed = parentOf(path) + '/' + noise(40);
    expectStatus(await alice.client.post('/api/v1/namespace/move', { from: path, to: renamed }), 200);
    expectStatus(await alice.client.get('/api/v1/namespace/stat', { query: { path: renamed } }), 200);

    const trashed = await trash(renamed);
    // The same path again while the first is in the trash.
    expectStatus(await mkdirP(alice.client, renamed), 201);
    expectStatus(await alice.client.delete('/api/v1/namespace', { query: { path: renamed } }), 200);
    expectStatus(await alice.client.post(`/api/v1/trash/${trashed.id}/restore`), 200);
    expectStatus(await alice.client.get('/api/v1/namespace/stat', { query: { path: renamed } }), 200);
  });

  it('moves a deep collection whose descendants reach the longest path', async () => {
    const top = `${base}/${uniqueName('tree')}`;
    const deepest = pathOf(top, MAX_PATH_BYTES - 10, 30);
    expectStatus(await mkdirP(alice.client, deepest), 201);
    expectStatus(await put(alice.client, `${deepest}/f`), 201);
    // Renaming `top` to a name 10 bytes longer makes the deepest path exactly 4,096 bytes.
    const movedTop = top + noise(10);
    expectStatus(await alice.client.post('/api/v1/namespace/move', { from: top, to: movedTop }), 200);
    const movedDeepest = movedTop + deepest.slice(top.length);
    expect(bytes(movedDeepest)).toBe(MAX_PATH_BYTES);
    expectStatus(await alice.client.get('/api/v1/namespace/stat', { query: { path: movedDeepest } }), 200);
  });

  it('stores, reads, renames, trashes and restores objects at the longest path and name', async () => {
    for (const [path, label] of [
      [pathOf(`${base}/${uniqueName('o')}`, MAX_PATH_BYTES, 20), 'longest path'],
      [pathOf(`${base}/${uniqueName('n')}`, 1500, MAX_NAME_BYTES), 'longest name'],
      // Four-byte characters: 63 of them are 252 bytes.
      [`${base}/${uniqueName('u')}/${'\u{1f600}'.repeat(63)}`, 'longest name in four-byte characters'],
    ] as const) {
      expectStatus(await mkdirP(alice.client, parentOf(path)), 201);
      const created = expectStatus(await put(alice.client, path, label), 201).body;
      expect(created.path, label).toBe(path);
      const read = await alice.client.get('/api/v1/data', { query: { path } });
      expect(read.text, label).toBe(label);
      await expectOnlyChild(path);
      const renamed = parentOf(path) + '/' + noise(bytes(path.slice(path.lastIndexOf('/') + 1)));
      expectStatus(await alice.client.post('/api/v1/namespace/move', { from: path, to: renamed }), 200);
      const trashed = await trash(renamed);
      expectStatus(await alice.client.post(`/api/v1/trash/${trashed.id}/restore`), 200);
      expect((await alice.client.get('/api/v1/data', { query: { path: renamed } })).text).toBe(label);
      // Metadata on it, found by path.
      expectStatus(
        await alice.client.post(
          '/api/v1/metadata',
          { triples: [{ attribute: 'len', value: label }] },
          { query: { path: renamed } },
        ),
        201,
      );
    }
  });

  it('finds collections by path through an index', async () => {
    const client = new pg.Client(site.connection);
    await client.connect();
    try {
      // A catalog of some size, so the planner weighs the indexes as it would at a real site.
      const home = `/home/${alice.username}`;
      const parent = `${home}/${uniqueName('many')}`;
      expectStatus(await mkdirP(alice.client, parent), 201);
      await client.query(
        `INSERT INTO collections (parent_id, name, path, owner_id)
         SELECT p.id, 'c' || i, p.path || '/c' || i, p.owner_id
           FROM collections p, generate_series(1, 20000) AS i WHERE p.path = $1 AND p.trash_id = 0`,
        [parent],
      );
      await client.query('ANALYZE collections');
      const path = `${parent}/c77`;
      for (const [sql, params] of [
        ['SELECT id FROM collections WHERE path = $1 AND trash_id = 0', [path]],
        [
          'SELECT id FROM collections WHERE trash_id = 0 AND path = ANY($1::text[])',
          [['/', '/home', home, path]],
        ],
      ] as const) {
        const { rows } = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${sql}`, [...params]);
        const text = rows.map((r) => r['QUERY PLAN']).join('\n');
        expect(text, `${sql}\n${text}`).toMatch(/collections_path_idx/);
      }
    } finally {
      await client.end();
    }
  });
});
