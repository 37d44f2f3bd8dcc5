import type { MoverStatusDto, ObjectCopiesDto, PlacementRuleDto } from '@tributary/shared';
import { createHash, randomBytes } from 'node:crypto';
import { readFile, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { sleep, testBytes, uniqueName, type Federation, type FederationSite } from '@tributary/testkit';
import { fileExists, storageFile } from '../test/copies';
import { expectStatus } from '../test/test-site';
import { until, useFederation } from '../test/federation';

/**
 * The mover on three real site processes (lsu, tulane, uno) with a 1 s replication cycle and a
 * 300 ms mover interval: copies a rule wants end verified at every wanted site (bytes compared on
 * disk and through each site's API), a copy interrupted by SIGKILL resumes from its partial file and
 * is never good before it is whole, and copies no longer wanted go once the wanted ones are good,
 * never the last good one. PLACEMENT_BIG=1 makes the interrupted object 1 GiB instead of 200 MiB;
 * PLACEMENT_BANDWIDTH_MIBS sets the mover's bandwidth (default 40, so the kill lands mid-copy).
 */

const IDS = ['lsu', 'tulane', 'uno'];
const MiB = 1024 * 1024;
const BIG = process.env.PLACEMENT_BIG === '1' ? 1024 * MiB : 200 * MiB;
const BANDWIDTH = process.env.PLACEMENT_BANDWIDTH_MIBS ?? '40';

const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');

describe('the mover across three sites', () => {
  let fed: Federation;
  let lsu: FederationSite;
  let tulane: FederationSite;
  let uno: FederationSite;

  useFederation(
    {
      ids: IDS,
      cycleSeconds: 1,
      env: { PLACEMENT_INTERVAL_MS: '300', PLACEMENT_BANDWIDTH_MIBS: BANDWIDTH, PEER_DOWN_MS: '2000' },
    },
    (started) => {
      fed = started;
      [lsu, tulane, uno] = IDS.map((id) => fed.site(id)) as [FederationSite, FederationSite, FederationSite];
    },
  );

  async function addRule(
    site: FederationSite,
    at: string,
    copies: number,
    sites?: string[],
  ): Promise<PlacementRuleDto> {
    return expectStatus(
      await site.http.post<PlacementRuleDto>('/api/v1/placement/rules', {
        path: at,
        copies,
        ...(sites ? { sites } : {}),
      }),
      201,
    ).body;
  }

  async function copiesAt(site: FederationSite, file: string): Promise<ObjectCopiesDto> {
    return expectStatus(
      await site.http.get<ObjectCopiesDto>('/api/v1/placement/copies', { query: { path: file } }),
      200,
    ).body;
  }

  /** The sites with a good current copy, in `site`'s view. */
  async function goodAt(site: FederationSite, file: string): Promise<string[]> {
    return (await copiesAt(site, file)).copies
      .filter((c) => c.current)
      .map((c) => c.site)
      .sort();
  }

  /** `site`'s own copy row of `file` (status and key), read from its catalog. */
  async function rowAt(
    site: FederationSite,
    file: string,
  ): Promise<{ status: string; key: string } | undefined> {
    const { dir, name } = { dir: path.posix.dirname(file), name: path.posix.basename(file) };
    const res = await site.query<{ status: string; key: string }>(
      `SELECT r.status::text AS status, r.physical_path AS key FROM replicas r
         JOIN data_objects o ON o.id = r.object_id JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 AND o.name = $2 AND r.site_id = $3`,
      [dir, name, site.id],
    );
    return res.rows[0];
  }

  const storageOf = (site: FederationSite): string => path.join(fed.dataDir, 'sites', site.id, 'storage');

  /** The SHA-256 of `site`'s file of its copy (as the local file-system driver lays it out). */
  async function fileSha(site: FederationSite, file: string): Promise<string | undefined> {
    const row = await rowAt(site, file);
    if (!row?.key) return undefined;
    const shard = row.key.split('.')[0]!.slice(-2).padStart(2, '0');
    return sha256(await readFile(path.join(storageOf(site), 'objects', shard, row.key)));
  }

  async function downloadSha(site: FederationSite, file: string): Promise<string> {
    const res = await site.client.download(file);
    expect(res.status, `${site.id} ${file}`).toBe(200);
    return sha256(Buffer.from(await res.arrayBuffer()));
  }

  it('a rule for 3 copies ends with verified bytes at all three sites (batched and ranged copies)', async () => {
    const dir = `/projects/${uniqueName('three')}`;
    await lsu.client.createCollection(dir);
    const files = new Map<string, Buffer>([
      [`${dir}/a.txt`, testBytes(10_000, 1)],
      [`${dir}/b.txt`, testBytes(200_000, 2)],
      [`${dir}/empty`, Buffer.alloc(0)],
      [`${dir}/large.bin`, testBytes(3 * MiB + 17, 3)],
    ]);
    for (const [file, bytes] of files) await lsu.client.upload(file, bytes);
    await addRule(lsu, dir, 3);
    for (const file of files.keys()) {
      const done = await until(
        async () =>
          (await Promise.all([lsu, tulane, uno].map((s) => goodAt(s, file)))).every((g) => g.length === 3),
        45_000,
      );
      expect(done, `${file}: ${JSON.stringify(await copiesAt(tulane, file))}`).toBe(true);
    }
    for (const site of [lsu, tulane, uno]) {
      for (const [file, bytes] of files) {
        expect(await fileSha(site, file), `${site.id} ${file} on disk`).toBe(sha256(bytes));
        expect(await downloadSha(site, file), `${site.id} ${file} through its API`).toBe(sha256(bytes));
      }
      const copies = await copiesAt(site, `${dir}/large.bin`);
      expect(copies.wantedSites.sort()).toEqual([...IDS].sort());
      expect(copies.copies.every((c) => c.state === 'good' && c.current && c.wanted)).toBe(true);
      // The copies the mover made were hashed as they arrived (the home site's came by upload).
      expect(copies.copies.filter((c) => c.site !== 'lsu').every((c) => c.verifiedAt !== null)).toBe(true);
    }
    const status = expectStatus(await tulane.http.get<MoverStatusDto>('/api/v1/placement/mover'), 200).body;
    expect(status.site).toBe('tulane');
    expect(status.bytesTotal).toBeGreaterThanOrEqual(3 * MiB + 210_000);
    expect(status.states.good).toBeGreaterThanOrEqual(4);
    const metrics = expectStatus(await tulane.http.get('/metrics'), 200).text;
    expect(metrics).toMatch(/^tributary_placement_bytes_total [1-9]/m);
    expect(metrics).toMatch(/^tributary_placement_copies\{state="good"\} [1-9]/m);
  }, 60_000);

  it('a copy killed midway resumes from its partial file after a restart and is never good before it is whole', async () => {
    // Made off the event loop: a long synchronous pause would let a kept-alive socket go stale.
    const bytes = await promisify(randomBytes)(BIG);
    const dir = `/projects/${uniqueName('big')}`;
    await lsu.client.createCollection(dir);
    const file = `${dir}/big.bin`;
    await lsu.client.upload(file, bytes);
    await addRule(lsu, dir, 2, ['lsu', 'tulane']);
    let seen: MoverStatusDto['inFlight'][number] | undefined;
    const states = new Set<string>();
    const midway = await until(
      async () => {
        const status = expectStatus(
          await tulane.http.get<MoverStatusDto>('/api/v1/placement/mover'),
          200,
        ).body;
        seen = status.inFlight.find((t) => t.path === file);
        states.add((await rowAt(tulane, file))?.status ?? 'none');
        return seen !== undefined && seen.bytesDone >= BIG / 4;
      },
      60_000,
      100,
    );
    expect(midway, 'the copy got a quarter of the way').toBe(true);
    expect(states.has('good'), `tulane's row went through ${[...states].join(', ')}`).toBe(false);
    await tulane.kill('SIGKILL');
    const row = await rowAt(tulane, file);
    expect(row?.status).toBe('copying');
    const drafts = await readdir(path.join(storageOf(tulane), '.copies'));
    expect(drafts).toHaveLength(1);
    const partial = (await stat(path.join(storageOf(tulane), '.copies', drafts[0]!))).size;
    expect(partial).toBeGreaterThan(0);
    expect(partial).toBeLessThan(BIG);

    await tulane.restart();
    const early: string[][] = [];
    const whole = await until(
      async () => {
        const r = await rowAt(tulane, file);
        if (r?.status === 'good') return true;
        // Until tulane's row is good, no copy of tulane's counts as good and current anywhere.
        const good = await goodAt(lsu, file);
        if (good.join() !== 'lsu') early.push(good);
        return false;
      },
      60_000,
      150,
    );
    expect(whole).toBe(true);
    expect(early).toEqual([]);
    expect(await fileSha(tulane, file)).toBe(sha256(bytes));
    // The restarted process fetched only what the partial file lacked.
    const metrics = expectStatus(await tulane.http.get('/metrics'), 200).text;
    const fetched = Number(/^tributary_placement_bytes_total (\S+)$/m.exec(metrics)?.[1]);
    expect(fetched).toBeLessThanOrEqual(BIG - partial + 8 * MiB);
    expect(await readdir(path.join(storageOf(tulane), '.copies'))).toEqual([]);
  }, 120_000);

  it('copies no longer wanted go once the wanted ones are good; the last good copy stays', async () => {
    const root = `/projects/${uniqueName('trim')}`;
    await lsu.client.createCollection(root);
    await lsu.client.createCollection(`${root}/sub`);
    const file = `${root}/sub/f.bin`;
    const bytes = testBytes(50_000, 9);
    await lsu.client.upload(file, bytes);
    await addRule(lsu, root, 1);
    const three = await addRule(lsu, `${root}/sub`, 3);
    expect(await until(async () => (await goodAt(uno, file)).length === 3, 30_000)).toBe(true);
    const tulaneKey = (await rowAt(tulane, file))!.key;

    // The 3-copy rule removed at another site: the 1-copy rule on the parent wants the home site only.
    expectStatus(await tulane.http.delete(`/api/v1/placement/rules/${three.id}`), 204);
    expect(
      await until(
        async () =>
          (await goodAt(lsu, file)).join() === 'lsu' &&
          !(await rowAt(tulane, file)) &&
          !(await rowAt(uno, file)),
        30_000,
      ),
    ).toBe(true);
    await expect(
      stat(path.join(storageOf(tulane), 'objects', tulaneKey.slice(-2).padStart(2, '0'), tulaneKey)),
    ).rejects.toThrow();
    expect(await downloadSha(uno, file)).toBe(sha256(bytes));

    // A rule that wants the copy only at a site that is down: the copy here is surplus but the last good one.
    await uno.kill('SIGKILL');
    const rules = await lsu.http.get<{ items: PlacementRuleDto[] }>('/api/v1/placement/rules', {
      query: { path: root },
    });
    const parentRule = expectStatus(rules, 200).body.items.find((r) => r.path === root)!;
    expectStatus(await lsu.http.delete(`/api/v1/placement/rules/${parentRule.id}`), 204);
    await addRule(lsu, root, 1, ['uno']);
    await sleep(3000);
    expect((await rowAt(lsu, file))?.status).toBe('good');
    expect(await goodAt(tulane, file)).toEqual(['lsu']);

    // Once uno is back it copies, and only then does lsu let its copy go.
    await uno.restart();
    const trimmed = await until(
      async () => (await goodAt(lsu, file)).join() === 'uno' && !(await rowAt(lsu, file)),
      45_000,
    );
    expect(
      trimmed,
      `lsu: ${JSON.stringify(await copiesAt(lsu, file))}\nuno: ${JSON.stringify(await copiesAt(uno, file))}`,
    ).toBe(true);
    expect(await downloadSha(lsu, file)).toBe(sha256(bytes));
    expect(await fileSha(uno, file)).toBe(sha256(bytes));
  }, 120_000);

  it('random trims, rule removals, lower copies and purges with a concurrent update or rescue elsewhere never lose the last good copy', async () => {
    const seed = Number(process.env.PLACEMENT_SEED ?? Math.floor(Math.random() * 2 ** 31));
    let x = seed || 1;
    const random = (): number => {
      x = (x * 1103515245 + 12345) % 2 ** 31;
      return x / 2 ** 31;
    };
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
    const sites = [lsu, tulane, uno];
    const root = `/projects/${uniqueName('random')}`;
    await lsu.client.createCollection(root);
    await addRule(lsu, root, 1);
    interface Case {
      dir: string;
      path: string;
      bytes: Buffer;
      rule: PlacementRuleDto;
      deletion: 'remove-rule' | 'lower-copies' | 'other-site';
      change: 'update' | 'rescue' | 'purge';
      id?: string;
    }
    const cases: Case[] = [];
    for (let i = 0; i < 5; i++) {
      const dir = `${root}/o${i}`;
      const home = pick(sites);
      await lsu.client.createCollection(dir);
      // The object is created at `home` (its home site), once the folder has reached it.
      expect(await until(async () => (await home.client.stat(dir)).path === dir, 15_000)).toBe(true);
      const bytes = testBytes(i === 0 ? 2 * MiB : 20_000 + i, 100 + i);
      await home.client.upload(`${dir}/f.bin`, bytes);
      cases.push({
        dir,
        path: `${dir}/f.bin`,
        bytes,
        rule: await addRule(home, dir, 3),
        deletion: pick(['remove-rule', 'lower-copies', 'other-site'] as const),
        change: pick(['update', 'rescue', 'purge'] as const),
      });
    }
    const context = `seed ${seed} (PLACEMENT_SEED): ${cases.map((c) => `${c.deletion}+${c.change}`).join(', ')}`;
    for (const c of cases) {
      expect(
        await until(async () => (await goodAt(uno, c.path)).length === 3, 30_000),
        `${context}: ${c.path}`,
      ).toBe(true);
      c.id = (await lsu.client.stat(c.path)).id;
    }

    /** Objects whose purge was sent: they may have no copy from then on. */
    const purging = new Set<string>();
    // Every 100 ms, each site's own view of its own copy: some site must hold a good current one.
    const lost: string[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        const good = new Map<string, number>();
        for (const site of sites) {
          if (!site.running) continue;
          const { rows } = await site.query<{ id: string }>(
            `SELECT r.object_id::text AS id FROM replicas r JOIN data_objects o ON o.id = r.object_id
              WHERE r.site_id = $1 AND r.status = 'good' AND r.checksum = o.checksum AND r.object_id = ANY($2::bigint[])`,
            [site.id, cases.map((c) => c.id)],
          );
          for (const r of rows) good.set(r.id, (good.get(r.id) ?? 0) + 1);
        }
        for (const c of cases)
          if (!good.get(c.id!) && !purging.has(c.id!)) lost.push(`${c.path} at ${new Date().toISOString()}`);
        await sleep(100);
      }
    })();

    // The purges (the delete path that removes every copy's file): an entry is purged once every site has
    // applied the removal, at a random site. A rescued entry (the rename won) leaves the trash instead
    // and must never be purged.
    const purged: Array<{ path: string; id: string; keys: Map<string, string> }> = [];
    const trashAt = async (site: FederationSite): Promise<Array<{ id: string; purgeAllowed: boolean }>> =>
      expectStatus(
        await site.http.get<{ items: Array<{ id: string; purgeAllowed: boolean }> }>('/api/v1/trash', {
          query: { limit: 1000 },
        }),
        200,
      ).body.items;
    const purgeOnceAllowed = async (
      objectId: string,
      entryId: string,
      removedAt: FederationSite,
      at: FederationSite,
      rescued: boolean,
    ): Promise<void> => {
      for (let i = 0; i < 60; i++) {
        // Gone from the trash where it was made: a rename elsewhere brought it back.
        if (!(await trashAt(removedAt)).some((t) => t.id === entryId)) return;
        if ((await trashAt(at)).find((t) => t.id === entryId)?.purgeAllowed) {
          const keys = new Map<string, string>();
          for (const site of sites) {
            const { rows } = await site.query<{ physical_path: string }>(
              'SELECT physical_path FROM replicas WHERE object_id = $1 AND site_id = $2',
              [objectId, site.id],
            );
            if (rows[0]) keys.set(site.id, rows[0].physical_path);
          }
          purging.add(objectId);
          expectStatus(await at.http.delete(`/api/v1/trash/${entryId}`), 204);
          purged.push({ path: `${objectId} (${rescued ? 'rescued' : 'trashed'})`, id: objectId, keys });
          return;
        }
        await sleep(500);
      }
      throw new Error(`trash entry ${entryId} neither settled nor left the trash`);
    };
    const changed = new Map<string, { path: string; bytes: Buffer }>();
    await Promise.all(
      cases.map(async (c, i) => {
        const at = pick(sites);
        await sleep(Math.floor(random() * 500));
        if (c.deletion === 'lower-copies') await addRule(at, c.dir, 2);
        if (c.deletion === 'other-site') await addRule(at, c.dir, 1, [pick(IDS)]);
        expectStatus(await at.http.delete(`/api/v1/placement/rules/${c.rule.id}`), 204);
        await sleep(Math.floor(random() * 1500));
        const other = pick(sites.filter((s) => s !== at));
        if (c.change === 'update') {
          const bytes = testBytes(30_000 + i, 200 + i);
          const done = await other.client.upload(c.path, bytes, { overwrite: true }).then(
            () => true,
            () => false,
          );
          changed.set(c.path, { path: c.path, bytes: done ? bytes : c.bytes });
        } else if (c.change === 'purge') {
          // Removed at one site and purged (once every site applied the removal) at any, while the
          // other cases' trims and copies go on.
          const removed = await other.client.remove(c.path);
          changed.set(c.path, { path: '', bytes: c.bytes });
          await purgeOnceAllowed(c.id!, removed.id, other, pick(sites), false);
        } else {
          // A removal at one site and a rename at another in the same cycle: the rename rescues it.
          const third = pick(sites.filter((s) => s !== other));
          const renamed = `${c.dir}/g.bin`;
          const [removed, moved] = await Promise.all([
            other.client.remove(c.path).then(
              (entry) => entry,
              () => undefined,
            ),
            third.client.move(c.path, renamed).then(
              () => true,
              () => false,
            ),
          ]);
          // A rename refused (the removal got there first) leaves the object in the trash, with its copies.
          changed.set(c.path, { path: moved ? renamed : '', bytes: c.bytes });
          if (removed) await purgeOnceAllowed(c.id!, removed.id, other, pick(sites), moved);
        }
      }),
    );

    // Settled: at every site, each object's good current copies are at exactly its wanted sites.
    const settled = await until(
      async () => {
        for (const c of cases) {
          const now = changed.get(c.path)!;
          if (!now.path) continue;
          const views = await Promise.all(sites.map((s) => copiesAt(s, now.path).catch(() => undefined)));
          for (const v of views) {
            if (!v) return false;
            const good = v.copies
              .filter((k) => k.current)
              .map((k) => k.site)
              .sort();
            if (good.join() !== [...v.wantedSites].sort().join() || v.copies.length !== good.length)
              return false;
          }
        }
        return true;
      },
      50_000,
      500,
    );
    watching = false;
    await watcher;
    expect(lost, context).toEqual([]);
    const views = await Promise.all(
      cases.map((c) => copiesAt(lsu, changed.get(c.path)!.path).catch((e: Error) => e.message)),
    );
    expect(settled, `${context}\n${JSON.stringify(views)}`).toBe(true);
    // A purge left no copy row and no file at any site (each site's sweeper removes its own).
    for (const p of purged) {
      for (const site of sites) {
        const gone = await until(async () => {
          const { rows } = await site.query('SELECT 1 FROM replicas WHERE object_id = $1', [p.id]);
          const key = p.keys.get(site.id);
          const file = key ? await fileExists(storageFile(fed, site.id, key)) : false;
          return rows.length === 0 && !file;
        }, 20_000);
        expect(gone, `${context}: purged ${p.path} still at ${site.id}`).toBe(true);
      }
    }
    // The concurrent change survived, and every site reads the object's bytes.
    for (const c of cases) {
      const now = changed.get(c.path)!;
      if (!now.path) continue;
      for (const site of sites)
        expect(await downloadSha(site, now.path), `${context}: ${site.id} ${now.path}`).toBe(
          sha256(now.bytes),
        );
    }
  }, 120_000);
});
