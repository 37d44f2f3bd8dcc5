import { randomInt } from 'node:crypto';
import type pg from 'pg';
import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import { inTransaction } from '@tributary/replication';
import { createFederation, type TestFederation } from '@tributary/replication/testing';
import { prng } from '@tributary/testkit';
import { CATALOG, useCatalogFederation } from '../../test/catalog-federation';
import { purgeWaitsFor } from './trash-settlement';

/**
 * Randomized convergence: hundreds of random catalog writes at random sites, interleaved with
 * cycles at random sites, peer outages and lost acknowledgements; then everything heals and every
 * site must hold the same catalog. The run is driven by a seeded PRNG: a failure prints the seed,
 * and `REPL_SEED=<seed>` replays the same sequence of operations (conflict winners depend on
 * microsecond stamps, so a replay is close to, not always exactly, the original run).
 * `REPL_OPS` changes the number of writes (default 400).
 */

const SITES = ['lsu', 'tulane', 'uno'] as const;
type Site = (typeof SITES)[number];

class Dice {
  constructor(readonly next: () => number) {}
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T | undefined {
    return items.length === 0 ? undefined : items[this.int(items.length)];
  }
  weighted<K extends string>(weights: Record<K, number>): K {
    const entries = Object.entries(weights) as Array<[K, number]>;
    let r = this.next() * entries.reduce((n, [, w]) => n + w, 0);
    for (const [k, w] of entries) {
      r -= w;
      if (r < 0) return k;
    }
    return entries[entries.length - 1]![0];
  }
  word(): string {
    const words = [
      'alpha',
      'bravo',
      'delta',
      'echo',
      'gumbo',
      'levee',
      'bayou',
      'crawfish',
      'praline',
      'zydeco',
    ];
    return `${this.pick(words)}-${this.int(1000)}`;
  }
}

const SEED = process.env.REPL_SEED ? Number(process.env.REPL_SEED) : randomInt(2 ** 31);
const OPS = process.env.REPL_OPS ? Number(process.env.REPL_OPS) : 400;
const RETRASH = process.env.REPL_RETRASH === '1';
const REUSE_NAMES = process.env.REPL_REUSE_NAMES === '1';

let fed: TestFederation | undefined;
afterEach(async () => {
  await fed?.close();
  fed = undefined;
});

type Op =
  | 'insertUser'
  | 'updateUser'
  | 'deleteUser'
  | 'createGroup'
  | 'updateGroup'
  | 'createMembership'
  | 'deleteMembership'
  | 'transaction'
  | 'touchFile'
  | 'trashFile'
  | 'purgeTrash'
  | 'createSymlink'
  | 'setAttributes';

const OP_WEIGHTS: Record<Op, number> = {
  insertUser: 18,
  updateUser: 22,
  deleteUser: 6,
  createGroup: 7,
  updateGroup: 9,
  createMembership: 16,
  deleteMembership: 6,
  transaction: 6,
  // Files: updates (which rescue a file another site moved to the trash), moves to the trash, and
  // purges of settled trash entries, as the API makes them.
  touchFile: 8,
  trashFile: 4,
  purgeTrash: 4,
  // Symbolic links (data object rows with a target, as POST /namespace/symlinks writes them; one
  // name at two sites is a same-name clash) and file times and modes of files, links and folders
  // (PATCH /namespace/attributes: concurrent ones differ only in attributes, decided without a record).
  createSymlink: 4,
  setAttributes: 8,
};

type Net = 'none' | 'cycle' | 'allCycles' | 'down' | 'up' | 'dropAck' | 'keepAck';

const NET_WEIGHTS: Record<Net, number> = {
  none: 62,
  cycle: 22,
  allCycles: 5,
  down: 3,
  up: 3,
  dropAck: 2.5,
  keepAck: 2.5,
};

async function ids(db: pg.Pool | pg.PoolClient, sql: string): Promise<string[]> {
  const res = await db.query<{ id: string }>(sql);
  return res.rows.map((r) => r.id);
}

/**
 * For a failed run: every row that is not the same at all sites, with each site's copy, version
 * and the conflicts recorded about it (and about the rows it references).
 */
