import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { expectToWaitUntil } from '../test/storage';
import { useSiteWithFolder } from '../test/site-folder';
import { expectStatus, type TestClient, type TestSite } from '../test/test-site';

/**
 * A triple's reference to its object or collection, checked per statement by triggers (migration
 * 20261125100000_triple_target_checks) instead of foreign keys: what the foreign keys guaranteed must
 * still hold, on a real catalog, with concurrent transactions on separate connections.
 */
describe('metadata: references to objects and collections', () => {
  let site: TestSite;
  let admin: TestClient;
  let base: string;

  const { upload } = useSiteWithFolder('targets', (suite) => {
    ({ site, admin, base } = suite);
  });

  async function collectionId(path: string): Promise<bigint> {
    const { rows } = await site.query<{ id: string }>('SELECT id FROM collections WHERE path = $1', [path]);
    return BigInt(rows[0]!.id);
  }

  async function connect(): Promise<pg.Client> {
    const client = new pg.Client(site.connection);
    await client.connect();
    return client;
  }

  const insertFor = (column: 'object_id' | 'collection_id', ids: bigint[]): [string, unknown[]] => [
    `INSERT INTO metadata_triples (${column}, attribute, value_type, value)
     SELECT unnest($1::bigint[]), 'filetype', 'text', 'fits'`,
    [ids.map(String)],
  ];

  async function triplesOf(column: 'object_id' | 'collection_id', id: bigint): Promise<number> {
    const { rows } = await site.query<{ n: string }>(
      `SELECT count(*) AS n FROM metadata_triples WHERE ${column} = $1`,
      [id.toString()],
    );
    return Number(rows[0]!.n);
  }

  it('refuses a triple on a missing object or collection with the foreign-key error, writing nothing', async () => {
    const present = await upload('present.bin');
    const missing = 9_000_000_000_000n;
    const err = await site.query(...insertFor('object_id', [present, missing])).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: '23503',
      detail: `Key (object_id)=(${missing}) is not present in table "data_objects".`,
      constraint: 'metadata_triples_object_id_fkey',
    });
    expect(await triplesOf('object_id', present)).toBe(0);

    const coll = await collectionId(base);
    const err2 = await site.query(...insertFor('collection_id', [coll, missing])).catch((e: unknown) => e);
    expect(err2).toMatchObject({
      code: '23503',
      detail: `Key (collection_id)=(${missing}) is not present in table "collections".`,
    });
    expect(await triplesOf('collection_id', coll)).toBe(0);

    // Moving a triple to a missing object is refused too; to an existing one it is not.
    const [sql, params] = insertFor('object_id', [present]);
    await site.query(sql, params);
    const other = await upload('other.bin');
    const moved = await site
      .query('UPDATE metadata_triples SET object_id = $2 WHERE object_id = $1', [
        present.toString(),
        missing.toString(),
      ])
      .catch((e: unknown) => e);
    expect(moved).toMatchObject({ code: '23503' });
    await site.query('UPDATE metadata_triples SET object_id = $2 WHERE object_id = $1', [
      present.toString(),
      other.toString(),
    ]);
    expect(await triplesOf('object_id', other)).toBe(1);
  });

  it('answers 404 through the API when the object goes while its triples are written', async () => {
    const id = await upload('vanishing.bin');
    const blocker = await connect();
    try {
      // The object is deleted in a transaction that is still open when the API writes.
      await blocker.query('BEGIN');
      await blocker.query(`SET LOCAL tributary.capture = 'off'`);
      await blocker.query('DELETE FROM data_objects WHERE id = $1', [id.toString()]);
      const res = await expectToWaitUntil(
        admin.post('/api/v1/metadata/bulk', {
          operations: [{ paths: [`${base}/vanishing.bin`], add: [{ attribute: 'filetype', value: 'fits' }] }],
        }),
        () => blocker.query('COMMIT'),
      );
      expect(res.status).toBe(404);
      expect(await triplesOf('object_id', id)).toBe(0);
    } finally {
      await blocker.end();
    }
  });

  it('removes the triples of a deleted object or collection, also ones committed while the delete waited', async () => {
    const id = await upload('deleted.bin');
    const [sql, params] = insertFor('object_id', [id]);
    await site.query(sql, params);
    expect(await triplesOf('object_id', id)).toBe(1);

    // A writer adds triples and holds its transaction open; the delete of the object waits for it,
    // then removes those triples too.
    const writer = await connect();
    const deleter = await connect();
    try {
      await writer.query('BEGIN');
      await writer.query(
        `INSERT INTO metadata_triples (object_id, attribute, value_type, value) VALUES ($1, 'project', 'text', 'late')`,
        [id.toString()],
      );
      await deleter.query(`SET tributary.capture = 'off'`);
      await expectToWaitUntil(deleter.query('DELETE FROM data_objects WHERE id = $1', [id.toString()]), () =>
        writer.query('COMMIT'),
      );
    } finally {
      await writer.end();
      await deleter.end();
    }
    expect(await triplesOf('object_id', id)).toBe(0);

    const sub = `${base}/sub`;
    expectStatus(await admin.post('/api/v1/namespace/collections', { path: sub }), 201);
    const coll = await collectionId(sub);
    await site.query(...insertFor('collection_id', [coll]));
    expect(await triplesOf('collection_id', coll)).toBe(1);
    await site.query(`SET tributary.capture = 'off'; DELETE FROM collections WHERE id = ${coll}`);
    expect(await triplesOf('collection_id', coll)).toBe(0);
  });
});
