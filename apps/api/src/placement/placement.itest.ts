import {
  ErrorCode,
  type ErrorBody,
  type Page,
  type PlacementRuleDto,
  type PlacementSiteDto,
} from '@tributary/shared';
import { uniqueName } from '@tributary/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestResponse,
  type TestSite,
  type TestUser,
} from '../test/test-site';

const RULES = '/api/v1/placement/rules';

/**
 * Placement rules at one site: set, listed with what is inherited, paged, removed; who may do what
 * (own to change, read to list, nothing learnt where the caller cannot read); every bad input
 * refused with 422 naming the field and nothing written.
 */
describe('placement rules', () => {
  let site: TestSite;
  let alice: TestUser;
  let bob: TestUser;
  let proj: string;
  let sub: string;
  let file: string;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
    proj = `/home/${alice.username}/${uniqueName('proj')}`;
    sub = `${proj}/sub`;
    file = `${sub}/data.bin`;
    expectStatus(await alice.client.post('/api/v1/namespace/collections', { path: sub, parents: true }), 201);
    expectStatus(
      await alice.client.request('PUT', '/api/v1/data', {
        query: { path: file },
        headers: { 'content-type': 'application/octet-stream' },
        body: 'bytes',
      }),
      201,
    );
    // A second site in the catalog, as a peer's registration would bring it: two usable sites.
    await site.query(
      `INSERT INTO sites (id, name, id_range_start, id_range_end, is_local)
       VALUES ('tulane', 'TULANE', 2::bigint << 48, (3::bigint << 48) - 1, false)`,
    );
  });
  afterAll(async () => {
    await site?.close();
  });

  async function create(client: TestClient, body: Record<string, unknown>): Promise<PlacementRuleDto> {
    return expectStatus(await client.post<PlacementRuleDto>(RULES, body), 201).body;
  }

  async function list(client: TestClient, path: string, extra: Record<string, string> = {}) {
    return expectStatus(await client.get<Page<PlacementRuleDto>>(RULES, { query: { path, ...extra } }), 200)
      .body;
  }

  async function ruleCount(): Promise<number> {
    const res = await site.query<{ n: number }>('SELECT count(*)::int AS n FROM placement_rules');
    return res.rows[0]!.n;
  }

  it('sets a rule, lists it with the inherited ones, pages and removes it', async () => {
    const before = Date.now();
    const expiresAt = new Date(Date.now() + 86_400_000).toISOString();
    const top = await create(alice.client, {
      path: `${proj}/`,
      copies: 2,
      sites: ['lsu', 'tulane'],
      condition: 'kind = raw and size > 1e3',
      expiresAt,
    });
    expect(top).toMatchObject({
      path: proj,
      copies: 2,
      sites: ['lsu', 'tulane'],
      condition: 'kind = raw and size > 1e3',
      expiresAt,
      owner: alice.username,
      inheritedFrom: null,
    });
    expect(top.id).toMatch(/^[1-9][0-9]*$/);
    expect(Date.parse(top.createdAt)).toBeGreaterThanOrEqual(before - 1000);

    const own = await create(alice.client, { path: sub, copies: 1 });
    expect(own).toMatchObject({ path: sub, copies: 1, sites: null, condition: null, expiresAt: null });

    // On the collection itself: only its own rule; below it: its own first, then the inherited one.
    expect(await list(alice.client, proj)).toEqual({ items: [{ ...top }], total: 1 });
    const below = await list(alice.client, sub);
    expect(below.total).toBe(2);
    expect(below.items.map((r) => [r.id, r.inheritedFrom])).toEqual([
      [own.id, null],
      [top.id, proj],
    ]);

    // Paged: one at a time, the cursor leads to the second and last page.
    const first = await list(alice.client, sub, { limit: '1' });
    expect(first.items.map((r) => r.id)).toEqual([own.id]);
    expect(first.nextCursor).toBeDefined();
    const second = await list(alice.client, sub, { limit: '1', cursor: first.nextCursor! });
    expect(second.items.map((r) => r.id)).toEqual([top.id]);
    expect(second.nextCursor).toBeUndefined();
    expectError(
      await alice.client.get(RULES, { query: { path: sub, cursor: 'nonsense' } }),
      422,
      ErrorCode.InvalidCursor,
    );

    expectStatus(await alice.client.delete(`${RULES}/${own.id}`), 204);
    expect((await list(alice.client, sub)).items.map((r) => r.id)).toEqual([top.id]);
    expectError(await alice.client.delete(`${RULES}/${own.id}`), 404, ErrorCode.NotFound);
    expectStatus(await alice.client.delete(`${RULES}/${top.id}`), 204);
    expect(await list(alice.client, sub)).toEqual({ items: [], total: 0 });
  });

  it('needs own to change rules and read to list them; elsewhere it answers the same whatever exists', async () => {
    const rule = await create(alice.client, { path: proj, copies: 1 });
    const missing = `/home/${alice.username}/${uniqueName('none')}`;
    const count = await ruleCount();

    // Bob cannot read Alice's collection: the same refusal as for a path where nothing is.
    const hide = (res: TestResponse, path: string) => {
      const body = res.body as ErrorBody;
      return {
        status: res.status,
        code: body.error.code,
        message: body.error.message.split(path).join('<p>'),
      };
    };
    for (const probe of [
      (path: string) => bob.client.post(RULES, { path, copies: 1 }),
      (path: string) => bob.client.get(RULES, { query: { path } }),
    ]) {
      const existing = hide(await probe(proj), proj);
      expect(existing).toMatchObject({ status: 403, code: ErrorCode.PermissionDenied });
      expect(hide(await probe(missing), missing)).toEqual(existing);
    }
    const del = hide(await bob.client.delete(`${RULES}/${rule.id}`), rule.id);
    expect(del).toMatchObject({ status: 404, code: ErrorCode.NotFound });
    expect(hide(await bob.client.delete(`${RULES}/999999999`), '999999999')).toEqual(del);
    // An object in a collection Bob cannot read is not revealed as an object either.
    expectError(await bob.client.post(RULES, { path: file, copies: 1 }), 403, ErrorCode.PermissionDenied);

    // With read access Bob sees the rules but may not change them.
    expectStatus(
      await alice.client.put('/api/v1/permissions', { path: proj, user: bob.username, level: 'read' }),
      200,
    );
    expect((await list(bob.client, sub)).items.map((r) => r.id)).toEqual([rule.id]);
    expectError(await bob.client.post(RULES, { path: proj, copies: 1 }), 403, ErrorCode.PermissionDenied);
    expectError(await bob.client.delete(`${RULES}/${rule.id}`), 403, ErrorCode.PermissionDenied);
    expect(await ruleCount()).toBe(count);

    // An administrator holds own everywhere.
    const admin = await site.admin();
    expectStatus(await admin.delete(`${RULES}/${rule.id}`), 204);
    expect(await ruleCount()).toBe(count - 1);
  });

  const past = new Date(Date.now() - 60_000).toISOString();
  const BAD: [string, () => Record<string, unknown>, number, ErrorCode, string | null][] = [
    [
      'an unknown site',
      () => ({ path: proj, copies: 1, sites: ['nowhere'] }),
      422,
      ErrorCode.ValidationFailed,
      'sites',
    ],
    [
      'a site listed twice',
      () => ({ path: proj, copies: 1, sites: ['lsu', 'lsu'] }),
      422,
      ErrorCode.ValidationFailed,
      'sites',
    ],
    [
      'more copies than usable sites',
      () => ({ path: proj, copies: 3 }),
      422,
      ErrorCode.ValidationFailed,
      'copies',
    ],
    [
      'more copies than listed sites',
      () => ({ path: proj, copies: 2, sites: ['tulane'] }),
      422,
      ErrorCode.ValidationFailed,
      'copies',
    ],
    ['no copies', () => ({ path: proj, copies: 0 }), 422, ErrorCode.ValidationFailed, 'copies'],
    ['fractional copies', () => ({ path: proj, copies: 1.5 }), 422, ErrorCode.ValidationFailed, 'copies'],
    [
      'a condition that does not parse',
      () => ({ path: proj, copies: 1, condition: 'size >' }),
      422,
      ErrorCode.ValidationFailed,
      'condition',
    ],
    [
      'a condition with a bad operator',
      () => ({ path: proj, copies: 1, condition: 'size between 3' }),
      422,
      ErrorCode.ValidationFailed,
      'condition',
    ],
    [
      'an empty condition',
      () => ({ path: proj, copies: 1, condition: '' }),
      422,
      ErrorCode.ValidationFailed,
      'condition',
    ],
    [
      'an expiry in the past',
      () => ({ path: proj, copies: 1, expiresAt: past }),
      422,
      ErrorCode.ValidationFailed,
      'expiresAt',
    ],
    [
      'an expiry that is not a time',
      () => ({ path: proj, copies: 1, expiresAt: 'tomorrow' }),
      422,
      ErrorCode.ValidationFailed,
      'expiresAt',
    ],
    ['a path that is an object', () => ({ path: file, copies: 1 }), 422, ErrorCode.ValidationFailed, 'path'],
    [
      'a path that is not absolute',
      () => ({ path: 'relative', copies: 1 }),
      422,
      ErrorCode.ValidationFailed,
      'path',
    ],
    [
      'an unknown field',
      () => ({ path: proj, copies: 1, replicas: 2 }),
      422,
      ErrorCode.ValidationFailed,
      null,
    ],
    ['no collection there', () => ({ path: `${proj}/nothing`, copies: 1 }), 404, ErrorCode.NotFound, null],
  ];

  it.each(BAD)('refuses %s and writes nothing', async (_name, body, status, code, field) => {
    const before = await ruleCount();
    const error = expectError(await alice.client.post(RULES, body()), status, code);
    if (field) expect(Object.keys(error.details ?? {})).toContain(field);
    expect(await ruleCount()).toBe(before);
  });

  it('names every bad field of one request at once', async () => {
    const before = await ruleCount();
    const error = expectError(
      await alice.client.post(RULES, {
        path: proj,
        copies: 3,
        sites: ['nowhere', 'lsu', 'tulane'],
        condition: 'a = ',
        expiresAt: past,
      }),
      422,
      ErrorCode.ValidationFailed,
    );
    expect(Object.keys(error.details ?? {}).sort()).toEqual(['condition', 'copies', 'expiresAt', 'sites']);
    expect(await ruleCount()).toBe(before);
  });

  it('lists the sites a rule can name, for any signed-in caller', async () => {
    const sites = expectStatus(await bob.client.get<PlacementSiteDto[]>('/api/v1/placement/sites'), 200).body;
    expect(sites).toEqual([
      { id: 'lsu', name: expect.any(String) as string, local: true },
      { id: 'tulane', name: 'TULANE', local: false },
    ]);
    expectError(await site.anonymous().get('/api/v1/placement/sites'), 401, ErrorCode.Unauthenticated);
  });

  it('refuses a bad listing path or id', async () => {
    expectError(await alice.client.get(RULES, { query: { path: file } }), 422, ErrorCode.ValidationFailed);
    expectError(await alice.client.get(RULES, {}), 422, ErrorCode.ValidationFailed);
    expectError(await alice.client.delete(`${RULES}/abc`), 422, ErrorCode.ValidationFailed);
    expectError(await alice.client.delete(`${RULES}/99999999999999999999`), 422, ErrorCode.ValidationFailed);
  });
});
