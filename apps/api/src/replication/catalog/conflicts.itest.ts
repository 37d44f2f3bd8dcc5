import type { TestFederation } from '@tributary/replication/testing';
import { describe, expect, it } from 'vitest';
import { useCatalogFederation } from '../../test/catalog-federation';
import { purgeWaitsFor } from './trash-settlement';

/**
 * Each kind of conflict reproduced deterministically on real catalogs (in-memory transport): the
 * sites make their concurrent changes with no cycle in between, then cycles run, and every site is
 * checked: the provisional winner, the conflict record (one, equal everywhere), renames and rescues.
 */

const SITES = ['lsu', 'tulane', 'uno'];
let fed: TestFederation;
const { db, one, addUser, addCollection, conflicts, converge } = useCatalogFederation(SITES, (started) => {
  fed = started;
});

async function addObject(site: string, collectionId: string, name: string): Promise<string> {
  return (
    await one<{ id: string }>(
      site,
      `INSERT INTO data_objects (collection_id, name, size, checksum, owner_id, updated_at)
       VALUES ($1, $2, 1, 'sha256:x', (SELECT min(id) FROM users), now()) RETURNING id`,
      [collectionId, name],
    )
  ).id;
}

/** Changes an object's catalog row (its content type): a new version of the record. */
async function touch(site: string, objectId: string, contentType: string): Promise<void> {
  await db(site).query('UPDATE data_objects SET content_type = $1, updated_at = now() WHERE id = $2', [
    contentType,
    objectId,
  ]);
}

/** Moves an object or a collection subtree to the trash as the API does; returns the trash entry id. */
async function trash(site: string, kind: 'object' | 'collection', id: string, path: string): Promise<string> {
  const client = await db(site).connect();
  try {
    await client.query('BEGIN');
    const t = await client.query<{ id: string }>(
      `INSERT INTO trash_entries (kind, collection_id, object_id, original_path, deleted_by_id, deleted_at_site, updated_at)
       VALUES ($1, $2, $3, $4, (SELECT min(id) FROM users), $5, now()) RETURNING id`,
      [kind, kind === 'collection' ? id : null, kind === 'object' ? id : null, path, site],
    );
    const trashId = t.rows[0]!.id;
    if (kind === 'object') {
      await client.query('UPDATE data_objects SET trash_id = $1 WHERE id = $2', [trashId, id]);
    } else {
      await client.query(
        `UPDATE data_objects SET trash_id = $1 WHERE trash_id = 0 AND collection_id IN
           (SELECT id FROM collections WHERE path = $2 OR path LIKE $2 || '/%')`,
        [trashId, path],
      );
      await client.query(`UPDATE collections SET trash_id = $1 WHERE path = $2 OR path LIKE $2 || '/%'`, [
        trashId,
        path,
      ]);
    }
    await client.query('COMMIT');
    return trashId;
  } finally {
    client.release();
  }
}

/** An object's trash entry (`0`: none) and content type at a site. */
const trashAndType = (site: string, objectId: string) =>
  one<{ trash_id: string; content_type: string }>(
    site,
    'SELECT trash_id::text, content_type FROM data_objects WHERE id = $1',
    [objectId],
  );

/** An object's name and trash entry (`0`: none) at a site. */
const nameAndTrash = (site: string, objectId: string) =>
  one<{ name: string; trash_id: string }>(
    site,
    'SELECT name, trash_id::text FROM data_objects WHERE id = $1',
    [objectId],
  );

/** The peers a site is still waiting on for a change a later one was based on (none once quiet). */
async function waitingPeers(site: string): Promise<{ peer_id: string; waiting_on: string }[]> {
  const res = await db(site).query<{ peer_id: string; waiting_on: string }>(
    'SELECT peer_id, waiting_on FROM repl_peers WHERE waiting_on IS NOT NULL',
  );
  return res.rows;
}

/** The objects of a collection at a site, by name. */
async function objectsIn(site: string, collectionId: string): Promise<{ id: string; name: string }[]> {
  const res = await db(site).query<{ id: string; name: string }>(
    'SELECT id::text, name FROM data_objects WHERE collection_id = $1 ORDER BY name',
    [collectionId],
  );
  return res.rows;
}

async function base(): Promise<{ root: string; proj: string }> {
  await addUser('lsu', 'owner');
  const root = await addCollection('lsu', null, '', '/');
  const proj = await addCollection('lsu', root, 'proj', '/proj');
  await converge();
  return { root, proj };
}

