import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createFederation, type TestFederation } from '@tributary/replication/testing';
import { catalogApplication } from './application';

/**
 * Collections whose paths reach the 4,096 bytes the path rules allow replicate like any other, and a
 * name clash between two sites at such a depth is settled by the usual same-name rename (the clash
 * is caught by the unique (parent_id, trash_id, name) index since paths are indexed by hash:
 * prisma/migrations/20261127020000_long_paths).
 */
const SITES = ['lsu', 'tulane'];
/** The catalog's rules, with the default time to decide a conflict. */
const CATALOG = catalogApplication({ conflictDeadlineMs: 24 * 3600_000 });
let fed: TestFederation;

beforeEach(async () => {
  fed = await createFederation(SITES, CATALOG);
});
afterEach(async () => {
  await fed.close();
});

const db = (site: string) => fed.sites[site]!.catalog.db;

/** Names that do not compress, as real ones (PostgreSQL compresses long index entries). */
let seed = 7;
function noise(n: number): string {
  let out = '';
  for (let i = 0; i < n; i++) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    out += 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'[seed % 62];
  }
  return out;
}

async function addCollection(
  site: string,
  parentId: string | null,
  name: string,
  path: string,
): Promise<string> {
  const res = await db(site).query<{ id: string }>(
    `INSERT INTO collections (parent_id, name, path, owner_id, updated_at)
     VALUES ($1, $2, $3, (SELECT min(id) FROM users), now()) RETURNING id`,
    [parentId, name, path],
  );
  return res.rows[0]!.id;
}

async function converge(): Promise<void> {
  await fed.settle();
  expect(new Set(await fed.digests()).size).toBe(1);
}

describe('long paths between sites', () => {
  it('replicates collections with paths near 4,096 bytes and settles a name clash there', async () => {
    await db('lsu').query(
      `INSERT INTO users (username, display_name, password_hash, updated_at) VALUES ('owner', 'owner', 'x', now())`,
    );
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
