import { BATCH_PATH, signRequest, type Batch } from '@tributary/replication';
import type { EntryDto, ErrorBody, ReplicationLagDto, TributaryClient } from '@tributary/shared';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { newPassword, testBytes, uniqueGroupName, uniqueName, uniqueUsername } from '@tributary/testkit';
import { sleep, startFederation, type Federation, type FederationSite } from '@tributary/testkit';
import { expectError, expectStatus } from '../test/test-site';
import { until } from '../test/federation';

/**
 * Three (then four) real site processes replicating over signed HTTP with a 1 s cycle: changes
 * made anywhere converge, a peer that is down catches up, a site killed with SIGKILL in the middle
 * of a cycle loses and duplicates nothing, forged peer requests are refused, and a new site joins.
 * The tests share one federation and run in order; each ends with the sites converged.
 */

const IDS = ['lsu', 'tulane', 'uno', 'xavier'];

interface KnownObject {
  path: string;
  bytes: Buffer;
  /** The site that holds the bytes (where they were uploaded). */
  site: string;
}

async function bytesOf(client: TributaryClient, path: string): Promise<Buffer> {
  const res = await client.download(path);
  return Buffer.from(await res.arrayBuffer());
}

async function names(client: TributaryClient, path: string): Promise<string[]> {
  const out: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listChildren({ path, limit: 1000, cursor });
    out.push(...page.items.map((e) => e.name));
    cursor = page.nextCursor;
  } while (cursor);
  return out.sort();
}

function scrapeLine(text: string, name: string, peer: string): number | undefined {
  const match = new RegExp(`^${name}\\{peer="${peer}"\\} (\\S+)$`, 'm').exec(text);
  return match ? Number(match[1]) : undefined;
}

/**
 * `name{peer="..."}` from /metrics (text format). Every scrape must carry it; a scrape answered
 * with the figures of the one before (or none, the first time) is reported as a soft failure, and
 * the value of a second scrape is returned so the rest of the test still runs.
 */
async function metric(site: FederationSite, name: string, peer: string): Promise<number> {
  const first = expectStatus(await site.http.get('/metrics'), 200);
  expect(first.headers.get('content-type')).toMatch(/^text\/plain/);
  const firstValue = scrapeLine(first.text, name, peer);
  const second = expectStatus(await site.http.get('/metrics'), 200);
  const value = scrapeLine(second.text, name, peer);
  const lines = (text: string): string =>
    text
      .split('\n')
      .filter((l) => l.startsWith('tributary_replication') && l.includes(`"${peer}"`))
      .join('\n');
  expect
    .soft(
      firstValue,
      `${name}{peer="${peer}"} in one scrape of ${site.id}'s /metrics:\n${lines(first.text)}\n(the next scrape:\n${lines(second.text)})`,
    )
    .toBeDefined();
  expect(value, `${name}{peer="${peer}"} in ${site.id}'s /metrics`).toBeDefined();
  return value as number;
}

