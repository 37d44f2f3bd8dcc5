import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { plainApplication } from './application';
import { ReplicationEngine } from './engine';
import { createFederation, type TestFederation } from './testing/federation';

/**
 * Crashes at awkward moments: an answer lost after the peer stored a batch, and database
 * connections terminated in the middle of injecting, extracting and collecting large batches. After
 * each, the site's engine is replaced by a fresh one on a fresh connection pool (as after `kill -9`
 * and a restart), and every site must end with exactly the rows that were written: none lost, none
 * twice.
 */

const SITES = ['lsu', 'tulane', 'uno'] as const;
type Site = (typeof SITES)[number];

let fed: TestFederation | undefined;
let pools: pg.Pool[] = [];
let admin: pg.Client | undefined;
let adminConfig: pg.ClientConfig | undefined;

afterEach(async () => {
  await admin?.end();
  admin = undefined;
  // The restarted engines' pools end before the federation drops the databases.
  for (const s of SITES) await fed?.sites[s]?.engine.stop();
  for (const p of pools) await p.end();
  pools = [];
  await fed?.close();
  fed = undefined;
});

async function setup(): Promise<TestFederation> {
  const f = (fed = await createFederation([...SITES], plainApplication));
  await f.settle();
  const c = f.sites.lsu!.catalog.connection;
  adminConfig = { ...c, database: 'postgres', application_name: 'crash-admin' };
  admin = new pg.Client(adminConfig);
  await admin.connect();
  return f;
}

/** Replaces a site's engine with a new one on a new pool, as a restarted process would have. */
function restart(f: TestFederation, site: Site): ReplicationEngine {
  const { catalog } = f.sites[site]!;
  const pool = new pg.Pool({ ...catalog.connection, max: 6 });
  pool.on('error', () => undefined);
  pools.push(pool);
  const engine = new ReplicationEngine({
    db: pool,
    siteId: site,
    peers: SITES.filter((p) => p !== site),
    transport: f.transport,
    application: plainApplication,
  });
  f.transport.register(site, (batch) => engine.receive(batch.origin, batch));
  f.sites[site] = { catalog, engine };
  return engine;
}

/** Inserts `txs` local transactions of `perTx` users each (one statement per transaction). */
async function insertUsers(db: pg.Pool, prefix: string, txs: number, perTx: number): Promise<void> {
  for (let t = 0; t < txs; t++) {
    await db.query(
      `INSERT INTO users (username, display_name, password_hash, updated_at)
       SELECT $1 || '_' || $2::int || '_' || i, 'user ' || i, 'x', now() FROM generate_series(1, $3::int) i`,
      [prefix, t, perTx],
    );
  }
}

/**
 * Runs `action` while terminating, up to `times` times, every backend of `database` whose current
 * or last statement matches `pattern` and that is running it or idle inside its transaction.
 *
 * `hold`, when given, is a statement run in a transaction of its own on `database` before `action`
 * starts (a row or table lock the target statement must wait for), so the target is still running
 * when the killer looks for it however fast the machine is. The lock is released at the first kill,
 * or after 20 s if the target never shows up.
 *
 * When nothing was terminated, `missed` says how the action ended and what the database's backends
 * were doing at that moment, for the assertion's message.
 */