describe('conflicts between sites', () => {
  it('concurrent updates: the latest wins everywhere and one record holds both versions', async () => {
    const id = await addUser('lsu', 'dee');
    await converge();
    await db('lsu').query(`UPDATE users SET display_name = 'from lsu' WHERE id = $1`, [id]);
    await db('tulane').query(`UPDATE users SET display_name = 'from tulane' WHERE id = $1`, [id]);
    await converge();
    for (const site of SITES) {
      const u = await one<{ display_name: string }>(site, 'SELECT display_name FROM users WHERE id = $1', [
        id,
      ]);
      expect(u.display_name, site).toBe('from tulane');
      const records = await conflicts(site);
      expect(records).toHaveLength(1);
      const c = records[0]!;
      expect(c).toMatchObject({
        kind: 'update',
        tbl: 'users',
        row_key: id,
        status: 'open',
        winner_site: 'tulane',
      });
      expect(c.versions.map((v) => [v.site, v.data?.display_name])).toEqual([
        ['lsu', 'from lsu'],
        ['tulane', 'from tulane'],
      ]);
      const openedMs = Date.parse(c.opened_at);
      expect(Date.parse(c.deadline) - openedMs).toBe(24 * 3600_000);
    }
  });

  it('three sites updating one record: one record with three versions, equal everywhere', async () => {
    const id = await addUser('lsu', 'eve');
    await converge();
    for (const site of SITES) {
      await db(site).query(`UPDATE users SET display_name = $2 WHERE id = $1`, [id, `from ${site}`]);
    }
    await converge();
    const everywhere = await Promise.all(SITES.map((s) => conflicts(s)));
    for (const records of everywhere) {
      expect(records).toHaveLength(1);
      expect(records[0]!.versions.map((v) => v.site).sort()).toEqual(SITES);
      expect(records[0]!.winner_site).toBe('uno');
    }
  });

  it('same name created at two sites: both kept, the later one renamed name_1 everywhere', async () => {
    const { proj } = await base();
    const early = await addObject('lsu', proj, 'data.csv');
    const late = await addObject('tulane', proj, 'data.csv');
    await converge();
    for (const site of SITES) {
      const objects = await objectsIn(site, proj);
      expect(objects, site).toEqual([
        { id: early, name: 'data.csv' },
        { id: late, name: 'data_1.csv' },
      ]);
      const [c] = await conflicts(site);
      expect(c).toMatchObject({
        kind: 'same-name',
        tbl: 'data_objects',
        row_key: late,
        collection_id: Number(proj),
        detail: { name: 'data.csv', renamedTo: 'data_1.csv', kept: early, renamed: late },
      });
    }
    // The rename is tulane's own change (it created the renamed object), so it replicates.
    const v = await one<{ site: string }>(
      'uno',
      `SELECT site FROM repl_versions WHERE tbl = 'data_objects' AND row_key = $1`,
      [late],
    );
    expect(v.site).toBe('tulane');
  });

  // Whatever order the sites' cycles run in (so whichever creations and renames each site sees
  // first), every site ends with the same names and the same two records.
  for (const order of [
    ['lsu', 'tulane', 'uno'],
    ['lsu', 'uno', 'tulane'],
    ['tulane', 'lsu', 'uno'],
    ['tulane', 'uno', 'lsu'],
    ['uno', 'lsu', 'tulane'],
    ['uno', 'tulane', 'lsu'],
  ]) {
    it(`same name created at three sites, cycles in the order ${order.join(', ')}: name, name_1, name_2 by creation`, async () => {
      const { proj } = await base();
      const a = await addObject('lsu', proj, 'data.csv');
      const b = await addObject('tulane', proj, 'data.csv');
      const c = await addObject('uno', proj, 'data.csv');
      for (const site of order) await fed.sites[site]!.engine.runCycle();
      await converge();
      for (const site of SITES) {
        const objects = await objectsIn(site, proj);
        expect(objects, site).toEqual([
          { id: a, name: 'data.csv' },
          { id: b, name: 'data_1.csv' },
          { id: c, name: 'data_2.csv' },
        ]);
        const records = (await conflicts(site)).map((r) => [
          r.kind,
          r.row_key,
          r.detail.kept,
          r.detail.renamedTo,
        ]);
        expect(records.sort(), site).toEqual(
          [
            ['same-name', b, a, 'data_1.csv'],
            ['same-name', c, a, 'data_2.csv'],
          ].sort(),
        );
      }
    });
  }

  it('same name when name_1 is taken too: name_2; collections renamed keep their subtree paths', async () => {
    const { proj } = await base();
    await addObject('lsu', proj, 'run.tar.gz');
    await addObject('lsu', proj, 'run_1.tar.gz');
    await addObject('tulane', proj, 'run.tar.gz');
    const a = await addCollection('lsu', proj, 'out', '/proj/out');
    const b = await addCollection('uno', proj, 'out', '/proj/out');
    const deep = await addCollection('uno', b, 'deep', '/proj/out/deep');
    await converge();
    for (const site of SITES) {
      const names = (await objectsIn(site, proj)).map((r) => r.name);
      expect(names).toEqual(['run.tar.gz', 'run_1.tar.gz', 'run_2.tar.gz']);
      const cols = await db(site).query<{ id: string; path: string }>(
        `SELECT id::text, path FROM collections WHERE path LIKE '/proj/%' ORDER BY path`,
      );
      expect(cols.rows).toEqual([
        { id: a, path: '/proj/out' },
        { id: b, path: '/proj/out_1' },
        { id: deep, path: '/proj/out_1/deep' },
      ]);
      // One record per renamed record, naming the name it lost and the one it took (at tulane the
      // object went to run_1.tar.gz first, then on to run_2.tar.gz when lsu's run_1.tar.gz arrived).
      const records = await conflicts(site);
      expect(records.map((c) => [c.kind, c.tbl, c.detail.name, c.detail.renamedTo]).sort()).toEqual([
        ['same-name', 'collections', 'out', 'out_1'],
        ['same-name', 'data_objects', 'run.tar.gz', 'run_2.tar.gz'],
      ]);
    }
  });

  it('an update meets a move to the trash: the update rescues the object, a delete conflict opens', async () => {
    const { proj } = await base();
    const obj = await addObject('lsu', proj, 'keep-me.dat');
    await converge();
    const trashId = await trash('lsu', 'object', obj, '/proj/keep-me.dat');
    await db('tulane').query(`UPDATE data_objects SET name = 'renamed.dat' WHERE id = $1`, [obj]);
    await converge();
    for (const site of SITES) {
      const o = await nameAndTrash(site, obj);
      expect(o, site).toEqual({ name: 'renamed.dat', trash_id: '0' });
      // The entry stays at every site, holding nothing (trash listings leave it out).
      const held = await db(site).query('SELECT 1 FROM data_objects WHERE trash_id = $1', [trashId]);
      expect(held.rowCount, `trash entry at ${site}`).toBe(0);
      const [c] = await conflicts(site);
      expect(c).toMatchObject({ kind: 'delete', tbl: 'data_objects', row_key: obj, winner_site: 'tulane' });
    }
  });

  it('a move to the trash made with a losing version in view is not undone by that version', async () => {
    const { proj } = await base();
    const f = await addObject('lsu', proj, 'f.txt');
    await converge();
    // uno's update reaches tulane; lsu updates concurrently and wins (later), so uno's version
    // lost at lsu, where it is still a head when lsu's user, seeing lsu's version, moves it to the trash.
    await touch('uno', f, 'text/uno');
    await fed.sites.uno!.engine.runCycle();
    await fed.sites.tulane!.engine.runCycle();
    await touch('lsu', f, 'text/lsu-1');
    await fed.sites.lsu!.engine.runCycle();
    await touch('lsu', f, 'text/lsu-2');
    await fed.sites.lsu!.engine.runCycle();
    await trash('lsu', 'object', f, '/proj/f.txt');
    await converge();
    for (const site of SITES) {
      const row = await trashAndType(site, f);
      expect(row.trash_id, site).not.toBe('0');
      expect(row.content_type, site).toBe('text/lsu-2');
      // uno's version is kept in the record of its conflict with lsu's first update.
      const [c, ...more] = await conflicts(site);
      expect(more, site).toEqual([]);
      expect(c!.versions.map((v) => v.data?.content_type).sort(), site).toEqual(['text/lsu-1', 'text/uno']);
    }
  });

  it('a change based on a move to the trash that lost elsewhere applies as concurrent, not waited for', async () => {
    const { proj } = await base();
    const f = await addObject('lsu', proj, 'f.txt');
    await converge();
    // lsu updates while tulane moves to the trash; uno gets the move first and changes the trashed
    // object. Where lsu's (older) update rescued it, uno's change is based on a version newer than
    // the held one that lost here: concurrent, not still on its way.
    await touch('lsu', f, 'text/lsu');
    await trash('tulane', 'object', f, '/proj/f.txt');
    fed.transport.down.add('lsu');
    await fed.sites.tulane!.engine.runCycle();
    await fed.sites.uno!.engine.runCycle();
    await touch('uno', f, 'text/uno');
    await fed.sites.lsu!.engine.runCycle();
    fed.transport.down.clear();
    await converge();
    for (const site of SITES) {
      expect(await waitingPeers(site), site).toEqual([]);
      const row = await trashAndType(site, f);
      expect(row, site).toEqual({ trash_id: '0', content_type: 'text/lsu' });
      const [c, ...more] = await conflicts(site);
      expect(more, site).toEqual([]);
      expect(c!.kind).toBe('delete');
      expect(c!.versions.map((v) => `${v.site}:${String(v.data?.content_type)}`).sort(), site).toEqual([
        'lsu:text/lsu',
        'tulane:application/octet-stream',
        'uno:text/uno',
      ]);
    }
  });

  it('an update inside a collection moved to the trash brings the whole collection back', async () => {
    const { proj } = await base();
    const dir = await addCollection('lsu', proj, 'dir', '/proj/dir');
    const x = await addObject('lsu', dir, 'x');
    const y = await addObject('lsu', dir, 'y');
    await converge();
    await trash('lsu', 'collection', dir, '/proj/dir');
    await db('uno').query(`UPDATE data_objects SET content_type = 'text/plain' WHERE id = $1`, [y]);
    await converge();
    for (const site of SITES) {
      const live = await db(site).query<{ id: string }>(
        `SELECT id::text FROM data_objects WHERE id IN ($1, $2) AND trash_id = 0 ORDER BY id`,
        [x, y],
      );
      expect(
        live.rows.map((r) => r.id),
        site,
      ).toEqual([x, y].sort());
      const d = await one<{ trash_id: string }>(
        site,
        'SELECT trash_id::text FROM collections WHERE id = $1',
        [dir],
      );
      expect(d.trash_id).toBe('0');
      expect((await conflicts(site)).map((c) => c.kind)).toEqual(['delete']);
    }
  });

  it('a peer that applied the delete but has not yet sent its own rescuing update does not let it settle', async () => {
    const { proj } = await base();
    const obj = await addObject('lsu', proj, 'race.dat');
    await converge();
    const trashId = await trash('lsu', 'object', obj, '/proj/race.dat');
    await db('tulane').query(`UPDATE data_objects SET name = 'race-renamed.dat' WHERE id = $1`, [obj]);
    const entry = async (site: string) =>
      one<{ settled_at: string | null; trash_id: string }>(
        site,
        `SELECT t.settled_at, o.trash_id::text FROM trash_entries t JOIN data_objects o ON o.id = t.object_id
          WHERE t.id = $1`,
        [trashId],
      );
    // lsu sends the delete; uno applies it in a whole cycle; tulane applies it (and keeps its rename:
    // the rescue) and extracts, but its rename has not reached lsu yet when lsu hears from it.
    await fed.sites.lsu!.engine.runCycle();
    await fed.sites.uno!.engine.runCycle();
    const tulane = fed.sites.tulane!.engine;
    await tulane.injector.injectAll(await tulane.incoming.origins());
    await tulane.extractor.extract(tulane.peerIds);
    for (let i = 0; i < 3; i++) await fed.sites.lsu!.engine.runCycle();
    // Before the fix, tulane's acknowledgement settled the delete here although lsu had not applied
    // the rename that rescues the object, so a purge at lsu would have removed it everywhere.
    expect((await entry('lsu'))?.settled_at, "lsu has not applied tulane's rename").toBeNull();
    expect((await entry('lsu'))?.trash_id).toBe(trashId);
    await converge();
    for (const site of SITES) {
      const o = await nameAndTrash(site, obj);
      expect(o, site).toEqual({ name: 'race-renamed.dat', trash_id: '0' });
    }
  });

  it('a site purges a settled delete only after applying what the deleting site had applied when it settled', async () => {
    const { proj } = await base();
    const obj = await addObject('lsu', proj, 'far.dat');
    await converge();
    const trashId = await trash('lsu', 'object', obj, '/proj/far.dat');
    await converge();
    const settled = await one<{ settled_through: Record<string, number> | null }>(
      'lsu',
      'SELECT settled_through FROM trash_entries WHERE id = $1',
      [trashId],
    );
    expect(Object.keys(settled?.settled_through ?? {}).sort()).toEqual(['tulane', 'uno']);
    for (const site of SITES) expect(await purgeWaitsFor(db(site), trashId, site), site).toEqual([]);
    // Pretend lsu had applied more of tulane's log than uno has: uno must wait for it, lsu need not.
    const tulaneAtUno = await one<{ applied_seq: string }>(
      'uno',
      `SELECT applied_seq FROM repl_peers WHERE peer_id = 'tulane'`,
    );
    const ahead = Number(tulaneAtUno?.applied_seq) + 1;
    for (const site of SITES) {
      await db(site).query(
        `UPDATE trash_entries SET settled_through = jsonb_set(settled_through, '{tulane}', to_jsonb($2::bigint)) WHERE id = $1`,
        [trashId, ahead],
      );
    }
    expect(await purgeWaitsFor(db('uno'), trashId, 'uno')).toEqual([{ site: 'tulane', seq: ahead }]);
    expect(await purgeWaitsFor(db('tulane'), trashId, 'tulane'), 'its own log').toEqual([]);
  });

  it('a delete is settled (purgeable) only once every peer has applied it, not in its own cycle', async () => {
    const { proj } = await base();
    const obj = await addObject('lsu', proj, 'old.dat');
    await converge();
    const trashId = await trash('lsu', 'object', obj, '/proj/old.dat');
    const settledAt = async (site: string) =>
      (
        await one<{ settled_at: string | null }>(site, 'SELECT settled_at FROM trash_entries WHERE id = $1', [
          trashId,
        ])
      )?.settled_at ?? null;
    fed.transport.down.add('uno');
    for (let i = 0; i < 4; i++) {
      await fed.sites.lsu!.engine.runCycle();
      await fed.sites.tulane!.engine.runCycle();
    }
    expect(await settledAt('lsu'), 'uno has not applied the delete').toBeNull();
    fed.transport.down.delete('uno');
    await converge();
    for (const site of SITES) expect(await settledAt(site), site).not.toBeNull();
  });
});

