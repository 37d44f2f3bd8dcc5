import {
  ErrorCode,
  MAX_SAVED_SEARCHES,
  type CreatedTokenDto,
  type Page,
  type SavedSearchDto,
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

describe('saved searches', () => {
  let site: TestSite;
  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
  });
  afterAll(async () => {
    await site?.close();
  });

  const URL = '/api/v1/saved-searches';

  async function save(client: TestClient, body: Record<string, unknown>): Promise<SavedSearchDto> {
    const res = await client.post<SavedSearchDto>(URL, body);
    expectStatus(res, 201);
    return res.body;
  }

  async function list(client: TestClient, query: Record<string, string | number> = {}) {
    return expectStatus(await client.get<Page<SavedSearchDto>>(URL, { query }), 200).body;
  }

  it('creates, lists, renames, changes and deletes a saved search', async () => {
    const { client }: TestUser = await site.createUser();
    expect(await list(client)).toEqual({ items: [], total: 0 });

    const before = Date.now();
    const created = await save(client, {
      name: '  FITS files  ',
      query: 'filetype = fits and size > 1e6',
      scope: '/projects/',
      kind: 'object',
    });
    expect(created).toMatchObject({
      name: 'FITS files',
      query: 'filetype = fits and size > 1e6',
      scope: '/projects',
      kind: 'object',
    });
    expect(created.id).toMatch(/^[1-9][0-9]*$/);
    expect(Date.parse(created.createdAt)).toBeGreaterThanOrEqual(before - 1000);
    expect(created.updatedAt).toBe(created.createdAt);
    // Defaults: everything (empty query) in the whole namespace, objects.
    const all = await save(client, { name: 'everything', query: '' });
    expect(all).toMatchObject({ query: '', scope: '/', kind: 'object' });

    expect(await list(client)).toEqual({ items: [created, all], total: 2 });

    const renamed = await client.patch<SavedSearchDto>(`${URL}/${created.id}`, { name: 'Big FITS' });
    expectStatus(renamed, 200);
    expect(renamed.body).toMatchObject({ id: created.id, name: 'Big FITS', query: created.query });
    const changed = await client.patch<SavedSearchDto>(`${URL}/${created.id}`, {
      query: 'filetype = fits',
      kind: 'collection',
    });
    expectStatus(changed, 200);
    expect(changed.body).toMatchObject({ name: 'Big FITS', query: 'filetype = fits', kind: 'collection' });
    expect(Date.parse(changed.body.updatedAt)).toBeGreaterThanOrEqual(Date.parse(created.updatedAt));
    // Listed by name: "Big FITS" before "everything" (byte order).
    expect((await list(client)).items.map((s) => s.name)).toEqual(['Big FITS', 'everything']);

    expectStatus(await client.delete(`${URL}/${created.id}`), 204);
    expect((await list(client)).items.map((s) => s.id)).toEqual([all.id]);
    expectError(await client.delete(`${URL}/${created.id}`), 404, ErrorCode.NotFound);
    expectError(await client.patch(`${URL}/${created.id}`, { name: 'x' }), 404, ErrorCode.NotFound);
  });

  it('is stored as a replicated catalog row with an id from the site’s range', async () => {
    const { client, user } = await site.createUser();
    const created = await save(client, { name: 'replicated', query: 'a = 1' });
    const row = await site.query<{ user_id: string }>(
      'SELECT user_id::text FROM saved_searches WHERE id = $1',
      [created.id],
    );
    expect(row.rows).toEqual([{ user_id: user.id }]);
    const captured = await site.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM repl_changes WHERE tbl = 'saved_searches' AND row_key = $1`,
      [created.id],
    );
    const versions = await site.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM repl_versions WHERE tbl = 'saved_searches' AND row_key = $1`,
      [created.id],
    );
    // Captured for the peers (still in repl_changes, or already extracted to the log).
    expect(Number(captured.rows[0]?.n) + Number(versions.rows[0]?.n)).toBeGreaterThan(0);
    const registered = await site.query(`SELECT 1 FROM repl_tables WHERE name = 'saved_searches'`);
    expect(registered.rowCount).toBe(1);
  });

  it('refuses a query that does not parse, pointing at the position (422 INVALID_QUERY)', async () => {
    const { client } = await site.createUser();
    const bad = expectError(
      await client.post(URL, { name: 'broken', query: 'filetype = fits and (size > ' }),
      422,
      ErrorCode.InvalidQuery,
    );
    expect(bad.details?.query?.[0]).toMatch(/at position \d+/);
    expect(Number(bad.details?.position?.[0])).toBeGreaterThan(20);
    const badOperator = expectError(
      await client.post(URL, { name: 'broken', query: 'size >> 3' }),
      422,
      ErrorCode.InvalidQuery,
    );
    expect(badOperator.details?.position).toBeDefined();
    // Nothing was saved; a later fix through PATCH is checked the same way.
    expect((await list(client)).total).toBe(0);
    const ok = await save(client, { name: 'fine', query: 'size > 3' });
    expectError(await client.patch(`${URL}/${ok.id}`, { query: 'size >' }), 422, ErrorCode.InvalidQuery);
    expect((await list(client)).items[0]?.query).toBe('size > 3');
  });

  it('validates names, scopes and kinds (422 VALIDATION_FAILED keyed by field)', async () => {
    const { client } = await site.createUser();
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ name: '', query: 'a = 1' }, 'name'],
      [{ name: '   ', query: 'a = 1' }, 'name'],
      [{ name: 'x'.repeat(101), query: 'a = 1' }, 'name'],
      [{ name: 'tab\there', query: 'a = 1' }, 'name'],
      [{ name: 'no query' }, 'query'],
      [{ name: 'bad scope', query: 'a = 1', scope: 'relative/path' }, 'scope'],
      [{ name: 'dots', query: 'a = 1', scope: '/home/../etc' }, 'scope'],
      [{ name: 'bad kind', query: 'a = 1', kind: 'replica' }, 'kind'],
    ];
    for (const [body, field] of cases) {
      const err = expectError(await client.post(URL, body), 422, ErrorCode.ValidationFailed);
      expect(Object.keys(err.details ?? {}), JSON.stringify(body)).toContain(field);
    }
    const s = await save(client, { name: 'ok', query: 'a = 1' });
    expectError(await client.patch(`${URL}/${s.id}`, {}), 422, ErrorCode.ValidationFailed);
    expectError(await client.patch(`${URL}/not-an-id`, { name: 'x' }), 422, ErrorCode.ValidationFailed);
    expectError(await client.get(URL, { query: { limit: 0 } }), 422, ErrorCode.ValidationFailed);
    expectError(await client.get(URL, { query: { cursor: 'garbage' } }), 422, ErrorCode.InvalidCursor);
  });

  it('refuses a second search with the same name (409 NAME_TAKEN), for create and rename', async () => {
    const { client } = await site.createUser();
    const a = await save(client, { name: 'mine', query: 'a = 1' });
    const b = await save(client, { name: 'other', query: 'b = 2' });
    const taken = expectError(
      await client.post(URL, { name: 'mine', query: 'c = 3' }),
      409,
      ErrorCode.NameTaken,
    );
    expect(taken.details?.name).toBeDefined();
    expectError(await client.patch(`${URL}/${b.id}`, { name: 'mine' }), 409, ErrorCode.NameTaken);
    // Renaming a search to its own name is no clash.
    expectStatus(await client.patch(`${URL}/${a.id}`, { name: 'mine', query: 'a = 2' }), 200);
  });

  it('each user sees and changes only their own searches', async () => {
    const [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    const admin = await site.admin();
    const alices = await save(alice.client, { name: 'shared name', query: 'owner = alice' });
    // The same name is fine for another user.
    const bobs = await save(bob.client, { name: 'shared name', query: 'owner = bob' });

    expect((await list(alice.client)).items.map((s) => s.id)).toEqual([alices.id]);
    expect((await list(bob.client)).items.map((s) => s.id)).toEqual([bobs.id]);
    expect((await list(admin)).items.map((s) => s.id)).not.toContain(alices.id);

    // Someone else's id answers like a missing one, and nothing changes.
    expectError(await bob.client.patch(`${URL}/${alices.id}`, { name: 'mine now' }), 404, ErrorCode.NotFound);
    expectError(await bob.client.delete(`${URL}/${alices.id}`), 404, ErrorCode.NotFound);
    expectError(await admin.patch(`${URL}/${alices.id}`, { name: 'admin too' }), 404, ErrorCode.NotFound);
    expect((await list(alice.client)).items).toEqual([alices]);

    expectError(await site.anonymous().get(URL), 401, ErrorCode.Unauthenticated);
  });

  it('tokens: read scope lists, write scope saves; a confined token keeps scopes inside', async () => {
    const { client, username } = await site.createUser();
    const home = `/home/${username}`;
    const token = async (scope: string, collection?: string) =>
      expectStatus(
        await client.post<CreatedTokenDto>('/api/v1/tokens', { name: 't', scope, collection }),
        201,
      ).body.secret;
    const reader = site.asToken(await token('read'));
    expectStatus(await reader.get(URL), 200);
    expectError(await reader.post(URL, { name: 'r', query: '' }), 403, ErrorCode.TokenScopeInsufficient);
    const confined = site.asToken(await token('write', home));
    expectStatus(await confined.post(URL, { name: 'inside', query: '', scope: home }), 201);
    expectError(
      await confined.post(URL, { name: 'outside', query: '', scope: '/projects' }),
      403,
      ErrorCode.TokenOutsideCollection,
    );
  });

  it('pages by name with a cursor, and keeps at most MAX_SAVED_SEARCHES per user', async () => {
    const { client, user } = await site.createUser();
    const names = ['delta', 'alpha', 'charlie', 'bravo', 'echo'];
    for (const name of names) await save(client, { name, query: '' });
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await list(client, { limit: 2, ...(cursor ? { cursor } : {}) });
      expect(page.total).toBe(5);
      seen.push(...page.items.map((s) => s.name));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    expect(seen).toEqual([...names].sort());

    // Fill up to the limit directly (the API would need hundreds of requests), then one more is refused.
    await site.query(
      `INSERT INTO saved_searches (user_id, name, query)
       SELECT $1::bigint, 'bulk ' || i, '' FROM generate_series(1, $2::int) i`,
      [user.id, MAX_SAVED_SEARCHES - names.length],
    );
    const full = expectError(
      await client.post(URL, { name: 'one too many', query: '' }),
      422,
      ErrorCode.ValidationFailed,
    );
    expect(full.details?.name).toBeDefined();
  });
});
