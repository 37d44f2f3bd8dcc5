import { ErrorCode, type CreatedTokenDto, type EntryDto, type GroupDto } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { uniqueGroupName } from '@tributary/testkit';
import {
  expectError,
  expectStatus,
  startTestSite,
  type TestClient,
  type TestResponse,
  type TestSite,
  type TestUser,
} from '../test/test-site';

/**
 * Who may do what on one shared collection, /home/<owner>/shared, and an object in it.
 * Every cell runs against its own fresh target, and every refusal is checked to have changed nothing.
 */

type ActorName =
  | 'owner'
  | 'admin'
  | 'reader'
  | 'writer'
  | 'groupWriter'
  | 'stranger'
  | 'anonymous'
  | 'ownerReadToken'
  | 'ownerWriteToken'
  | 'ownerConfinedToken';

type ActionName =
  | 'stat'
  | 'list'
  | 'download'
  | 'permissions'
  | 'mkdir'
  | 'upload'
  | 'overwrite'
  | 'rename'
  | 'delete'
  | 'grant';

interface Fixture {
  shared: string;
  /** An object made for this cell alone. */
  object: string;
  /** A free name in the shared collection. */
  fresh: string;
}

interface Action {
  level: 'read' | 'write' | 'own';
  ok: number;
  run(client: TestClient, f: Fixture, bystander: string): Promise<TestResponse>;
  /** After a refusal: nothing changed (checked as the owner). */
  unchanged?(owner: TestClient, f: Fixture, bystander: string): Promise<void>;
}

const ORIGINAL = 'original bytes';

const actions: Record<ActionName, Action> = {
  stat: {
    level: 'read',
    ok: 200,
    run: (c, f) => c.get('/api/v1/namespace/stat', { query: { path: f.shared } }),
  },
  list: {
    level: 'read',
    ok: 200,
    run: (c, f) => c.get('/api/v1/namespace/children', { query: { path: f.shared } }),
  },
  download: {
    level: 'read',
    ok: 200,
    run: (c, f) => c.get('/api/v1/data', { query: { path: f.object } }),
  },
  permissions: {
    level: 'read',
    ok: 200,
    run: (c, f) => c.get('/api/v1/permissions', { query: { path: f.object } }),
  },
  mkdir: {
    level: 'write',
    ok: 201,
    run: (c, f) => c.post('/api/v1/namespace/collections', { path: f.fresh }),
    unchanged: async (owner, f) => {
      expect((await owner.get('/api/v1/namespace/stat', { query: { path: f.fresh } })).status).toBe(404);
    },
  },
  upload: {
    level: 'write',
    ok: 201,
    run: (c, f) =>
      c.request('PUT', '/api/v1/data', {
        query: { path: f.fresh },
        headers: { 'content-type': 'application/octet-stream' },
        body: 'new',
      }),
    unchanged: async (owner, f) => {
      expect((await owner.get('/api/v1/namespace/stat', { query: { path: f.fresh } })).status).toBe(404);
    },
  },
  overwrite: {
    level: 'write',
    ok: 200,
    run: (c, f) =>
      c.request('PUT', '/api/v1/data', {
        query: { path: f.object, overwrite: 'true' },
        headers: { 'content-type': 'application/octet-stream' },
        body: 'replaced',
      }),
    unchanged: async (owner, f) => {
      expect((await owner.get('/api/v1/data', { query: { path: f.object } })).text).toBe(ORIGINAL);
    },
  },
  rename: {
    level: 'write',
    ok: 200,
    run: (c, f) => c.post('/api/v1/namespace/move', { from: f.object, to: f.fresh }),
    unchanged: async (owner, f) => {
      expect((await owner.get('/api/v1/namespace/stat', { query: { path: f.object } })).status).toBe(200);
      expect((await owner.get('/api/v1/namespace/stat', { query: { path: f.fresh } })).status).toBe(404);
    },
  },
  delete: {
    level: 'write',
    ok: 200,
    run: (c, f) => c.delete('/api/v1/namespace', { query: { path: f.object } }),
    unchanged: async (owner, f) => {
      expect((await owner.get('/api/v1/namespace/stat', { query: { path: f.object } })).status).toBe(200);
    },
  },
  grant: {
    level: 'own',
    ok: 200,
    run: (c, f, bystander) =>
      c.put('/api/v1/permissions', { path: f.object, user: bystander, level: 'read' }),
    unchanged: async (owner, f, bystander) => {
      const res = await owner.get<{ user: string | null }[]>('/api/v1/permissions', {
        query: { path: f.object },
      });
      expect(res.body.some((g) => g.user === bystander)).toBe(false);
    },
  },
};

type Outcome = 'ok' | { status: number; code: ErrorCode };
const denied: Outcome = { status: 403, code: ErrorCode.PermissionDenied };
const all = (o: Outcome): Record<ActionName, Outcome> =>
  Object.fromEntries(Object.keys(actions).map((a) => [a, o])) as Record<ActionName, Outcome>;