describe('a federation of real sites', () => {
  let fed: Federation;
  let lsu: FederationSite;
  let tulane: FederationSite;
  let uno: FederationSite;
  let xavier: FederationSite;
  /** Objects whose bytes and location every site must agree on (filled by the tests). */
  const known: KnownObject[] = [];
  /** Collections each holding exactly this many children (filled by the crash test). */
  const counted: { path: string; count: number }[] = [];

  beforeAll(async () => {
    fed = await startFederation({ ids: IDS, startNow: 3 });
    [lsu, tulane, uno, xavier] = IDS.map((id) => fed.site(id)) as [
      FederationSite,
      FederationSite,
      FederationSite,
      FederationSite,
    ];
  }, 120_000);

  afterAll(async () => {
    await fed?.close();
  }, 60_000);

  // A failed test shows what the site processes logged.
  beforeEach(({ onTestFailed }) => {
    onTestFailed(() => {
      console.error(fed?.outputs(4000));
    });
  });

  /** Every listed object is listable and downloadable with identical bytes at each of `sites`. */
  async function expectObjectsEverywhere(sites: FederationSite[]): Promise<void> {
    for (const site of sites) {
      for (const o of known) {
        const stat = await site.client.stat(o.path);
        expect(stat.site, `${o.path} at ${site.id}`).toBe(o.site);
        expect(stat.size).toBe(o.bytes.length);
        const slash = o.path.lastIndexOf('/');
        expect(await names(site.client, o.path.slice(0, slash))).toContain(o.path.slice(slash + 1));
        const bytes = await bytesOf(site.client, o.path);
        expect(bytes.equals(o.bytes), `bytes of ${o.path} read at ${site.id} (held at ${o.site})`).toBe(true);
      }
    }
  }

  it('converges creates, updates and deletes made at every site', async () => {
    const sites = [lsu, tulane, uno];
    const made = await Promise.all(
      sites.map(async (site, i) => {
        const c = site.client;
        const dir = `/projects/${uniqueName(`fed-${site.id}`)}`;
        await c.createCollection(dir);
        await c.createCollection(`${dir}/sub`);
        const a1 = testBytes(30_000 + i, 10 + i);
        const a2 = testBytes(50_000 + i, 20 + i);
        const b = testBytes(20_000 + i, 30 + i);
        await c.upload(`${dir}/a.bin`, a1);
        await c.upload(`${dir}/b.bin`, b);
        await c.upload(`${dir}/trashed.bin`, testBytes(100, 40 + i));
        await c.upload(`${dir}/purged.bin`, testBytes(100, 50 + i));
        // Updates: a new version of a.bin, a move with a rename.
        const updated = await c.upload(`${dir}/a.bin`, a2, { overwrite: true });
        expect(updated.version).toBe(2);
        await c.move(`${dir}/b.bin`, `${dir}/sub/b-renamed.bin`);
        // Deletes: one into the trash, one purged from it.
        const trashed = await c.remove(`${dir}/trashed.bin`);
        const purged = await c.remove(`${dir}/purged.bin`);
        // Purging waits until every site has applied the delete.
        await expect(c.purge(purged.id)).rejects.toMatchObject({ status: 409, code: 'PURGE_NOT_YET' });
        // Accounts and permissions.
        const username = uniqueUsername(site.id);
        const groupName = uniqueGroupName(site.id);
        await c.createUser({ username, password: newPassword() });
        await c.createGroup({ name: groupName });
        expectStatus(
          await site.http.put(`/api/v1/groups/${groupName}/members`, { username, role: 'manager' }),
          200,
        );
        await c.setPermission({ path: dir, user: username, level: 'read' });
        await c.setPermission({ path: dir, group: groupName, level: 'write' });
        return { site, dir, a2, b, trashedId: trashed.id, purgedId: purged.id, username, groupName };
      }),
    );
    await fed.waitForConvergence(30_000);
    // xavier is configured as a peer but has not started: it has not applied the deletes, so they
    // are not purgeable yet anywhere.
    for (const m of made) {
      const refused = await m.site.client.purge(m.purgedId).then(
        () => undefined,
        (err: unknown) => err,
      );
      expect(refused).toMatchObject({ status: 409, code: 'PURGE_NOT_YET' });
      expect((refused as Error).message).toContain('xavier has not applied the delete yet');
    }

    // Second round: every site changes rows that another site created.
    await Promise.all(
      made.map(async (m, i) => {
        const other = made[(i + 1) % made.length] as (typeof made)[number];
        const c = m.site.client;
        await c.move(`${other.dir}/sub`, `${other.dir}/sub-moved-by-${m.site.id}`);
        await c.setPermission({ path: other.dir, user: other.username, level: null });
        await c.updateUser(other.username, { displayName: `renamed at ${m.site.id}` });
      }),
    );
    const digest = await fed.waitForConvergence(30_000);
    expect(digest.rows).toBeGreaterThan(0);

    for (const [i, m] of made.entries()) {
      const mover = (made[(i + made.length - 1) % made.length] as (typeof made)[number]).site.id;
      known.push(
        { path: `${m.dir}/a.bin`, bytes: m.a2, site: m.site.id },
        { path: `${m.dir}/sub-moved-by-${mover}/b-renamed.bin`, bytes: m.b, site: m.site.id },
      );
      for (const site of sites) {
        const c = site.client;
        expect(await names(c, m.dir), `${m.dir} at ${site.id}`).toEqual(['a.bin', `sub-moved-by-${mover}`]);
        await expect(c.stat(`${m.dir}/purged.bin`)).rejects.toMatchObject({ status: 404 });
        const trash = await c.listTrash(1000);
        expect(trash.items.map((t) => t.id)).toContain(m.trashedId);
        const user = (await c.listUsers(1000)).items.find((u) => u.username === m.username);
        expect(user?.displayName, `${m.username} at ${site.id}`).toBe(`renamed at ${mover}`);
        const group = (await c.listGroups()).find((g) => g.name === m.groupName);
        expect(group?.members).toEqual([{ username: m.username, role: 'manager' }]);
        const perms = (await c.permissions(m.dir)).filter((p) => p.inheritedFrom === null);
        expect(perms.some((p) => p.group === m.groupName && p.level === 'write')).toBe(true);
        expect(perms.some((p) => p.user === m.username)).toBe(false);
      }
    }
    // Bytes stay where they were uploaded; the other sites read them through that site.
    await expectObjectsEverywhere(sites);
  }, 90_000);

  it('a peer paused for several cycles (SIGSTOP) catches up; the others keep replicating meanwhile', async () => {
    await uno.kill('SIGSTOP');
    const dir = `/projects/${uniqueName('while-paused')}`;
    const bytes = testBytes(12_345, 61);
    try {
      await lsu.client.createCollection(dir);
      await lsu.client.upload(`${dir}/x.bin`, bytes);
      let seen = '';
      const queued = await until(async () => {
        const peer = (await lsu.status()).peers.find((p) => p.peer === 'uno');
        seen = JSON.stringify(peer);
        return (peer?.backlog.changes ?? 0) > 0;
      }, 10_000);
      expect(queued, `lsu's status for the paused uno: ${seen}`).toBe(true);
      await sleep(3000); // several cycles with uno paused
      expect(await metric(lsu, 'tributary_replication_backlog_changes', 'uno')).toBeGreaterThan(0);
      // A paused peer accepts connections and never answers: it must not hold up the others. By
      // now every cycle that started since the pause has met it; a change made now must still
      // reach tulane in a few cycles.
      await lsu.client.createCollection(`${dir}/later`);
      const reachedTulane = await until(async () => {
        await tulane.client.stat(`${dir}/later`);
        return true;
      }, 8000);
      expect
        .soft(reachedTulane, 'a change made at lsu while uno is paused reaches tulane within 8 s')
        .toBe(true);
    } finally {
      await uno.kill('SIGCONT');
    }
    await fed.waitForConvergence(90_000);
    expect(await names(uno.client, dir)).toEqual(['later', 'x.bin']);
    known.push({ path: `${dir}/x.bin`, bytes, site: 'lsu' });
    await expectObjectsEverywhere([uno]);
  }, 150_000);

  it('a peer killed for several cycles and restarted catches up; the others report its backlog and error', async () => {
    await uno.kill('SIGKILL');
    const dir = `/projects/${uniqueName('while-dead')}`;
    const bytes = testBytes(23_456, 62);
    await tulane.client.createCollection(dir);
    await tulane.client.upload(`${dir}/y.bin`, bytes);
    // A site queues only its own changes for a peer: lsu makes one too.
    await lsu.client.createCollection(`${dir}-lsu`);
    for (const site of [lsu, tulane]) {
      let seen = '';
      const reported = await until(async () => {
        const peer = (await site.status()).peers.find((p) => p.peer === 'uno');
        seen = JSON.stringify(peer);
        return peer !== undefined && peer.lastError !== null && peer.backlog.changes > 0;
      }, 10_000);
      expect(reported, `${site.id}'s status for uno: ${seen}`).toBe(true);
      expect(seen).toMatch(/unreachable/);
    }
    await sleep(3000); // several more cycles without uno
    expect(await metric(tulane, 'tributary_replication_backlog_changes', 'uno')).toBeGreaterThan(0);
    expect(await metric(tulane, 'tributary_replication_peer_failing', 'uno')).toBe(1);
    expect(await metric(tulane, 'tributary_replication_backlog_changes', 'lsu')).toBe(0);

    await uno.restart();
    await fed.waitForConvergence(60_000);
    expect(await names(uno.client, dir)).toEqual(['y.bin']);
    expect((await uno.client.stat(`${dir}-lsu`)).kind).toBe('collection');
    known.push({ path: `${dir}/y.bin`, bytes, site: 'tulane' });
    await expectObjectsEverywhere([uno]);
    for (const site of [lsu, tulane]) {
      const peer = (await site.status()).peers.find((p) => p.peer === 'uno');
      expect(peer?.lastError ?? null).toBeNull();
      expect(peer?.backlog.changes).toBe(0);
      expect(peer?.lastSuccessAt).not.toBeNull();
    }
    expect(await metric(tulane, 'tributary_replication_peer_failing', 'uno')).toBe(0);

    // The lag chart's history: uno's backlog and lag while it was down, nothing owed once it caught up.
    const lagOf = async () =>
      expectStatus(
        await tulane.http.get<ReplicationLagDto>('/api/v1/replication/lag', { query: { hours: 1 } }),
        200,
      ).body;
    // Every configured peer has a series (xavier, configured but not started yet, too).
    expect((await lagOf()).peers.map((p) => p.peer)).toEqual(
      expect.arrayContaining(['lsu', 'uno', 'xavier']),
    );
    const samples = async () => (await lagOf()).peers.find((p) => p.peer === 'uno')!.samples;
    expect((await samples()).some((x) => x.backlogChanges > 0 && x.lagSeconds > 0)).toBe(true);
    expect(await until(async () => (await samples()).at(-1)?.backlogChanges === 0, 10_000)).toBe(true);
    expectError(
      await tulane.http.get('/api/v1/replication/lag', { query: { hours: 0 } }),
      422,
      'VALIDATION_FAILED',
    );
  }, 150_000);

  it('a site killed with SIGKILL during cycles loses and duplicates nothing', async () => {
    const before = await lsu.digest();
    const objectsBefore = before.tables.data_objects?.rows ?? 0;
    const collectionsBefore = before.tables.collections?.rows ?? 0;
    const root = `/projects/${uniqueName('crash')}`;
    await lsu.client.createCollection(root);
    const BATCHES = 6;
    const PER_BATCH = 500;
    const MKDIRS = 150;
    for (let b = 0; b < BATCHES; b++) await lsu.client.createCollection(`${root}/batch-${b}`);
    await uno.client.createCollection(`${root}-uno`);

    // lsu: thousands of objects through the batch upload; uno: many mkdirs; tulane receives both.
    const uploads = (async () => {
      for (let b = 0; b < BATCHES; b++) {
        const files = Array.from({ length: PER_BATCH }, (_, i) => ({
          name: `f-${String(i).padStart(4, '0')}.bin`,
          body: new Blob([testBytes(64, b * PER_BATCH + i + 1)]),
        }));
        const created: EntryDto[] = await lsu.client.uploadMany(`${root}/batch-${b}`, files);
        expect(created).toHaveLength(PER_BATCH);
      }
    })();
    const mkdirs = (async () => {
      for (let i = 0; i < MKDIRS; i++) await uno.client.createCollection(`${root}-uno/d-${i}`);
    })();
    /** Per kill: changes waiting for tulane (queued for it at lsu, or received and not applied). */
    const pendingAtKill: number[] = [];
    const killer = (async () => {
      for (let round = 0; round < 4; round++) {
        await sleep(300 + Math.floor(Math.random() * 1200));
        const [queued, incoming] = await Promise.all([
          lsu.query<{ n: string }>(
            `SELECT coalesce(sum(l.change_count), 0) AS n FROM repl_outgoing o JOIN repl_log l USING (seq) WHERE o.peer_id = 'tulane'`,
          ),
          tulane.query<{ n: string }>('SELECT coalesce(sum(change_count), 0) AS n FROM repl_incoming'),
        ]);
        pendingAtKill.push(Number(queued.rows[0]?.n) + Number(incoming.rows[0]?.n));
        await tulane.kill('SIGKILL');
        await tulane.restart();
      }
    })();
    await Promise.all([uploads, mkdirs, killer]);
    expect(pendingAtKill).toHaveLength(4);
    // The kills came while tulane had replication work in hand.
    expect(
      Math.max(...pendingAtKill),
      `changes pending at each kill: ${pendingAtKill.join(', ')}`,
    ).toBeGreaterThan(0);
    expect(tulane.output().match(/exited \(SIGKILL\)/g)?.length ?? 0).toBeGreaterThanOrEqual(4);

    const digest = await fed.waitForConvergence(90_000);
    expect(digest.tables.data_objects?.rows).toBe(objectsBefore + BATCHES * PER_BATCH);
    expect(digest.tables.collections?.rows).toBe(collectionsBefore + 2 + BATCHES + MKDIRS);
    for (const site of [lsu, tulane, uno]) {
      for (let b = 0; b < BATCHES; b++) {
        const page = await site.client.listChildren({ path: `${root}/batch-${b}`, limit: 1 });
        expect(page.total, `${root}/batch-${b} at ${site.id}`).toBe(PER_BATCH);
      }
      const dirs = await names(site.client, `${root}-uno`);
      expect(new Set(dirs).size).toBe(MKDIRS);
      expect(dirs).toHaveLength(MKDIRS);
    }
    for (let b = 0; b < BATCHES; b++) counted.push({ path: `${root}/batch-${b}`, count: PER_BATCH });
    counted.push({ path: `${root}-uno`, count: MKDIRS });
    const sample = `${root}/batch-${BATCHES - 1}/f-0007.bin`;
    known.push({ path: sample, bytes: testBytes(64, (BATCHES - 1) * PER_BATCH + 8), site: 'lsu' });
    await expectObjectsEverywhere([tulane]);
  }, 180_000);

  describe('peer authentication', () => {
    /** A batch that would be stored if it were accepted. */
    function forgedBatch(origin: string): string {
      const batch: Batch = {
        origin,
        txs: [
          {
            seq: 900_000_000,
            changes: [{ t: 'collections', o: 'I', k: '1', d: { id: '1' }, s: 1, b: null, bs: null }],
          },
        ],
      };
      return JSON.stringify(batch);
    }

    async function post(
      site: FederationSite,
      headers: Record<string, string>,
      body: string,
    ): Promise<{ status: number; body: unknown }> {
      const res = await fetch(new URL(BATCH_PATH, site.url), {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body,
      });
      const text = await res.text();
      return { status: res.status, body: text ? (JSON.parse(text) as unknown) : undefined };
    }

    function expectRefused(res: { status: number; body: unknown }): void {
      expect(res.status, JSON.stringify(res.body)).toBe(401);
      expect((res.body as ErrorBody).error.code).toBe('PEER_UNAUTHORIZED');
    }

    it('refuses unknown sites, bad signatures, stale timestamps and replays, stores nothing, logs why', async () => {
      const digestBefore = await lsu.digest();
      const key = fed.keyFor('uno', 'lsu');
      const forged = forgedBatch('uno');

      const unknown = forgedBatch('mallory');
      expectRefused(
        await post(lsu, { ...signRequest('mallory', 'k'.repeat(43), 'POST', BATCH_PATH, unknown) }, unknown),
      );
      // Signed with the key of another pair.
      const wrongKey = fed.keyFor('uno', 'tulane');
      expectRefused(await post(lsu, { ...signRequest('uno', wrongKey, 'POST', BATCH_PATH, forged) }, forged));
      // The right key, but the body was changed after signing.
      const signed = signRequest('uno', key, 'POST', BATCH_PATH, forgedBatch('tulane'));
      expectRefused(await post(lsu, { ...signed }, forged));
      // Ten minutes old.
      const stale = signRequest('uno', key, 'POST', BATCH_PATH, forged, Date.now() - 10 * 60_000);
      expectRefused(await post(lsu, { ...stale }, forged));
      // No signature at all.
      expectRefused(await post(lsu, {}, forged));

      // A valid request (an empty batch: it asks what lsu has of uno) accepted once, refused when replayed.
      const empty = JSON.stringify({ origin: 'uno', txs: [] } satisfies Batch);
      const valid = { ...signRequest('uno', key, 'POST', BATCH_PATH, empty) };
      const first = await post(lsu, valid, empty);
      expect(first.status, JSON.stringify(first.body)).toBe(200);
      expect(typeof (first.body as { have?: unknown }).have).toBe('number');
      expectRefused(await post(lsu, valid, empty));

      // Object bytes for peers are guarded the same way.
      const objectPath = '/api/v1/replication/peer/objects/1';
      const bytes = await fetch(new URL(objectPath, lsu.url), {
        headers: { ...signRequest('uno', wrongKey, 'GET', objectPath, '') },
      });
      expect(bytes.status).toBe(401);

      const stored = await lsu.query<{ n: string }>(
        'SELECT count(*) AS n FROM repl_incoming WHERE seq = $1',
        [900_000_000],
      );
      expect(Number(stored.rows[0]?.n)).toBe(0);
      expect((await lsu.digest()).digest).toBe(digestBefore.digest);

      const reasons = ['unknown-peer', 'bad-signature', 'stale-timestamp', 'missing-headers', 'replayed'];
      const logged = await until(
        () =>
          Promise.resolve(
            reasons.every((r) => new RegExp(`refused a peer request .*: ${r}`).test(lsu.output())),
          ),
        5000,
      );
      expect(logged, `lsu output:\n${lsu.output().slice(-4000)}`).toBe(true);
      expect(lsu.output()).toMatch(/claiming to be mallory: unknown-peer/);
      expect(lsu.output()).not.toContain(key);
      // The real peers are unaffected.
      await fed.waitForConvergence(30_000);
    });
  });

  it('a new site joins an existing federation, receives the full catalog and takes part in the cycle', async () => {
    const ready = await xavier.start();
    expect(ready.joinedFrom).toBe('lsu');
    expect(ready.adminCreated).toBe(false);
    expect(xavier.output()).toMatch(/joined the federation: copied \d+ catalog rows from lsu/);

    const digest = await fed.waitForConvergence(60_000);
    expect(digest.tables.data_objects?.rows).toBeGreaterThan(3000);
    for (const c of counted) {
      const page = await xavier.client.listChildren({ path: c.path, limit: 1 });
      expect(page.total, `${c.path} at xavier`).toBe(c.count);
    }
    // Bytes held at lsu, tulane and uno read through them at the new site.
    await expectObjectsEverywhere([xavier]);

    // It takes part: its own changes reach everyone; others' changes reach it.
    const dir = `/projects/${uniqueName('from-xavier')}`;
    const bytes = testBytes(7777, 71);
    await xavier.client.createCollection(dir);
    await xavier.client.upload(`${dir}/z.bin`, bytes);
    await uno.client.createCollection(`${dir}-uno`);
    await fed.waitForConvergence(30_000);
    known.push({ path: `${dir}/z.bin`, bytes, site: 'xavier' });
    for (const site of [lsu, tulane, uno]) {
      expect((await bytesOf(site.client, `${dir}/z.bin`)).equals(bytes), `z.bin at ${site.id}`).toBe(true);
    }
    expect(await names(xavier.client, '/projects')).toContain(`${dir.slice('/projects/'.length)}-uno`);
    for (const site of [lsu, tulane, uno, xavier]) {
      const status = await site.status();
      expect(status.peers.map((p) => p.peer).sort()).toEqual(IDS.filter((id) => id !== site.id).sort());
      for (const p of status.peers) {
        expect(p.lastSuccessAt, `${site.id} -> ${p.peer}`).not.toBeNull();
        expect(p.backlog.changes).toBe(0);
      }
    }
    // A restart of the joined site does not join again: it keeps its catalog.
    await xavier.restart();
    expect(xavier.output().match(/joined the federation/g)).toHaveLength(1);
    expect((await fed.waitForConvergence(30_000)).digest).toBeTruthy();
  }, 150_000);

  it('replicates metadata triples: added at several sites, changed and removed elsewhere, gone with their object', async () => {
    const dir = `/projects/${uniqueName('fed-md')}`;
    const path = `${dir}/tagged.bin`;
    await lsu.client.createCollection(dir);
    await lsu.client.upload(path, testBytes(1000, 7));
    const [first] = await lsu.client.addMetadata(path, [{ attribute: 'filetype', value: 'fits' }]);
    await fed.waitForConvergence(30_000);
    // Different triples on one object at three sites: different rows, no conflict.
    const [second] = await tulane.client.addMetadata(path, [
      { attribute: 'size', value: 1e6, unit: 'bytes' },
    ]);
    await uno.client.bulkMetadata({
      operations: [{ under: dir, add: [{ attribute: 'project', value: 'coast-1' }] }],
    });
    await fed.waitForConvergence(30_000);
    // A triple made at lsu is changed at uno; one made at tulane is removed at lsu.
    await uno.client.updateTriple(first!.id, { value: 'hdf5' });
    await lsu.client.removeTriple(second!.id);
    await fed.waitForConvergence(30_000);
    for (const site of [lsu, tulane, uno]) {
      const { triples } = await site.client.metadata(path);
      expect(triples.map((t) => `${t.attribute}=${t.value}`).sort(), `at ${site.id}`).toEqual([
        'filetype=hdf5',
        'project=coast-1',
      ]);
      const found = await site.client.queryMetadata({
        q: 'filetype = hdf5 and project prefix coast',
        scope: dir,
      });
      expect(found.items.map((i) => i.path)).toEqual([path]);
    }
    // Purging the object removes its triples at every site (the cascade), and nothing is left aside.
    const objectId = (await lsu.client.stat(path)).id;
    const trashed = await tulane.client.remove(path);
    // Purgeable once every site (xavier included, it has joined by now) has applied the delete.
    const purged = await until(async () => {
      await tulane.client.purge(trashed.id);
      return true;
    }, 60_000);
    expect(purged, 'purge once the delete is applied everywhere').toBe(true);
    await fed.waitForConvergence(30_000);
    for (const site of [lsu, tulane, uno]) {
      const left = await site.query<{ n: string }>(
        'SELECT count(*) AS n FROM metadata_triples WHERE object_id = $1',
        [objectId],
      );
      expect(left.rows[0]!.n, `triples left at ${site.id}`).toBe('0');
      const parked = await site.query<{ n: string }>(
        `SELECT count(*) AS n FROM repl_parked WHERE tbl = 'metadata_triples'`,
      );
      expect(parked.rows[0]!.n, `parked at ${site.id}`).toBe('0');
    }
  }, 150_000);
});
