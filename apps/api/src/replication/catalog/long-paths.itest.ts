import { incompressibleNames } from '@tributary/testkit';
import { describe, expect, it } from 'vitest';
import { useCatalogFederation } from '../../test/catalog-federation';

/**
 * Collections whose paths reach the 4,096 bytes the path rules allow replicate like any other, and a
 * name clash between two sites at such a depth is settled by the usual same-name rename (the clash
 * is caught by the unique (parent_id, trash_id, name) index since paths are indexed by hash:
 * prisma/migrations/20261127020000_long_paths).
 */
const SITES = ['lsu', 'tulane'];
const { db, addUser, addCollection, converge } = useCatalogFederation(SITES, () => undefined);

/** Names that do not compress, as real ones (PostgreSQL compresses long index entries). */
const noise = incompressibleNames(7);

describe('long paths between sites', () => {
  it('replicates collections with paths near 4,096 bytes and settles a name clash there', async () => {
    await addUser('lsu', 'owner');
    let parent = await addCollection('lsu', null, '', '/');
    let path = '';
    // 15 names of 255 bytes: 3,840 bytes (each entry would have been too long for the old btree).
    for (let i = 0; i < 15; i++) {
      const name = noise(255);
      path += '/' + name;
      parent = await addCollection('lsu', parent, name, path);
    }
    await converge();
    const there = await db('tulane').query<{ id: string }>(
      'SELECT id FROM collections WHERE path = $1 AND trash_id = 0',
      [path],
    );
    expect(there.rows.map((r) => r.id)).toEqual([parent]);

    const name = noise(251);
    const clashing = `${path}/${name}`;
    // 4,092 bytes; the rename's `_1` makes 4,094.
    expect(Buffer.byteLength(clashing)).toBe(4092);
    const early = await addCollection('lsu', parent, name, clashing);
    const late = await addCollection('tulane', parent, name, clashing);
    await converge();
    for (const site of SITES) {
      const rows = await db(site).query<{ id: string; name: string; path: string }>(
        'SELECT id, name, path FROM collections WHERE parent_id = $1 AND trash_id = 0 ORDER BY id',
        [parent],
      );
      expect(rows.rows, site).toEqual([
        { id: early, name, path: clashing },
        { id: late, name: `${name}_1`, path: `${clashing}_1` },
      ]);
    }
  });
});