const upTo = (level: 'read' | 'write', refusal: Outcome): Record<ActionName, Outcome> =>
  Object.fromEntries(
    (Object.entries(actions) as [ActionName, Action][]).map(([name, a]) => [
      name,
      a.level === 'read' || (level === 'write' && a.level === 'write') ? 'ok' : refusal,
    ]),
  ) as Record<ActionName, Outcome>;

const matrix: Record<ActorName, Record<ActionName, Outcome>> = {
  owner: all('ok'),
  admin: all('ok'),
  reader: upTo('read', denied),
  writer: upTo('write', denied),
  groupWriter: upTo('write', denied),
  stranger: all(denied),
  anonymous: all({ status: 401, code: ErrorCode.Unauthenticated }),
  ownerReadToken: upTo('read', { status: 403, code: ErrorCode.TokenScopeInsufficient }),
  ownerWriteToken: all('ok'),
  ownerConfinedToken: all({ status: 403, code: ErrorCode.TokenOutsideCollection }),
};

describe('authorization matrix', () => {
  let site: TestSite;
  let owner: TestUser;
  let bystander: string;
  let shared: string;
  const clients = new Map<ActorName, TestClient>();
  let cell = 0;

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    const admin = await site.admin();
    const [o, reader, writer, groupWriter, stranger, by] = await Promise.all([
      site.createUser(),
      site.createUser(),
      site.createUser(),
      site.createUser(),
      site.createUser(),
      site.createAccount(),
    ]);
    owner = o;
    bystander = by.username;
    shared = `/home/${owner.username}/shared`;
    expectStatus(await owner.client.post<EntryDto>('/api/v1/namespace/collections', { path: shared }), 201);
    expectStatus(
      await owner.client.post('/api/v1/namespace/collections', { path: `/home/${owner.username}/other` }),
      201,
    );

    const group = uniqueGroupName('writers');
    expectStatus(await admin.post<GroupDto>('/api/v1/groups', { name: group }), 201);
    expectStatus(await admin.put(`/api/v1/groups/${group}/members`, { username: groupWriter.username }), 200);
    for (const grant of [
      { user: reader.username, level: 'read' },
      { user: writer.username, level: 'write' },
      { group, level: 'write' },
    ]) {
      expectStatus(await owner.client.put('/api/v1/permissions', { path: shared, ...grant }), 200);
    }
    const token = async (scope: 'read' | 'write', collection?: string): Promise<TestClient> => {
      const res = await owner.client.post<CreatedTokenDto>('/api/v1/tokens', {
        name: `matrix-${scope}`,
        scope,
        collection,
      });
      expectStatus(res, 201);
      return site.asToken(res.body.secret);
    };
    clients.set('owner', owner.client);
    clients.set('admin', admin);
    clients.set('reader', reader.client);
    clients.set('writer', writer.client);
    clients.set('groupWriter', groupWriter.client);
    clients.set('stranger', stranger.client);
    clients.set('anonymous', site.anonymous());
    clients.set('ownerReadToken', await token('read'));
    clients.set('ownerWriteToken', await token('write'));
    clients.set('ownerConfinedToken', await token('write', `/home/${owner.username}/other`));
  });
  afterAll(async () => {
    await site?.close();
  });

  /** Reads change nothing, so they share one fixture; every change gets its own. */
  let readFixture: Promise<Fixture> | undefined;
  async function fixture(action: ActionName): Promise<Fixture> {
    if (actions[action].level === 'read') {
      readFixture ??= newFixture();
      return readFixture;
    }
    return newFixture();
  }

  async function newFixture(): Promise<Fixture> {
    cell += 1;
    const f = { shared, object: `${shared}/object-${cell}.txt`, fresh: `${shared}/fresh-${cell}` };
    const res = await owner.client.request('PUT', '/api/v1/data', {
      query: { path: f.object },
      headers: { 'content-type': 'application/octet-stream' },
      body: ORIGINAL,
    });
    expectStatus(res, 201);
    return f;
  }

  const cases = (Object.entries(matrix) as [ActorName, Record<ActionName, Outcome>][]).flatMap(
    ([actor, row]) =>
      (Object.entries(row) as [ActionName, Outcome][]).map(([action, outcome]) => ({
        actor,
        action,
        outcome,
        expected: outcome === 'ok' ? String(actions[action].ok) : `${outcome.status} ${outcome.code}`,
      })),
  );

  it.each(cases)('$actor $action → $expected', async ({ actor, action, outcome }) => {
    const client = clients.get(actor);
    if (!client) throw new Error(`no client for ${actor}`);
    const f = await fixture(action);
    const res = await actions[action].run(client, f, bystander);
    if (outcome === 'ok') {
      expectStatus(res, actions[action].ok);
    } else {
      expectError(res, outcome.status, outcome.code);
      await actions[action].unchanged?.(owner.client, f, bystander);
    }
  });
});