async function terminating<T>(
  database: string,
  pattern: string,
  times: number,
  action: () => Promise<T>,
  hold?: string,
): Promise<{ result: T; killed: number; missed: string }> {
  let killed = 0;
  let finished = false;
  let holder: pg.Client | undefined;
  const release = async (): Promise<void> => {
    const h = holder;
    holder = undefined;
    if (h) {
      await h.query('COMMIT');
      await h.end();
    }
  };
  if (hold) {
    holder = new pg.Client({ ...adminConfig, database, application_name: 'crash-hold' });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(hold);
  }
  const releaseAfter = setTimeout(() => void release(), 20_000);
  const killer = (async () => {
    while (!finished && killed < times) {
      const res = await admin!.query<{ ok: boolean }>(
        `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
          WHERE datname = $1 AND pid <> pg_backend_pid() AND state IN ('active', 'idle in transaction')
            AND application_name <> 'crash-hold' AND query ILIKE $2`,
        [database, `%${pattern}%`],
      );
      killed += res.rows.filter((r) => r.ok).length;
      if (killed > 0) await release();
      await new Promise((r) => setTimeout(r, 1));
    }
  })();
  const started = Date.now();
  let outcome: { ok: true; result: T } | { ok: false; error: unknown };
  try {
    outcome = { ok: true, result: await action() };
  } catch (error) {
    outcome = { ok: false, error };
  }
  const ended = outcome.ok
    ? `the action ended after ${Date.now() - started} ms with ${JSON.stringify(outcome.result)}`
    : `the action failed after ${Date.now() - started} ms: ${String(outcome.error)}`;
  // The killer's count is read only once it has stopped: the terminated statement's error can reach
  // this process before the answer to the killer's own query does.
  finished = true;
  await killer;
  clearTimeout(releaseAfter);
  await release();
  if (!outcome.ok) throw outcome.error;
  const missed = killed > 0 ? '' : `${ended}; backends then: ${await backends(database)}`;
  return { result: outcome.result, killed, missed };
}

/** What each backend of `database` is doing, one line each (for failure messages). */
async function backends(database: string): Promise<string> {
  const res = await admin!.query<{ line: string }>(
    `SELECT format('[%s %s %s/%s] %s', application_name, state, wait_event_type, wait_event, left(query, 80)) AS line
       FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
    [database],
  );
  return res.rows.map((r) => r.line).join(' | ') || 'none';
}

async function count(f: TestFederation, site: Site, sql: string): Promise<number> {
  const res = await f.sites[site]!.catalog.db.query<{ n: number }>(`SELECT (${sql})::int AS n`);
  return res.rows[0]!.n;
}

/** Every site holds exactly `users` users, the same catalog, and nothing left queued or waiting. */
async function expectConverged(f: TestFederation, users: number): Promise<void> {
  for (const s of SITES) {
    expect(await count(f, s, 'SELECT count(*) FROM users'), `users at ${s}`).toBe(users);
    expect(await count(f, s, 'SELECT count(DISTINCT username) FROM users'), `distinct users at ${s}`).toBe(
      users,
    );
    expect(await count(f, s, 'SELECT count(*) FROM repl_incoming'), `incoming at ${s}`).toBe(0);
    expect(await count(f, s, 'SELECT count(*) FROM repl_outgoing'), `outgoing at ${s}`).toBe(0);
    expect(await count(f, s, 'SELECT count(*) FROM repl_changes'), `uncaptured at ${s}`).toBe(0);
    expect(
      await count(f, s, 'SELECT count(*) FROM repl_peers WHERE waiting_on IS NOT NULL'),
      `waiting at ${s}`,
    ).toBe(0);
    expect(await count(f, s, 'SELECT count(*) FROM repl_conflicts'), `conflicts at ${s}`).toBe(0);
  }
  // Each origin's transactions were applied once at each peer: the archive holds each seq once, all of them.
  for (const origin of SITES) {
    const last = await count(f, origin, 'SELECT last_seq FROM repl_local');
    for (const s of SITES.filter((x) => x !== origin)) {
      expect(
        await count(f, s, `SELECT count(*) FROM repl_archive WHERE origin = '${origin}'`),
        `${origin}'s transactions archived at ${s}`,
      ).toBe(last);
      expect(
        await count(f, s, `SELECT applied_seq FROM repl_peers WHERE peer_id = '${origin}'`),
        `${origin}'s applied seq at ${s}`,
      ).toBe(last);
    }
  }
  expect(new Set(await f.digests()).size).toBe(1);
}

