import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { plainApplication } from './application';
import type { CycleReport } from './engine';
import { createFederation, type TestFederation } from './testing/federation';

let fed: TestFederation;

beforeEach(async () => {
  fed = await createFederation(['lsu', 'tulane', 'uno'], plainApplication);
});
afterEach(async () => {
  await fed.close();
});

const db = (site: string) => fed.sites[site]!.catalog.db;

async function addUser(site: string, username: string): Promise<string> {
  const res = await db(site).query<{ id: string }>(
    `INSERT INTO users (username, display_name, password_hash, updated_at) VALUES ($1, $1, 'x', now()) RETURNING id`,
    [username],
  );
  return res.rows[0]!.id;
}

async function displayNames(site: string): Promise<Record<string, string>> {
  const res = await db(site).query<{ username: string; display_name: string }>(
    'SELECT username, display_name FROM users ORDER BY username',
  );
  return Object.fromEntries(res.rows.map((r) => [r.username, r.display_name]));
}

describe('replication engine (three catalogs, in-memory transport)', () => {
  it('sites registered at each catalog reach every other one', async () => {
    await fed.settle();
    for (const s of ['lsu', 'tulane', 'uno']) {
      const res = await db(s).query<{ id: string }>('SELECT id FROM sites ORDER BY id');
      expect(res.rows.map((r) => r.id)).toEqual(['lsu', 'tulane', 'uno']);
    }
    const digests = await fed.digests();
    expect(new Set(digests).size).toBe(1);
  });

  it('creates, updates and deletes at each site converge', async () => {
    const a = await addUser('lsu', 'ada');
    await addUser('tulane', 'bo');
    await fed.settle();
    await db('uno').query(`UPDATE users SET display_name = 'Ada L.' WHERE id = $1`, [a]);
    await db('tulane').query(`DELETE FROM users WHERE username = 'bo'`);
    await addUser('uno', 'cy');
    await fed.settle();
    for (const s of ['lsu', 'tulane', 'uno']) {
      expect(await displayNames(s)).toEqual({ ada: 'Ada L.', cy: 'cy' });
    }
    expect(new Set(await fed.digests()).size).toBe(1);
  });

  it('a transaction from one origin applies atomically and in order', async () => {
    const client = await db('lsu').connect();
    await client.query('BEGIN');
    const g = await client.query<{ id: string }>(
      `INSERT INTO project_groups (name, updated_at) VALUES ('geo', now()) RETURNING id`,
    );
    const u = await client.query<{ id: string }>(
      `INSERT INTO users (username, display_name, password_hash, active_group_id, updated_at) VALUES ('gia', 'Gia', 'x', $1, now()) RETURNING id`,
      [g.rows[0]!.id],
    );
    await client.query(`INSERT INTO memberships (user_id, group_id, updated_at) VALUES ($1, $2, now())`, [
      u.rows[0]!.id,
      g.rows[0]!.id,
    ]);
    await client.query('COMMIT');
    client.release();
    await fed.settle();
    const res = await db('uno').query('SELECT 1 FROM memberships m JOIN users u ON u.id = m.user_id');
    expect(res.rowCount).toBe(1);
    const archive = await fed.sites.uno!.engine.archive.count('lsu');
    expect(archive).toBeGreaterThan(0);
  });

  it('concurrent updates of one record: the latest wins everywhere and each site records the conflict', async () => {
    const id = await addUser('lsu', 'dee');
    await fed.settle();
    await db('lsu').query(`UPDATE users SET display_name = 'from lsu' WHERE id = $1`, [id]);
    await new Promise((r) => setTimeout(r, 5));
    await db('tulane').query(`UPDATE users SET display_name = 'from tulane' WHERE id = $1`, [id]);
    await fed.settle();
    for (const s of ['lsu', 'tulane', 'uno']) expect((await displayNames(s)).dee).toBe('from tulane');
    const ids = await Promise.all(
      ['lsu', 'tulane'].map(async (s) => {
        const res = await db(s).query<{ id: string; kind: string }>('SELECT id, kind FROM repl_conflicts');
        expect(res.rows.map((r) => r.kind)).toEqual(['update']);
        return res.rows[0]!.id;
      }),
    );
    expect(ids[0]).toBe(ids[1]);
    expect(new Set(await fed.digests()).size).toBe(1);
  });

  it('a peer that is down keeps its queue and catches up when it returns', async () => {
    await fed.settle();
    fed.transport.down.add('uno');
    for (let i = 0; i < 5; i++) await addUser('lsu', `u${i}`);
    await fed.settle();
    const status = await fed.sites.lsu!.engine.status();
    const uno = status.peers.find((p) => p.peer === 'uno')!;
    expect(uno.backlog.txs).toBe(5);
    expect(uno.lastError).toMatch(/unreachable/);
    expect((await displayNames('uno')).u0).toBeUndefined();
    fed.transport.down.delete('uno');
    await fed.settle();
    expect(Object.keys(await displayNames('uno'))).toHaveLength(5);
    expect(new Set(await fed.digests()).size).toBe(1);
  });

  it('a batch delivered twice (answer lost) changes nothing the second time', async () => {
    await fed.settle();
    fed.transport.dropAcks.add('tulane');
    await addUser('lsu', 'twice');
    await fed.sites.lsu!.engine.runCycle();
    await fed.sites.lsu!.engine.runCycle();
    fed.transport.dropAcks.delete('tulane');
    await fed.settle();
    const res = await db('tulane').query(`SELECT count(*)::int AS n FROM users WHERE username = 'twice'`);
    expect(res.rows[0]).toEqual({ n: 1 });
    expect(new Set(await fed.digests()).size).toBe(1);
  });

  it('a change that depends on another origin waits until that origin’s change arrives', async () => {
    await fed.settle();
    fed.transport.down.add('uno');
    const g = await db('lsu').query<{ id: string }>(
      `INSERT INTO project_groups (name, updated_at) VALUES ('bio', now()) RETURNING id`,
    );
    await fed.sites.lsu!.engine.runCycle(); // reaches tulane only
    await fed.sites.tulane!.engine.runCycle(); // applies it
    const u = await addUser('tulane', 'eve');
    await db('tulane').query(
      `INSERT INTO memberships (user_id, group_id, updated_at) VALUES ($1, $2, now())`,
      [u, g.rows[0]!.id],
    );
    fed.transport.down.delete('uno');
    await fed.sites.tulane!.engine.runCycle(); // uno receives tulane's changes before lsu's
    const r1 = await fed.sites.uno!.engine.runCycle();
    expect(r1.waiting.tulane).toMatch(/project_groups/);
    await fed.settle();
    const res = await db('uno').query('SELECT 1 FROM memberships');
    expect(res.rowCount).toBe(1);
    expect(new Set(await fed.digests()).size).toBe(1);
  });

  it('a batch that arrives while the round waits on a slow peer is applied then, not at the next round', async () => {
    await fed.settle();
    const tulane = fed.sites.tulane!.engine;
    const uno = fed.sites.uno!.engine;
    // uno holds tulane's batches (a slow peer): tulane's round waits on it, for up to its 30 s cycle.
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    let holding = false;
    fed.transport.register('uno', async (batch) => {
      if (batch.origin === 'tulane') {
        holding = true;
        await held;
      }
      return uno.receive(batch.origin, batch);
    });
    const reports: CycleReport[] = [];
    tulane.onCycle = (r) => reports.push(r);
    tulane.start();
    try {
      await vi.waitFor(() => expect(holding).toBe(true));
      await addUser('lsu', 'quick');
      const sent = await fed.sites.lsu!.engine.runCycle();
      expect(sent.dispatched.find((d) => d.peer === 'tulane')).toMatchObject({ ok: true, txs: 1 });
      await vi.waitFor(async () => expect((await displayNames('tulane')).quick).toBe('quick'), {
        timeout: 10_000,
      });
      // tulane's first round has not ended: what it applied was applied between rounds.
      expect(reports).toHaveLength(0);
    } finally {
      release();
    }
    // The next round's report counts it.
    await vi.waitFor(() => expect(reports.length).toBeGreaterThanOrEqual(2), { timeout: 10_000 });
    expect(reports.reduce((n, c) => n + c.injected.txs, 0)).toBe(1);
    await tulane.stop();
    await fed.settle();
    expect(new Set(await fed.digests()).size).toBe(1);
  });
});