/**
 * Metadata triples state the version of their insert in their own columns (insert_stamp, insert_site;
 * migration 20261126110000_implied_insert_versions) instead of a row in repl_versions: the conflict
 * rules must meet that implied version exactly as they meet a version row.
 */
describe('conflicts on metadata triples (versions implied by the insert)', () => {
  async function addTriple(
    site: string,
    objectId: string,
    attribute: string,
    value: string,
  ): Promise<string> {
    return (
      await one<{ id: string }>(
        site,
        `INSERT INTO metadata_triples (object_id, attribute, value_type, value) VALUES ($1, $2, 'text', $3) RETURNING id`,
        [objectId, attribute, value],
      )
    ).id;
  }

  /** How many triples a site keeps aside (repl_parked). */
  async function parkedTriples(site: string): Promise<number> {
    const res = await one<{ n: string }>(
      site,
      `SELECT count(*) AS n FROM repl_parked WHERE tbl = 'metadata_triples'`,
    );
    return Number(res.n);
  }

  /** How many rows with this id each site has, in SITES order. */
  async function copiesEverywhere(id: string): Promise<number[]> {
    return Promise.all(
      SITES.map(async (site) =>
        Number(
          (await one<{ n: string }>(site, 'SELECT count(*) AS n FROM metadata_triples WHERE id = $1', [id]))
            .n,
        ),
      ),
    );
  }

  /** The version each site holds for a row: [stamp, site, deleted, implied], and its base if a row. */
  async function heldEverywhere(key: string): Promise<unknown[]> {
    return Promise.all(
      SITES.map((site) =>
        one<unknown>(
          site,
          `SELECT h.stamp, h.site, h.deleted, h.implied, v.base_stamp, v.base_site
             FROM repl_held_version('metadata_triples', $1) h
             LEFT JOIN repl_versions v ON v.tbl = 'metadata_triples' AND v.row_key = $1`,
          [key],
        ),
      ),
    );
  }

  it('a triple needs no version row anywhere; concurrent updates of it make one update conflict, equal everywhere', async () => {
    const { proj } = await base();
    const obj = await addObject('lsu', proj, 'scan.fits');
    await converge();
    const id = await addTriple('lsu', obj, 'band', 'red');
    await converge();
    const inserted = await heldEverywhere(id);
    for (const [i, held] of inserted.entries()) {
      expect(held, SITES[i]).toMatchObject({ site: 'lsu', deleted: false, implied: true, base_stamp: null });
    }
    expect(new Set(inserted.map((h) => JSON.stringify(h))).size).toBe(1);

    // One site's update, based on the insert it holds implied, applies everywhere without a conflict.
    await db('lsu').query(`UPDATE metadata_triples SET value = 'amber' WHERE id = $1`, [id]);
    await converge();
    for (const site of SITES) expect(await conflicts(site), site).toEqual([]);

    await db('tulane').query(`UPDATE metadata_triples SET value = 'green' WHERE id = $1`, [id]);
    await db('uno').query(`UPDATE metadata_triples SET value = 'blue' WHERE id = $1`, [id]);
    await converge();
    for (const site of SITES) {
      const t = await one<{ value: string }>(site, 'SELECT value FROM metadata_triples WHERE id = $1', [id]);
      expect(t.value, site).toBe('blue');
      const records = await conflicts(site);
      expect(records, site).toHaveLength(1);
      expect(records[0]).toMatchObject({
        kind: 'update',
        tbl: 'metadata_triples',
        row_key: id,
        winner_site: 'uno',
      });
      expect(records[0]!.versions.map((v) => [v.site, v.data?.value])).toEqual([
        ['tulane', 'green'],
        ['uno', 'blue'],
      ]);
    }
    expect(
      new Set((await Promise.all(SITES.map((s) => conflicts(s)))).map((c) => JSON.stringify(c))).size,
    ).toBe(1);
  });

  it('an update of a triple meets its removal elsewhere: the same outcome at every site, nothing left aside', async () => {
    const { proj } = await base();
    const obj = await addObject('lsu', proj, 'cube.fits');
    await converge();
    const id = await addTriple('tulane', obj, 'band', 'red');
    await converge();
    await db('lsu').query(`UPDATE metadata_triples SET value = 'green' WHERE id = $1`, [id]);
    await db('uno').query(`DELETE FROM metadata_triples WHERE id = $1`, [id]);
    await converge();
    // The removal came later: it stands everywhere.
    expect(await copiesEverywhere(id)).toEqual([0, 0, 0]);
    for (const site of SITES) {
      expect(await parkedTriples(site), site).toBe(0);
      expect((await conflicts(site)).length, site).toBe(1);
    }
    const held = await heldEverywhere(id);
    expect(
      new Set(held.map((h) => JSON.stringify({ ...(h as object), base_stamp: null, base_site: null }))).size,
    ).toBe(1);
  });

  it("a triple's insert delivered again is recognised as applied; its object's purge elsewhere parks it with the implied version", async () => {
    const { proj } = await base();
    const obj = await addObject('lsu', proj, 'again.fits');
    await converge();
    const id = await addTriple('lsu', obj, 'band', 'red');
    await converge();
    // tulane applies the archived insert again, change by change: nothing happens, nothing is written.
    const archived = await one<{ changes: { t: string; k: string }[] }>(
      'tulane',
      `SELECT changes FROM repl_archive WHERE origin = 'lsu'
         AND changes @> jsonb_build_array(jsonb_build_object('t', 'metadata_triples', 'k', $1::text))`,
      [id],
    );
    const idx = archived.changes.findIndex((c) => c.t === 'metadata_triples' && c.k === id);
    expect(idx).toBeGreaterThanOrEqual(0);
    const client = await db('tulane').connect();
    try {
      await client.query('BEGIN');
      const stop = await client.query(`SELECT * FROM repl_apply('lsu', $1::jsonb, $2, 1)`, [
        JSON.stringify(archived.changes),
        idx,
      ]);
      expect(stop.rows).toEqual([]);
      const versions = await client.query(
        `SELECT 1 FROM repl_versions WHERE tbl = 'metadata_triples' AND row_key = $1`,
        [id],
      );
      expect(versions.rowCount).toBe(0);
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
    // The object is purged at uno. At lsu and tulane the purge's cascade removes the triple, which is
    // kept aside with the version held there, the implied insert, and marked deleted; uno's delete of
    // the triple (in the same transaction) then finds that version and supersedes it. Without it, that
    // delete would wait for ever for a version that is not coming.
    const insert = (await heldEverywhere(id))[0] as { stamp: string };
    await db('uno').query('DELETE FROM data_objects WHERE id = $1', [obj]);
    await converge();
    for (const site of SITES) {
      expect(await parkedTriples(site), site).toBe(0);
      const tomb = await one<{ deleted: boolean; site: string; base_stamp: string; base_site: string }>(
        site,
        `SELECT deleted, site, base_stamp, base_site FROM repl_versions WHERE tbl = 'metadata_triples' AND row_key = $1`,
        [id],
      );
      expect(tomb, site).toEqual({ deleted: true, site: 'uno', base_stamp: insert.stamp, base_site: 'lsu' });
    }
    expect(await copiesEverywhere(id)).toEqual([0, 0, 0]);
  });
});

describe('symbolic links and attributes (docs/attributes.md)', () => {
  it('symbolic links created under one name at two sites: both kept, the later renamed, targets and modes intact', async () => {
    const { proj } = await base();
    const link = (site: string, target: string) =>
      one<{ id: string }>(
        site,
        `INSERT INTO data_objects (collection_id, name, size, checksum, content_type, owner_id, mode, link_target, updated_at)
           VALUES ($1, 'latest', octet_length($2), 'x', 'inode/symlink', (SELECT min(id) FROM users), 511, $2, now())
           RETURNING id`,
        [proj, target],
      );
    const first = await link('lsu', 'v1');
    await new Promise((r) => setTimeout(r, 5));
    const second = await link('tulane', 'v2');
    await converge();
    for (const site of SITES) {
      const rows = await db(site).query<{ id: string; name: string; link_target: string; mode: number }>(
        'SELECT id::text, name, link_target, mode FROM data_objects WHERE link_target IS NOT NULL ORDER BY name',
      );
      expect(rows.rows, site).toEqual([
        { id: first.id, name: 'latest', link_target: 'v1', mode: 0o777 },
        { id: second.id, name: 'latest_1', link_target: 'v2', mode: 0o777 },
      ]);
    }
  });

  it('file times and modes changed at three sites at once: the latest stands everywhere, no conflict record', async () => {
    const { proj } = await base();
    const f = await addObject('lsu', proj, 'f');
    await converge();
    await db('lsu').query('UPDATE data_objects SET mode = 448, updated_at = now() WHERE id = $1', [f]);
    await db('uno').query('UPDATE collections SET mode = 488, updated_at = now() WHERE id = $1', [proj]);
    await db('tulane').query('UPDATE collections SET mtime_s = 5, updated_at = now() WHERE id = $1', [proj]);
    await new Promise((r) => setTimeout(r, 5));
    await db('tulane').query(
      'UPDATE data_objects SET mtime_s = 1, mtime_nsec = 2, updated_at = now() WHERE id = $1',
      [f],
    );
    await new Promise((r) => setTimeout(r, 5));
    await db('uno').query(
      'UPDATE data_objects SET mode = 384, mtime_s = 7, updated_at = now() WHERE id = $1',
      [f],
    );
    await converge();
    for (const site of SITES) {
      const row = await one<{ mode: number; mtime_s: string; mtime_nsec: number }>(
        site,
        'SELECT mode, mtime_s::text, mtime_nsec FROM data_objects WHERE id = $1',
        [f],
      );
      expect(row, site).toMatchObject({ mode: 384, mtime_s: '7' });
      expect(
        (await one<{ mtime_s: string }>(site, 'SELECT mtime_s::text FROM collections WHERE id = $1', [proj]))
          .mtime_s,
      ).toBe('5');
      expect(await conflicts(site), site).toEqual([]);
    }
  });

  // Found by adding symlinks to randomized.itest.ts (not specific to them): a name freed by a move to
  // the trash and taken again at another site that had applied that move is a clash only at a third
  // site that receives the new record before the move. That site renames the new record
  // provisionally (name_1) and writes a same-name record; the creator never met a clash, so it
  // renamed nothing, and the third site kept name_1 for ever while the others said name. Now the
  // creator takes the record's rename as its own change (SameNameContests.honourRecords), and every
  // site ends with name_1 and the record that explains it.
  it('a name freed by a move to the trash and taken again elsewhere ends the same at every site', async () => {
    const { proj } = await base();
    const a = await addObject('lsu', proj, 'n');
    await converge();
    await trash('lsu', 'object', a, '/proj/n');
    fed.transport.down.add('tulane');
    await fed.sites.lsu!.engine.runCycle(); // the move reaches uno; tulane does not hear of it yet
    await fed.sites.uno!.engine.runCycle(); // uno applies it
    expect((await nameAndTrash('uno', a)).trash_id, 'uno applied the move').not.toBe('0');
    const b = await addObject('uno', proj, 'n'); // the name is free at uno
    fed.transport.down.delete('tulane');
    fed.transport.down.add('lsu');
    await fed.sites.uno!.engine.runCycle(); // b reaches tulane, the move has not
    await fed.sites.tulane!.engine.runCycle(); // tulane applies b while a is live there: a clash only there
    expect((await nameAndTrash('tulane', b)).name, 'renamed at tulane').toBe('n_1');
    fed.transport.down.clear();
    await converge();
    const records = await conflicts('lsu');
    expect(records.map((r) => [r.kind, r.detail.renamed, r.detail.renamedTo])).toEqual([
      ['same-name', b, 'n_1'],
    ]);
    for (const site of SITES) {
      const row = await one<{ name: string }>(site, 'SELECT name FROM data_objects WHERE id = $1', [b]);
      expect(row.name, site).toBe('n_1');
      expect(await conflicts(site), site).toEqual(records);
    }
  });
});

describe('copy rows (replicas): a site removing its own copy', () => {
  /** A storage resource at `site` (the catalog fixture registers sites, not their resources). */
  async function resourceAt(site: string): Promise<string> {
    return (
      await one<{ id: string }>(
        site,
        `INSERT INTO storage_resources (site_id, name, root_path, is_default, updated_at)
         VALUES ($1, 'default', '/srv', true, now()) RETURNING id::text AS id`,
        [site],
      )
    ).id;
  }

  async function addCopyRow(
    site: string,
    objectId: string,
    resourceId: string,
    key: string,
  ): Promise<string> {
    return (
      await one<{ id: string }>(
        site,
        `INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, status, cached)
         VALUES ($1, $2, $3, $4, 1, 'sha256:x', 'good', true) RETURNING id::text AS id`,
        [objectId, site, resourceId, key],
      )
    ).id;
  }

  const copiesOf = async (site: string, objectId: string) =>
    (
      await db(site).query<{ id: string; site_id: string; physical_path: string; status: string }>(
        `SELECT id::text, site_id, physical_path, status::text AS status FROM replicas
          WHERE object_id = $1 ORDER BY id`,
        [objectId],
      )
    ).rows;

  // The caching run found this (docs/caching.md): tulane evicts its cached copy and faults the bytes
  // in again (a new row with the same object, site and resource) while lsu, updating the object,
  // marks tulane's old row stale. With the latest change winning, lsu's later update brought the
  // deleted row back at lsu and uno, where tulane's new row then clashed with it: tulane kept its new
  // row, the others the old one, and a site counted a copy that was not there.
  it("the removal wins over another site's later update of the row, and the new row replicates everywhere", async () => {
    const { proj } = await base();
    const f = await addObject('lsu', proj, 'f1');
    const resource = await resourceAt('tulane');
    await converge();
    const old = await addCopyRow('tulane', f, resource, 'key-1');
    await converge();
    // tulane: eviction, then a new fault-in; lsu, later, marks tulane's (old) row stale.
    await db('tulane').query('DELETE FROM replicas WHERE id = $1', [old]);
    const fresh = await addCopyRow('tulane', f, resource, 'key-2');
    await db('lsu').query(`UPDATE replicas SET status = 'stale', updated_at = now() WHERE id = $1`, [old]);
    await converge();
    for (const site of SITES) {
      expect(await copiesOf(site, f), site).toEqual([
        { id: fresh, site_id: 'tulane', physical_path: 'key-2', status: 'good' },
      ]);
    }
  });

  it('the removal also wins when the update comes from the site that removes it later', async () => {
    const { proj } = await base();
    const f = await addObject('lsu', proj, 'f1');
    const resource = await resourceAt('tulane');
    await converge();
    const old = await addCopyRow('tulane', f, resource, 'key-1');
    await converge();
    // lsu marks the row stale first; tulane, not having seen it, removes its copy afterwards.
    await db('lsu').query(`UPDATE replicas SET status = 'stale', updated_at = now() WHERE id = $1`, [old]);
    await db('tulane').query('DELETE FROM replicas WHERE id = $1', [old]);
    await converge();
    for (const site of SITES) expect(await copiesOf(site, f), site).toEqual([]);
  });
});

// A known bug, reproduced (docs/conflicts.md, Tests): registered only with `REPL_KNOWN_BUGS=1`, where it
// fails on today's code, so the default run neither passes it nor counts it as skipped.
if (process.env.REPL_KNOWN_BUGS === '1') {
  describe('updates meeting moves to the trash, cycles in a given order (cases the property test found)', () => {
    // KNOWN BUG: fails on the current code (tulane ends with the file live, content type text/uno-1; lsu
    // and uno hold it in lsu's trash entry with text/uno-2). Found with the property test (trash weight
    // 2, purge 3, round 5). In tulane's first cycle after lsu's move T2 (based on uno's update U1, made
    // after lsu rescued the file), lsu's transactions are injected before uno's: tulane holds its own
    // move T1, newer than U1, so repl_apply reports T2 'concurrent' (not 'behind'); both are moves to
    // the trash, the later (T2) wins and is applied with base U1. Then uno's U1 arrives, based on the
    // original version: 'concurrent' with T2, and CatalogResolver lets the live U1 rescue the file from
    // T2 although T2 was made on top of U1 (U1 is held T2's base in repl_versions, but neither
    // isAbsorbed nor the resolver look at ancestry). T2 becomes a losing head at tulane, and uno's
    // later U2 (based on T2) is kept aside as a head too. A check that skips an incoming version that is
    // the base of the held version or of a head (TrashRescue.isAbsorbed) makes this test pass, but
    // randomized.itest.ts still diverged in 2 of 6 runs with it, so it is not committed (see the report).
    it('a second move to the trash, based on a rescue, and an update of it: every site ends trashed with that update', async () => {
      // The property test's sequence, with only what touches the file: uno updates it while tulane
      // moves it to the trash; lsu, having rescued it, moves it to the trash again; uno updates it in
      // the trash.
      const { proj } = await base();
      const f = await addObject('lsu', proj, 'f1');
      await converge();
      const round = async (from: string) => {
        const at = SITES.indexOf(from);
        for (const s of [...SITES.slice(at), ...SITES.slice(0, at)]) await fed.sites[s]!.engine.runCycle();
      };
      await touch('uno', f, 'text/uno-1');
      await trash('tulane', 'object', f, `/proj/f${f}`);
      await round('tulane');
      await trash('lsu', 'object', f, `/proj/f${f}`);
      await round('lsu');
      await touch('uno', f, 'text/uno-2');
      await fed.sites.lsu!.engine.runCycle();
      await round('uno');
      await converge();
      for (const site of SITES) {
        expect(await waitingPeers(site), site).toEqual([]);
        const row = await trashAndType(site, f);
        expect(row.trash_id, site).not.toBe('0');
        expect(row.content_type, site).toBe('text/uno-2');
      }
    });
  });
}