async function explainDifferences(f: TestFederation): Promise<string> {
  const lines: string[] = [];
  for (const table of [
    'users',
    'project_groups',
    'memberships',
    'data_objects',
    'trash_entries',
    'conflicts',
  ]) {
    const copies = new Map<string, Record<string, string>>();
    for (const s of SITES) {
      const res = await f.sites[s]!.catalog.db.query<{ id: string; row: string }>(
        `SELECT id::text, to_jsonb(x)::text AS row FROM ${table} x`,
      );
      for (const r of res.rows) {
        const c = copies.get(r.id) ?? {};
        c[s] = r.row;
        copies.set(r.id, c);
      }
    }
    for (const [id, c] of copies) {
      if (SITES.every((s) => c[s] !== undefined && c[s] === c[SITES[0]])) continue;
      lines.push(`${table} ${id}:`);
      for (const s of SITES) {
        const d = f.sites[s]!.catalog.db;
        const v = await d.query<{ stamp: string; site: string; deleted: boolean }>(
          'SELECT stamp, site, deleted FROM repl_versions WHERE tbl = $1 AND row_key = $2',
          [table, id],
        );
        lines.push(`  ${s}: ${c[s] ?? '(absent)'} version ${JSON.stringify(v.rows[0] ?? null)}`);
        const related = [id];
        const copy = c[s] ?? Object.values(c)[0];
        if (copy !== undefined) {
          const row = JSON.parse(copy) as Record<string, string | number | null>;
          for (const k of ['user_id', 'group_id']) if (row[k] != null) related.push(String(row[k]));
        }
        const conflicts = await d.query<{
          kind: string;
          tbl: string;
          row_key: string;
          winner: string;
          local_site: string | null;
          local_stamp: string | null;
          incoming_site: string;
          incoming_stamp: string;
          resolution: string;
        }>(
          `SELECT kind, tbl, row_key, winner, local_site, local_stamp, incoming_site, incoming_stamp, resolution
             FROM repl_conflicts WHERE row_key = ANY($1) ORDER BY detected_at`,
          [related],
        );
        for (const k of conflicts.rows) {
          lines.push(
            `    conflict ${k.kind} ${k.tbl} ${k.row_key}: held ${k.local_stamp}@${k.local_site} vs incoming ${k.incoming_stamp}@${k.incoming_site} -> ${k.winner} (${k.resolution})`,
          );
        }
        // Same-name records about it (renames on a name clash), as this site holds them.
        const renames = await d.query<{ id: string; status: string; detail: unknown }>(
          `SELECT id, status, detail FROM conflicts
            WHERE kind = 'same-name' AND (row_key = $1 OR detail ->> 'kept' = $1) ORDER BY id`,
          [id],
        );
        for (const r of renames.rows) {
          lines.push(`    same-name ${r.id} ${r.status}: ${JSON.stringify(r.detail)}`);
          const kept = (r.detail as { kept?: string }).kept;
          const keeper = await d.query<{ row: string }>(
            `SELECT to_jsonb(x)::text AS row FROM ${table} x WHERE id::text = $1`,
            [kept],
          );
          const kv = await d.query<{ stamp: string; site: string; deleted: boolean }>(
            'SELECT stamp, site, deleted FROM repl_versions WHERE tbl = $1 AND row_key = $2',
            [table, kept],
          );
          lines.push(
            `      kept ${kept}: ${keeper.rows[0]?.row ?? '(absent)'} version ${JSON.stringify(kv.rows[0] ?? null)}`,
          );
        }
      }
    }
  }
  return lines.join('\n');
}

