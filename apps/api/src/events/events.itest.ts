import {
  ErrorCode,
  type ChangeEventDto,
  type CreatedTokenDto,
  type EntryDto,
  type ResyncEventDto,
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

interface SseEvent {
  id?: string;
  event: string;
  data: unknown;
}

/** A real SSE connection read with fetch; events are collected as they arrive. */
class EventStream {
  readonly events: SseEvent[] = [];
  private readonly controller = new AbortController();
  private waiters: (() => void)[] = [];
  status = 0;
  done: Promise<void> = Promise.resolve();

  static async open(
    client: TestClient,
    path: string,
    headers: Record<string, string> = {},
  ): Promise<EventStream> {
    const stream = new EventStream();
    const res = await fetch(client.url('/api/v1/events', { path }), {
      headers: { ...client.authHeaders('GET'), ...headers },
      signal: stream.controller.signal,
    });
    stream.status = res.status;
    if (!res.ok || !res.body) {
      await res.body?.cancel();
      return stream;
    }
    const body = res.body;
    stream.done = (async () => {
      const decoder = new TextDecoder();
      let text = '';
      try {
        for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
          text += decoder.decode(chunk, { stream: true });
          let end: number;
          while ((end = text.indexOf('\n\n')) >= 0) {
            stream.parse(text.slice(0, end));
            text = text.slice(end + 2);
          }
        }
      } catch {
        // aborted
      }
    })();
    await stream.next((e) => e.event === 'ready');
    return stream;
  }

  private parse(block: string): void {
    const event: SseEvent = { event: 'message', data: undefined };
    let data = '';
    for (const line of block.split('\n')) {
      if (line.startsWith(':')) continue;
      const at = line.indexOf(':');
      const field = at < 0 ? line : line.slice(0, at);
      const value = at < 0 ? '' : line.slice(at + 1).replace(/^ /, '');
      if (field === 'id') event.id = value;
      if (field === 'event') event.event = value;
      if (field === 'data') data += value;
    }
    if (!data) return;
    event.data = JSON.parse(data);
    this.events.push(event);
    for (const wake of this.waiters.splice(0)) wake();
  }

  /** Waits for the first event (from the start of the stream) that matches. */
  async next(match: (e: SseEvent) => boolean, timeoutMs = 5000): Promise<SseEvent> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = this.events.find(match);
      if (found) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`no matching event; got ${JSON.stringify(this.events)}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  changes(): ChangeEventDto[] {
    return this.events.filter((e) => e.event === 'change').map((e) => e.data as ChangeEventDto);
  }

  async close(): Promise<void> {
    this.controller.abort();
    await this.done;
  }
}

const change = (match: Partial<ChangeEventDto>) => (e: SseEvent) =>
  e.event === 'change' &&
  Object.entries(match).every(([k, v]) => (e.data as Record<string, unknown>)[k] === v);

describe('catalog change feed (GET /api/v1/events)', () => {
  let site: TestSite;
  let admin: TestClient;
  let alice: TestUser;
  let bob: TestUser;
  const streams: EventStream[] = [];

  beforeAll(async () => {
    site = await startTestSite({ LOGIN_RATE_LIMIT: '1000' });
    admin = await site.admin();
    [alice, bob] = await Promise.all([site.createUser(), site.createUser()]);
  });
  afterAll(async () => {
    await Promise.all(streams.map((s) => s.close()));
    await site?.close();
  });

  async function open(client: TestClient, path: string, headers?: Record<string, string>) {
    const stream = await EventStream.open(client, path, headers);
    streams.push(stream);
    return stream;
  }
  const home = (u: TestUser): string => `/home/${u.username}`;

  async function mkdir(client: TestClient, path: string): Promise<EntryDto> {
    return expectStatus(
      await client.post<EntryDto>('/api/v1/namespace/collections', { path, parents: true }),
      201,
    ).body;
  }
  async function upload(client: TestClient, path: string, content: string): Promise<void> {
    const res = await client.request('PUT', '/api/v1/data', {
      query: { path, overwrite: true },
      headers: { 'content-type': 'application/octet-stream' },
      body: content,
    });
    expect([200, 201]).toContain(res.status);
  }

  it('streams object and collection changes with their listing, as they commit', async () => {
    const root = `${home(alice)}/feed`;
    await mkdir(alice.client, root);
    const stream = await open(alice.client, home(alice));
    expect(stream.status).toBe(200);

    await upload(alice.client, `${root}/a.txt`, 'one');
    const created = (await stream.next(change({ kind: 'object', path: root }))).data as ChangeEventDto;
    expect(created).toMatchObject({ op: 'create', parentPath: root, subtree: false, origin: null });
    expect(Date.now() - Date.parse(created.at)).toBeLessThan(60_000);

    await mkdir(alice.client, `${root}/sub`);
    await stream.next(change({ kind: 'collection', op: 'create', path: `${root}/sub`, parentPath: root }));

    // A new version is an update of the object's row.
    await upload(alice.client, `${root}/a.txt`, 'two');
    await stream.next(change({ kind: 'object', op: 'update', path: root }));

    // Deleting moves to the trash (an update that sets trash_id).
    expectStatus(await alice.client.delete('/api/v1/namespace', { query: { path: `${root}/a.txt` } }), 200);
    const updates = () => stream.changes().filter((c) => c.kind === 'object' && c.op === 'update');
    await expect.poll(() => updates().length).toBeGreaterThanOrEqual(2);

    // Every event has an id the client can resume from.
    expect(
      stream.events.filter((e) => e.event === 'change').every((e) => /^[0-9a-f]+:\d+$/.test(e.id ?? '')),
    ).toBe(true);
  });

  it('reports a move as subtree changes of the old and the new path', async () => {
    const root = `${home(alice)}/moves`;
    await mkdir(alice.client, root);
    const stream = await open(alice.client, root);
    await mkdir(alice.client, `${root}/from/deep/deeper`);
    // The folders' own creation reaches the stream first (its notices may come after a later
    // subscription on a busy machine, so the stream is opened before them and waits for them).
    await stream.next(change({ path: `${root}/from/deep/deeper`, op: 'create' }));
    const before = stream.changes().length;
    expectStatus(
      await alice.client.post('/api/v1/namespace/move', { from: `${root}/from`, to: `${root}/to` }),
      200,
    );
    await stream.next(change({ path: `${root}/from`, subtree: true, parentPath: root }));
    await stream.next(change({ path: `${root}/to`, subtree: true, parentPath: root }));
    // The descendants whose paths the move rewrote are covered by the subtree events.
    await new Promise((r) => setTimeout(r, 300));
    expect(
      stream
        .changes()
        .slice(before)
        .some((c) => c.path.includes('/deep')),
    ).toBe(false);
  });

  it('sends only changes under the subscribed path that the caller may read', async () => {
    const aliceStream = await open(alice.client, '/');
    const bobStream = await open(bob.client, home(bob));
    await upload(bob.client, `${home(bob)}/private.txt`, 'bob only');
    await upload(alice.client, `${home(alice)}/mine.txt`, 'alice');
    await bobStream.next(change({ kind: 'object', path: home(bob) }));
    await aliceStream.next(change({ kind: 'object', path: home(alice) }));
    // Bob's stream is confined to his home; Alice cannot read Bob's home.
    expect(bobStream.changes().some((c) => c.path === home(alice))).toBe(false);
    expect(aliceStream.changes().some((c) => c.path === home(bob))).toBe(false);
    // Subscribing to a subtree one cannot read is refused like any other read.
    expectError(
      await bob.client.get('/api/v1/events', { query: { path: home(alice) } }),
      403,
      ErrorCode.PermissionDenied,
    );
    expectError(await site.anonymous().get('/api/v1/events'), 401, ErrorCode.Unauthenticated);
  });

  it('respects a token confined to a collection', async () => {
    await mkdir(alice.client, `${home(alice)}/inside`);
    await mkdir(alice.client, `${home(alice)}/outside`);
    const created = expectStatus(
      await alice.client.post<CreatedTokenDto>('/api/v1/tokens', {
        name: 'confined',
        scope: 'read',
        collection: `${home(alice)}/inside`,
      }),
      201,
    ).body;
    const token = site.asToken(created.secret);
    expectError(
      await token.get('/api/v1/events', { query: { path: home(alice) } }),
      403,
      ErrorCode.TokenOutsideCollection,
    );
    const stream = await open(token, `${home(alice)}/inside`);
    await upload(alice.client, `${home(alice)}/outside/x`, 'x');
    await upload(alice.client, `${home(alice)}/inside/y`, 'y');
    await stream.next(change({ kind: 'object', path: `${home(alice)}/inside` }));
    expect(stream.changes().some((c) => c.path.endsWith('/outside'))).toBe(false);
  });

  it('marks changes applied for a peer with their origin', async () => {
    const path = `${home(alice)}/replicated`;
    await mkdir(alice.client, path);
    const stream = await open(alice.client, home(alice));
    // What the injector does: the writes of one transaction run with tributary.origin set.
    await site.query(
      `SELECT set_config('tributary.origin', 'tulane', true); UPDATE collections SET updated_at = now() WHERE path = '${path}' AND trash_id = 0`,
    );
    const event = await stream.next(change({ path, op: 'update' }));
    expect((event.data as ChangeEventDto).origin).toBe('tulane');
  });

  it('resumes after Last-Event-ID, and answers an unknown id with a resync', async () => {
    const root = `${home(alice)}/resume`;
    await mkdir(alice.client, root);
    const first = await open(alice.client, root);
    await upload(alice.client, `${root}/1`, '1');
    const seen = await first.next(change({ kind: 'object', path: root }));
    await first.close();
    await upload(alice.client, `${root}/2`, '2');
    await mkdir(alice.client, `${root}/3`);
    await new Promise((r) => setTimeout(r, 200));

    const resumed = await open(alice.client, root, { 'last-event-id': seen.id ?? '' });
    await resumed.next(change({ kind: 'object', path: root }));
    await resumed.next(change({ kind: 'collection', path: `${root}/3` }));
    expect(resumed.events.some((e) => e.event === 'resync')).toBe(false);

    const stale = await open(alice.client, root, { 'last-event-id': 'ffffffff:1' });
    const resync = await stale.next((e) => e.event === 'resync');
    expect((resync.data as ResyncEventDto).reason).toBe('unknown-last-event-id');
  });

  it('collapses a statement that touches many collections into a resync', async () => {
    const root = `${home(alice)}/many`;
    await mkdir(alice.client, root);
    await site.query(
      `INSERT INTO collections (parent_id, name, path, owner_id)
       SELECT c.id, 'c' || i, c.path || '/c' || i, c.owner_id FROM collections c, generate_series(1, 70) i
       WHERE c.path = '${root}' AND c.trash_id = 0`,
    );
    const stream = await open(admin, root);
    await site.query(`UPDATE collections SET updated_at = now() WHERE path LIKE '${root}/c%'`);
    const resync = await stream.next((e) => e.event === 'resync');
    expect((resync.data as ResyncEventDto).reason).toBe('too-many-changes');
  });
});