describe('crashes during a cycle lose and duplicate nothing', () => {
  it('answers lost after delivery, then the sender restarts', async () => {
    const f = await setup();
    await insertUsers(f.sites.lsu!.catalog.db, 'lost', 30, 20);
    f.transport.dropAcks.add('tulane');
    f.transport.dropAcks.add('uno');
    const first = await f.sites.lsu!.engine.runCycle();
    expect(first.dispatched.every((d) => !d.ok && /answer lost/.test(d.error ?? ''))).toBe(true);
    // The peers stored (and tulane even applied) the batch; lsu still has it queued.
    await f.sites.tulane!.engine.runCycle();
    expect(await count(f, 'tulane', 'SELECT count(*) FROM users')).toBe(600);
    expect(await count(f, 'lsu', `SELECT count(*) FROM repl_outgoing`)).toBe(60);
    // Another attempt, answer lost again, then lsu "crashes" and restarts.
    await f.sites.lsu!.engine.runCycle();
    const sentBefore = f.transport.sent;
    restart(f, 'lsu');
    f.transport.dropAcks.clear();
    await f.settle(10);
    expect(f.transport.sent).toBeGreaterThan(sentBefore);
    await expectConverged(f, 600);
  });

  it("the injector's connection is terminated mid-transaction while it applies thousands of changes", async () => {
    const f = await setup();
    await insertUsers(f.sites.lsu!.catalog.db, 'big', 10, 300);
    await f.sites.lsu!.engine.runCycle(); // 3000 changes stored at tulane and uno
    expect(await count(f, 'tulane', 'SELECT count(*) FROM repl_incoming')).toBe(10);

    const tulane = f.sites.tulane!;
    const { result, killed, missed } = await terminating(
      tulane.catalog.name,
      'repl_inject',
      1,
      () => tulane.engine.runCycle(),
      // The injection's inserts into users wait for this lock, so it is caught mid-transaction.
      'LOCK TABLE users IN SHARE MODE',
    );
    expect(killed, missed).toBe(1);
    // All of the origin's transactions applied in one database transaction: all or nothing.
    const users = await count(f, 'tulane', 'SELECT count(*) FROM users');
    const archived = await count(
      f,
      'tulane',
      `SELECT count(*) FROM repl_archive a, jsonb_array_elements(a.changes) c WHERE c ->> 't' = 'users'`,
    );
    expect(users).toBe(archived);
    if (users === 0) expect(result.waiting.lsu).toMatch(/^error: /);

    restart(f, 'tulane');
    await f.settle(10);
    await expectConverged(f, 3000);
  });

  it('the injector is terminated again and again: each retry starts clean', async () => {
    const f = await setup();
    await insertUsers(f.sites.lsu!.catalog.db, 'retry', 6, 300);
    await f.sites.lsu!.engine.runCycle();
    const archived = `SELECT count(*) FROM repl_archive WHERE origin = 'lsu'`;
    const archivedBefore = await count(f, 'tulane', archived);
    for (let attempt = 0; attempt < 3; attempt++) {
      const tulane = f.sites.tulane!;
      const { killed, missed } = await terminating(
        tulane.catalog.name,
        'repl_inject',
        1,
        () => tulane.engine.runCycle(),
        'LOCK TABLE users IN SHARE MODE',
      );
      expect(killed, `attempt ${attempt}: ${missed}`).toBe(1);
      // Each attempt rolled back whole: nothing of it applied, nothing archived.
      expect(await count(f, 'tulane', 'SELECT count(*) FROM users')).toBe(0);
      expect(await count(f, 'tulane', archived)).toBe(archivedBefore);
      restart(f, 'tulane');
    }
    await f.settle(10);
    await expectConverged(f, 1800);
  });

  it("the extractor's connection is terminated while it moves thousands of changes into the log", async () => {
    const f = await setup();
    await insertUsers(f.sites.lsu!.catalog.db, 'ext', 8, 300);
    const lsu = f.sites.lsu!;
    const { result, killed, missed } = await terminating(
      lsu.catalog.name,
      'DELETE FROM repl_changes',
      1,
      // The extractor itself, not a whole cycle: nothing else of the cycle can take the lock first.
      () =>
        lsu.engine.extractor.extract(['tulane', 'uno']).then(
          () => 'completed',
          (err: unknown) => (err instanceof Error ? err.message : String(err)),
        ),
      // The extraction's DELETE waits for this lock (whatever rows are there), so it is caught mid-statement.
      'LOCK TABLE repl_changes IN SHARE MODE',
    );
    expect(killed, missed).toBe(1);
    // The extraction is one transaction: either every change is logged or none is.
    const logged = await count(
      f,
      'lsu',
      `SELECT count(*) FROM repl_log l, jsonb_array_elements(l.changes) c WHERE c ->> 't' = 'users'`,
    );
    const pending = await count(f, 'lsu', 'SELECT count(*) FROM repl_changes');
    expect(logged + pending).toBe(2400);
    expect([0, 2400]).toContain(logged);
    if (logged === 0) expect(result).not.toBe('completed');

    restart(f, 'lsu');
    await f.settle(10);
    await expectConverged(f, 2400);
  });

  it("the collector's connection is terminated while it stores a large batch", async () => {
    const f = await setup();
    await insertUsers(f.sites.lsu!.catalog.db, 'col', 10, 300);
    const uno = f.sites.uno!;
    const { result, killed, missed } = await terminating(
      uno.catalog.name,
      'INSERT INTO repl_incoming',
      1,
      () => f.sites.lsu!.engine.runCycle(),
      // Stores into repl_incoming wait for this lock, so one is caught mid-statement.
      'LOCK TABLE repl_incoming IN SHARE MODE',
    );
    expect(killed, missed).toBe(1);
    const toUno = result.dispatched.find((d) => d.peer === 'uno')!;
    const stored = await count(f, 'uno', 'SELECT count(*) FROM repl_incoming');
    // Whatever uno stored, lsu keeps queued everything uno did not acknowledge.
    const queued = await count(f, 'lsu', `SELECT count(*) FROM repl_outgoing WHERE peer_id = 'uno'`);
    expect(queued + toUno.txs).toBe(10);
    expect(stored).toBeLessThanOrEqual(10);

    restart(f, 'uno');
    await f.settle(10);
    await expectConverged(f, 3000);
  });

  it('connections of every site terminated at random moments during busy cycles', async () => {
    const f = await setup();
    // Writes go through their own pools (not terminated), so the test knows exactly what was written.
    const writers = Object.fromEntries(
      SITES.map((s) => {
        const pool = new pg.Pool({ ...f.sites[s]!.catalog.connection, max: 2, application_name: 'writer' });
        pool.on('error', () => undefined);
        pools.push(pool);
        return [s, pool];
      }),
    ) as Record<Site, pg.Pool>;
    const names = Object.fromEntries(SITES.map((s) => [s, f.sites[s]!.catalog.name])) as Record<Site, string>;
    let stop = false;
    let killed = 0;
    const killer = (async () => {
      let i = 0;
      while (!stop) {
        const site = SITES[i++ % SITES.length]!;
        const res = await admin!.query<{ ok: boolean }>(
          `SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity
            WHERE datname = $1 AND pid <> pg_backend_pid() AND application_name <> 'writer'
              AND state IN ('active', 'idle in transaction')`,
          [names[site]],
        );
        killed += res.rows.filter((r) => r.ok).length;
        await new Promise((r) => setTimeout(r, 7 + (i % 5) * 3));
      }
    })();
    let written = 0;
    const failures: string[] = [];
    try {
      for (let round = 0; round < 25; round++) {
        for (const s of SITES) {
          await insertUsers(writers[s], `${s}_r${round}`, 2, 40);
          written += 80;
        }
        const reports = await Promise.allSettled(SITES.map((s) => f.sites[s]!.engine.runCycle()));
        for (const r of reports) if (r.status === 'rejected') failures.push(String(r.reason));
      }
    } finally {
      stop = true;
      await killer;
    }
    expect(killed).toBeGreaterThan(0);
    for (const s of SITES) restart(f, s);
    await f.settle(10);
    await expectConverged(f, written);
  });
});