describe('randomized convergence (three catalogs, in-memory transport)', () => {
  it(
    `random writes, cycles, outages and lost answers converge (seed ${SEED})`,
    { timeout: 120_000 },
    async () => {
      onTestFailed(() => {
        console.error(`randomized replication test failed: reproduce with REPL_SEED=${SEED}`);
      });
      const started = Date.now();
      const f = (fed = await createFederation([...SITES], CATALOG));
      const dice = new Dice(prng(SEED));
      const db = (s: Site): pg.Pool => f.sites[s]!.catalog.db;
      const engine = (s: Site) => f.sites[s]!.engine;
      let counter = 0;
      const done: Record<Op | Net, number> = {
        insertUser: 0,
        updateUser: 0,
        deleteUser: 0,
        createGroup: 0,
        updateGroup: 0,
        createMembership: 0,
        deleteMembership: 0,
        transaction: 0,
        touchFile: 0,
        trashFile: 0,
        purgeTrash: 0,
        createSymlink: 0,
        setAttributes: 0,
        none: 0,
        cycle: 0,
        allCycles: 0,
        down: 0,
        up: 0,
        dropAck: 0,
        keepAck: 0,
      };
      const trace: string[] = [];

      const insertUser = async (c: pg.Pool | pg.PoolClient, s: Site): Promise<string> => {
        const name = `${s}_u${++counter}`;
        const res = await c.query<{ id: string }>(
          `INSERT INTO users (username, display_name, email, password_hash, updated_at)
         VALUES ($1, $2, $3, 'x', now()) RETURNING id`,
          [name, dice.word(), dice.chance(0.5) ? `${name}@example.org` : null],
        );
        return res.rows[0]!.id;
      };
      const createGroup = async (c: pg.Pool | pg.PoolClient, s: Site): Promise<string> => {
        const res = await c.query<{ id: string }>(
          `INSERT INTO project_groups (name, description, updated_at) VALUES ($1, $2, now()) RETURNING id`,
          [`${s}_g${++counter}`, dice.word()],
        );
        return res.rows[0]!.id;
      };
      const createMembership = async (
        c: pg.Pool | pg.PoolClient,
        user: string,
        group: string,
      ): Promise<boolean> => {
        // The same pair may be added at two sites in one cycle: one record (migration natural_ids).
        const held = await c.query('SELECT 1 FROM memberships WHERE user_id = $1 AND group_id = $2', [
          user,
          group,
        ]);
        if (held.rowCount) return false;
        await c.query(
          `INSERT INTO memberships (user_id, group_id, role, updated_at) VALUES ($1, $2, $3, now())`,
          [user, group, dice.chance(0.3) ? 'manager' : 'member'],
        );
        return true;
      };
      const updateUser = async (c: pg.Pool | pg.PoolClient, id: string): Promise<void> => {
        if (dice.chance(0.6)) {
          await c.query(`UPDATE users SET display_name = $2, updated_at = now() WHERE id = $1`, [
            id,
            dice.word(),
          ]);
        } else {
          await c.query(`UPDATE users SET email = $2, updated_at = now() WHERE id = $1`, [
            id,
            dice.chance(0.8) ? `${dice.word()}@example.org` : null,
          ]);
        }
      };

      // Files under /proj, made at lsu before the run.
      const owner = await insertUser(db('lsu'), 'lsu');
      const root = await db('lsu').query<{ id: string }>(
        `INSERT INTO collections (parent_id, name, path, owner_id, updated_at) VALUES (NULL, '', '/', $1, now()) RETURNING id`,
        [owner],
      );
      const proj = await db('lsu').query<{ id: string }>(
        `INSERT INTO collections (parent_id, name, path, owner_id, updated_at) VALUES ($1, 'proj', '/proj', $2, now()) RETURNING id`,
        [root.rows[0]!.id, owner],
      );
      for (let i = 0; i < 8; i++) {
        await db('lsu').query(
          `INSERT INTO data_objects (collection_id, name, size, checksum, owner_id, updated_at)
           VALUES ($1, $2, 1, 'sha256:x', $3, now())`,
          [proj.rows[0]!.id, `f${i}`, owner],
        );
      }
      await f.settle();
      let purged = 0;
      const trashedOnce = new Set<string>();
      // Link names once moved to the trash are not created again (REPL_REUSE_NAMES=1 allows it). That
      // used to diverge on the same-name rule (fixed; conflicts.itest.ts, "a name freed by a move to
      // the trash"); with reuse, runs may still meet the update-against-trash bug (docs/conflicts.md).
      const retiredNames = new Set<string>();

      const step = async (op: Op, s: Site): Promise<boolean> => {
        const d = db(s);
        switch (op) {
          case 'touchFile': {
            const id = dice.pick(await ids(d, 'SELECT id FROM data_objects WHERE trash_id = 0 ORDER BY id'));
            if (id === undefined) return false;
            await d.query('UPDATE data_objects SET content_type = $2, updated_at = now() WHERE id = $1', [
              id,
              `text/x-${dice.word()}`,
            ]);
            return true;
          }
          case 'trashFile': {
            const live = await ids(d, 'SELECT id FROM data_objects WHERE trash_id = 0 ORDER BY id');
            // A file rescued from the trash and moved there again can leave the sites diverging (a known
            // bug of the conflict rules: the skipped case in conflicts.itest.ts); REPL_RETRASH=1 allows it.
            const id = dice.pick(RETRASH ? live : live.filter((f) => !trashedOnce.has(f)));
            if (id === undefined) return false;
            trashedOnce.add(id);
            const named = await d.query<{ name: string }>('SELECT name FROM data_objects WHERE id = $1', [
              id,
            ]);
            if (named.rows[0]) retiredNames.add(named.rows[0].name);
            await inTransaction(d, async (client) => {
              const t = await client.query<{ id: string }>(
                `INSERT INTO trash_entries (kind, object_id, original_path, deleted_by_id, deleted_at_site, updated_at)
                 SELECT 'object', o.id, '/proj/' || o.name, $2, $3, now() FROM data_objects o WHERE o.id = $1 RETURNING id`,
                [id, owner, s],
              );
              await client.query('UPDATE data_objects SET trash_id = $2, updated_at = now() WHERE id = $1', [
                id,
                t.rows[0]!.id,
              ]);
            });
            return true;
          }
          case 'purgeTrash': {
            // As DELETE /api/v1/trash/:id: settled, still holding its object, nothing awaited here.
            return inTransaction(d, async (client) => {
              const entries = await client.query<{ id: string; object_id: string }>(
                `SELECT t.id::text, t.object_id::text FROM trash_entries t
                   JOIN data_objects o ON o.id = t.object_id AND o.trash_id = t.id
                  WHERE t.settled_at IS NOT NULL ORDER BY t.id FOR UPDATE OF t, o`,
              );
              const entry = dice.pick(entries.rows);
              // Nothing written then: the transaction ends having only read.
              if (!entry || (await purgeWaitsFor(client, entry.id, s)).length > 0) return false;
              await client.query('DELETE FROM trash_entries WHERE object_id = $1', [entry.object_id]);
              await client.query('DELETE FROM data_objects WHERE id = $1', [entry.object_id]);
              purged += 1;
              return true;
            });
          }
          case 'createSymlink': {
            // A few names only, so two sites often create the same one in one cycle.
            const name = `link-${dice.int(6)}`;
            if (!REUSE_NAMES && retiredNames.has(name)) return false;
            const taken = await d.query(
              'SELECT 1 FROM data_objects WHERE collection_id = $1 AND trash_id = 0 AND name = $2',
              [proj.rows[0]!.id, name],
            );
            if (taken.rowCount) return false;
            const target = dice.chance(0.5) ? `../${dice.word()}` : `/abs/${dice.word()}`;
            await d.query(
              `INSERT INTO data_objects (collection_id, name, size, checksum, content_type, owner_id, mode, link_target, updated_at)
               VALUES ($1, $2, octet_length($3), encode(sha256(convert_to($3, 'UTF8')), 'hex'), 'inode/symlink', $4, 511, $3, now())`,
              [proj.rows[0]!.id, name, target, owner],
            );
            return true;
          }
          case 'setAttributes': {
            // As PATCH /api/v1/namespace/attributes: mode and/or file time of a live file, link or folder.
            const folder = dice.chance(0.2);
            const id = dice.pick(
              await ids(
                d,
                folder
                  ? 'SELECT id FROM collections WHERE trash_id = 0 ORDER BY id'
                  : 'SELECT id FROM data_objects WHERE trash_id = 0 ORDER BY id',
              ),
            );
            if (id === undefined) return false;
            const mode = dice.chance(0.6) ? dice.int(0o7777 + 1) : null;
            const mtime =
              mode === null || dice.chance(0.5) ? [dice.int(2_000_000_000), dice.int(1_000_000_000)] : null;
            await d.query(
              `UPDATE ${folder ? 'collections' : 'data_objects'}
                  SET mode = CASE WHEN link_target IS NULL THEN COALESCE($2, mode) ELSE mode END,
                      mtime_s = COALESCE($3, mtime_s), mtime_nsec = COALESCE($4, mtime_nsec), updated_at = now()
                WHERE id = $1`.replace(
                'WHEN link_target IS NULL',
                folder ? 'WHEN true' : 'WHEN link_target IS NULL',
              ),
              [id, mode, mtime?.[0] ?? null, mtime?.[1] ?? null],
            );
            return true;
          }
          case 'insertUser':
            await insertUser(d, s);
            return true;
          case 'updateUser': {
            const id = dice.pick(await ids(d, 'SELECT id FROM users ORDER BY id'));
            if (id === undefined) return false;
            await updateUser(d, id);
            return true;
          }
          case 'deleteUser': {
            const id = dice.pick(await ids(d, 'SELECT id FROM users ORDER BY id'));
            if (id === undefined) return false;
            await d.query('DELETE FROM users WHERE id = $1', [id]);
            return true;
          }
          case 'createGroup':
            await createGroup(d, s);
            return true;
          case 'updateGroup': {
            const id = dice.pick(await ids(d, 'SELECT id FROM project_groups ORDER BY id'));
            if (id === undefined) return false;
            await d.query(`UPDATE project_groups SET description = $2, updated_at = now() WHERE id = $1`, [
              id,
              dice.word(),
            ]);
            return true;
          }
          case 'createMembership': {
            const user = dice.pick(await ids(d, 'SELECT id FROM users ORDER BY id'));
            const group = dice.pick(await ids(d, 'SELECT id FROM project_groups ORDER BY id'));
            if (user === undefined || group === undefined) return false;
            return createMembership(d, user, group);
          }
          case 'deleteMembership': {
            const id = dice.pick(await ids(d, 'SELECT id FROM memberships ORDER BY id'));
            if (id === undefined) return false;
            await d.query('DELETE FROM memberships WHERE id = $1', [id]);
            return true;
          }
          case 'transaction': {
            // One local transaction touching several tables: it must apply atomically everywhere.
            await inTransaction(d, async (client) => {
              const user = await insertUser(client, s);
              const group = await createGroup(client, s);
              await createMembership(client, user, group);
              const other = dice.pick(await ids(client, 'SELECT id FROM users ORDER BY id'));
              if (other !== undefined) await updateUser(client, other);
              const existing = dice.pick(await ids(client, 'SELECT id FROM project_groups ORDER BY id'));
              if (existing !== undefined && existing !== group)
                await createMembership(client, user, existing);
            });
            return true;
          }
        }
      };

      const net = async (action: Net): Promise<void> => {
        const s = dice.pick(SITES)!;
        switch (action) {
          case 'none':
            return;
          case 'cycle':
            await engine(s).runCycle();
            break;
          case 'allCycles':
            // As in production: every site's loop runs on its own, so cycles and collectors overlap.
            await Promise.all(SITES.map((x) => engine(x).runCycle()));
            break;
          case 'down':
            if (f.transport.down.size >= 2) return;
            f.transport.down.add(s);
            break;
          case 'up':
            f.transport.down.delete(s);
            break;
          case 'dropAck':
            f.transport.dropAcks.add(s);
            break;
          case 'keepAck':
            f.transport.dropAcks.delete(s);
            break;
        }
        trace.push(`${action} ${s}`);
        done[action] += 1;
      };

      let writes = 0;
      let attempts = 0;
      while (writes < OPS && attempts < OPS * 3) {
        attempts += 1;
        const s = dice.pick(SITES)!;
        const op = dice.weighted(OP_WEIGHTS);
        if (await step(op, s)) {
          writes += 1;
          done[op] += 1;
          trace.push(`${op} ${s}`);
        }
        await net(dice.weighted(NET_WEIGHTS));
      }
      expect(writes).toBe(OPS);

      // Heal and settle.
      f.transport.down.clear();
      f.transport.dropAcks.clear();
      await f.settle(10);

      const problems: string[] = [];
      const digests = await Promise.all(SITES.map((s) => engine(s).digest()));
      const reference = digests[0]!;
      for (const [i, dg] of digests.entries()) {
        for (const [table, t] of Object.entries(reference.tables)) {
          const other = dg.tables[table];
          if (other?.rows !== t.rows || other.digest !== t.digest) {
            problems.push(
              `${SITES[i]} ${table}: ${other?.rows} rows (${other?.digest}) vs ${SITES[0]}: ${t.rows} rows (${t.digest})`,
            );
          }
        }
      }
      for (const s of SITES) {
        const waiting = await db(s).query<{ peer_id: string; waiting_on: string }>(
          'SELECT peer_id, waiting_on FROM repl_peers WHERE waiting_on IS NOT NULL',
        );
        for (const w of waiting.rows) problems.push(`${s} waits on ${w.peer_id}: ${w.waiting_on}`);
        const leftovers = await db(s).query<{ q: string; n: number }>(
          `SELECT 'repl_incoming' AS q, count(*)::int AS n FROM repl_incoming
         UNION ALL SELECT 'repl_outgoing', count(*)::int FROM repl_outgoing
         UNION ALL SELECT 'repl_changes', count(*)::int FROM repl_changes`,
        );
        for (const l of leftovers.rows) if (l.n > 0) problems.push(`${s}: ${l.n} rows left in ${l.q}`);
        // A file in the trash is in an entry that still exists (purges remove both together).
        const orphans = await db(s).query<{ id: string }>(
          `SELECT o.id::text FROM data_objects o
            WHERE o.trash_id <> 0 AND NOT EXISTS (SELECT 1 FROM trash_entries t WHERE t.id = o.trash_id)`,
        );
        for (const o of orphans.rows) problems.push(`${s}: file ${o.id} is in a trash entry that is gone`);
      }
      const conflicts = await Promise.all(
        SITES.map(async (s) => {
          const r = await db(s).query<{ kind: string; n: number }>(
            'SELECT kind, count(*)::int AS n FROM repl_conflicts GROUP BY kind ORDER BY kind',
          );
          return `${s}: ${r.rows.map((x) => `${x.kind}=${x.n}`).join(',') || 'none'}`;
        }),
      );
      const summary =
        `seed ${SEED}: ${writes} writes (${JSON.stringify(done)}), ` +
        `rows ${JSON.stringify(Object.fromEntries(Object.entries(reference.tables).map(([t, v]) => [t, v.rows])))}, ` +
        `conflicts [${conflicts.join('; ')}], ${purged} purges, ${Date.now() - started} ms`;
      console.log(summary);
      if (problems.length > 0) {
        console.error(`last operations:\n  ${trace.slice(-40).join('\n  ')}`);
        console.error(await explainDifferences(f));
      }

      expect(problems, `REPL_SEED=${SEED}\n${summary}`).toEqual([]);
      expect(new Set(digests.map((d) => d.digest)).size, `REPL_SEED=${SEED}`).toBe(1);
      expect(reference.tables.users!.rows).toBeGreaterThan(0);
      expect(reference.tables.sites!.rows).toBe(3);
    },
  );
});

describe('cases the randomized test found', () => {
  let f: TestFederation;
  const { db, addUser } = useCatalogFederation([...SITES], (started) => {
    f = started;
  });
  const cycle = (s: Site) => f.sites[s]!.engine.runCycle();
  async function addGroup(site: Site, name: string): Promise<string> {
    const res = await db(site).query<{ id: string }>(
      `INSERT INTO project_groups (name, updated_at) VALUES ($1, now()) RETURNING id`,
      [name],
    );
    return res.rows[0]!.id;
  }
  async function addMembership(site: Site, user: string, group: string): Promise<string> {
    const res = await db(site).query<{ id: string }>(
      `INSERT INTO memberships (user_id, group_id, updated_at) VALUES ($1, $2, now()) RETURNING id`,
      [user, group],
    );
    return res.rows[0]!.id;
  }
  /** How many rows `sql` finds at each site, given the one parameter. */
  const counts = (sql: string, param: string) =>
    Promise.all(SITES.map(async (s) => (await db(s).query(sql, [param])).rowCount));
  /**
   * Every site reachable again, cycles until quiet: the user's latest version is an update, so the
   * user exists everywhere, and so must the membership made on it (every site must hold the same
   * catalog).
   */
  async function expectUserAndMembershipEverywhere(user: string): Promise<void> {
    f.transport.down.clear();
    await f.settle(10);
    expect(await counts('SELECT 1 FROM users WHERE id = $1', user)).toEqual([1, 1, 1]);
    expect(await counts('SELECT 1 FROM memberships WHERE user_id = $1', user)).toEqual([1, 1, 1]);
    expect(new Set(await f.digests()).size).toBe(1);
  }

  it('a child refused because its parent was deleted here comes back when the parent is resurrected by a later update', async () => {
    const u = await addUser('lsu', 'ursula');
    const g = await addGroup('lsu', 'geo');
    await f.settle();

    // uno deletes the user; lsu updates it a little later (the update is the latest version).
    await db('uno').query('DELETE FROM users WHERE id = $1', [u]);
    await new Promise((r) => setTimeout(r, 5));
    await db('lsu').query(`UPDATE users SET display_name = 'U2' WHERE id = $1`, [u]);
    // The update reaches tulane but not uno (down).
    f.transport.down.add('uno');
    await cycle('lsu');
    await cycle('tulane');
    // tulane adds the user to a group; that reaches uno before lsu's update does.
    await addMembership('tulane', u, g);
    f.transport.down.delete('uno');
    f.transport.down.add('lsu');
    await cycle('tulane');
    await cycle('uno'); // the membership is refused at uno: its user is deleted here
    await expectUserAndMembershipEverywhere(u);
  });
  it('a child refused for a parent deleted here waits for its other parent still on its way, and comes back with the first', async () => {
    // Found by seed 1718400967: kept aside for its deleted user, the membership failed again on its
    // group when the user came back (the group had not arrived yet) and stayed aside for ever.
    const u = await addUser('lsu', 'wanda');
    await f.settle();

    // uno deletes the user; tulane updates it a little later (the update is the latest version),
    // then makes a group.
    await db('uno').query('DELETE FROM users WHERE id = $1', [u]);
    await new Promise((r) => setTimeout(r, 5));
    await db('tulane').query(`UPDATE users SET display_name = 'W2' WHERE id = $1`, [u]);
    const g = await addGroup('tulane', 'chem');
    // Both reach lsu, not uno; lsu adds the user to the group.
    f.transport.down.add('uno');
    await cycle('tulane');
    await cycle('lsu');
    await addMembership('lsu', u, g);
    // The membership reaches uno before tulane's update and group do.
    f.transport.down.delete('uno');
    f.transport.down.add('tulane');
    await cycle('lsu');
    await cycle('uno');
    await expectUserAndMembershipEverywhere(u);
  });
  it('a change to a row whose insert was refused here (parent deleted) does not stall its origin for ever', async () => {
    const u = await addUser('lsu', 'vic');
    const g = await addGroup('lsu', 'bio');
    await f.settle();

    // lsu deletes the user; meanwhile uno adds it to a group.
    await db('lsu').query('DELETE FROM users WHERE id = $1', [u]);
    const m = await addMembership('uno', u, g);
    await cycle('uno'); // the membership reaches lsu and tulane
    f.transport.down.add('tulane');
    f.transport.down.add('uno');
    await cycle('lsu'); // lsu refuses the membership (its user is deleted here); its delete stays queued
    // tulane removes the membership before it hears of the user's deletion.
    await cycle('tulane');
    await db('tulane').query('DELETE FROM memberships WHERE id = $1', [m]);
    await addUser('tulane', 'later');
    f.transport.down.clear();
    await f.settle(10);

    const waiting = await db('lsu').query<{ waiting_on: string | null }>(
      `SELECT waiting_on FROM repl_peers WHERE peer_id = 'tulane'`,
    );
    expect(waiting.rows[0]?.waiting_on ?? null).toBeNull();
    // What tulane wrote afterwards reaches lsu.
    const later = await db('lsu').query(`SELECT 1 FROM users WHERE username = 'later'`);
    expect(later.rowCount).toBe(1);
    expect(new Set(await f.digests()).size).toBe(1);
  });
});
