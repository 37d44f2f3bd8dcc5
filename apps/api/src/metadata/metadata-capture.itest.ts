import { Extractor, unfold, type LoggedChange } from '@tributary/replication';
import pg from 'pg';
import type { BulkMetadataResult, TripleDto } from '@tributary/shared';
import { beforeAll, describe, expect, it } from 'vitest';
import { useSiteWithFolder } from '../test/site-folder';
import { expectStatus, type TestClient, type TestSite } from '../test/test-site';

interface CapturedChange {
  op: 'I' | 'U' | 'D';
  key: string;
  data: Record<string, unknown>;
  stamp: number;
  baseStamp: number | null;
  baseSite: string | null;
}

interface HeldVersion {
  stamp: number;
  site: string;
  deleted: boolean;
  baseStamp: number | null;
  /** No row in repl_versions: the version is the insert the row states (insert_stamp, insert_site). */
  implied: boolean;
}

/**
 * Change capture of metadata triples, which is per statement (migrations
 * 20261122300000_statement_insert_capture and 20261125000000_statement_capture): every bulk write
 * must leave exactly what the per-row capture of other tables leaves, one change per row with its
 * image and the version it replaced, and the row's version held here.
 */
describe('metadata: change capture per statement', () => {
  let site: TestSite;
  let admin: TestClient;
  let base: string;

  const { upload } = useSiteWithFolder('capture', (suite) => {
    ({ site, admin, base } = suite);
  });

  beforeAll(async () => {
    for (const name of ['a.bin', 'b.bin']) await upload(name);
  });

  async function bulk(body: unknown): Promise<BulkMetadataResult> {
    return expectStatus(await admin.post<BulkMetadataResult>('/api/v1/metadata/bulk', body), 200).body;
  }

  async function triples(name: string): Promise<TripleDto[]> {
    const res = await admin.get<{ triples: TripleDto[] }>('/api/v1/metadata', {
      query: { path: `${base}/${name}` },
    });
    return expectStatus(res, 200).body.triples;
  }

  /**
   * The row changes captured for these triples, extracted into the log or not yet, in capture order
   * (a batch of inserts unfolded as a peer's collector unfolds it).
   */
  async function changes(ids: string[]): Promise<CapturedChange[]> {
    const { rows } = await site.query<{ change: LoggedChange }>(
      `SELECT change FROM (
         SELECT l.seq AS seq, x.n AS n, x.c AS change
           FROM repl_log l, jsonb_array_elements(repl_log_changes(l.seq)) WITH ORDINALITY AS x(c, n)
          WHERE x.c ->> 't' = 'metadata_triples'
         UNION ALL
         SELECT 9223372036854775807, id, jsonb_build_object('t', tbl, 'o', op, 'k', row_key, 'd', data, 's', stamp,
                                                            'b', base_stamp, 'bs', base_site)
           FROM repl_changes WHERE tbl = 'metadata_triples') c
        ORDER BY seq, n`,
    );
    const wanted = new Set(ids);
    return unfold(rows.map((r) => r.change))
      .filter((c) => wanted.has(c.k))
      .map((c) => ({ op: c.o, key: c.k, data: c.d, stamp: c.s, baseStamp: c.b, baseSite: c.bs }));
  }

  /** Adds one triple to a.bin through the API; returns its id. */
  async function addOne(attribute: string, value: string): Promise<string> {
    const res = await admin.post<TripleDto[]>(
      '/api/v1/metadata',
      { triples: [{ attribute, value }] },
      { query: { path: `${base}/a.bin` } },
    );
    return expectStatus(res, 201).body[0]!.id;
  }

  /** The version held here for a triple (`repl_held_version`), with the base of a version row. */
  async function version(id: string): Promise<HeldVersion | undefined> {
    const { rows } = await site.query<{
      stamp: string;
      site: string;
      deleted: boolean;
      implied: boolean;
      base_stamp: string | null;
    }>(
      `SELECT h.stamp, h.site, h.deleted, h.implied, v.base_stamp
         FROM repl_held_version('metadata_triples', $1) h
         LEFT JOIN repl_versions v ON v.tbl = 'metadata_triples' AND v.row_key = $1
        WHERE h.stamp IS NOT NULL`,
      [id],
    );
    const r = rows[0];
    return (
      r && {
        stamp: Number(r.stamp),
        site: r.site,
        deleted: r.deleted,
        baseStamp: r.base_stamp === null ? null : Number(r.base_stamp),
        implied: r.implied,
      }
    );
  }

  it('captures adds as batches, changes and removals one change per row, each based on the version held here', async () => {
    const paths = [`${base}/a.bin`, `${base}/b.bin`];
    const added = await bulk({
      operations: [
        {
          paths,
          add: [
            { attribute: 'project', value: 'coast' },
            { attribute: 'size', value: 10, unit: 'bytes' },
          ],
        },
      ],
    });
    expect(added.added).toBe(4);
    const before = [...(await triples('a.bin')), ...(await triples('b.bin'))];
    const ids = before.map((t) => t.id);
    const { rows: batches } = await site.query<{ op: string; row_count: number }>(
      `SELECT op, row_count FROM repl_changes WHERE tbl = 'metadata_triples'
       UNION ALL SELECT x ->> 'o', CASE WHEN x ->> 'o' = 'B' THEN jsonb_array_length(x -> 'd' -> 'id') ELSE 1 END
         FROM repl_log l, jsonb_array_elements(repl_log_changes(l.seq)) x
        WHERE x ->> 't' = 'metadata_triples'`,
    );
    expect(batches).toEqual([{ op: 'B', row_count: 4 }]);
    // Columns with one value for the whole batch are written once; the others, and the key, per row.
    const { rows: forms } = await site.query<{ column: string; form: string }>(
      `SELECT c.key AS column, jsonb_typeof(c.value) AS form
         FROM (SELECT data AS d FROM repl_changes WHERE tbl = 'metadata_triples' AND op = 'B'
               UNION ALL SELECT x -> 'd' FROM repl_log l, jsonb_array_elements(repl_log_changes(l.seq)) x
                WHERE x ->> 't' = 'metadata_triples' AND x ->> 'o' = 'B') b, jsonb_each(b.d) c`,
    );
    const form = Object.fromEntries(forms.map((f) => [f.column, f.form]));
    expect(form).toMatchObject({
      id: 'array',
      object_id: 'array',
      attribute: 'array',
      value: 'array',
      num: 'array',
      collection_id: 'object',
      created_at: 'object',
      updated_at: 'object',
      created_by: 'object',
      time: 'object',
      insert_stamp: 'object',
      insert_site: 'object',
    });
    const inserted = await changes(ids);
    expect(inserted.map((c) => c.op)).toEqual(['I', 'I', 'I', 'I']);
    expect(new Set(inserted.map((c) => c.key))).toEqual(new Set(ids));
    for (const c of inserted) {
      expect(c.baseStamp).toBeNull();
      const t = before.find((b) => b.id === c.key)!;
      expect(c.data).toMatchObject({
        id: Number(t.id),
        attribute: t.attribute,
        value: String(t.value),
        collection_id: null,
      });
      expect(typeof c.data.created_at).toBe('string');
      // The row states its insert; no version row is written for it.
      expect(c.data).toMatchObject({ insert_stamp: c.stamp, insert_site: 'lsu' });
      expect(await version(c.key)).toEqual({
        stamp: c.stamp,
        site: 'lsu',
        deleted: false,
        baseStamp: null,
        implied: true,
      });
    }

    // `set` rewrites the size rows in place: an update of each, based on its insert, captured as one
    // batch of updates.
    await bulk({ operations: [{ paths, set: [{ attribute: 'size', value: 20, unit: 'bytes' }] }] });
    const { rows: updateBatches } = await site.query<{ n: number }>(
      `SELECT jsonb_array_length(data -> 's') AS n FROM repl_changes WHERE tbl = 'metadata_triples' AND op = 'V'
       UNION ALL SELECT jsonb_array_length(x -> 'd' -> 's') FROM repl_log l, jsonb_array_elements(repl_log_changes(l.seq)) x
        WHERE x ->> 't' = 'metadata_triples' AND x ->> 'o' = 'V'`,
    );
    expect(updateBatches).toEqual([{ n: 2 }]);
    const sizeIds = before.filter((t) => t.attribute === 'size').map((t) => t.id);
    const updated = (await changes(sizeIds)).filter((c) => c.op === 'U');
    expect(updated).toHaveLength(2);
    for (const u of updated) {
      const insert = inserted.find((c) => c.key === u.key)!;
      expect(u).toMatchObject({ baseStamp: insert.stamp, baseSite: 'lsu' });
      expect(u.stamp).toBeGreaterThan(insert.stamp);
      expect(u.data).toMatchObject({ value: '20', num: 20 });
      expect(await version(u.key)).toEqual({
        stamp: u.stamp,
        site: 'lsu',
        deleted: false,
        baseStamp: insert.stamp,
        implied: false,
      });
    }

    // An update that changes nothing replicated is not a change.
    await site.query(`UPDATE metadata_triples SET value = value WHERE id = ANY($1::bigint[])`, [ids]);
    expect(await changes(ids)).toHaveLength(6);

    // Removing the project triples: a delete of each, based on its insert; the versions are tombstones.
    await bulk({ operations: [{ paths, remove: [{ attribute: 'project' }] }] });
    const projectIds = before.filter((t) => t.attribute === 'project').map((t) => t.id);
    const deleted = (await changes(projectIds)).filter((c) => c.op === 'D');
    expect(deleted).toHaveLength(2);
    for (const d of deleted) {
      const insert = inserted.find((c) => c.key === d.key)!;
      expect(d).toMatchObject({ baseStamp: insert.stamp, baseSite: 'lsu' });
      expect(d.data).toMatchObject({ attribute: 'project', value: 'coast' });
      expect(await version(d.key)).toEqual({
        stamp: d.stamp,
        site: 'lsu',
        deleted: true,
        baseStamp: insert.stamp,
        implied: false,
      });
    }
  });

  it('splits a large statement into batches of 10,000 rows that unfold into every row', async () => {
    const { rows } = await site.query<{ id: string }>(
      `SELECT o.id FROM data_objects o JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 AND o.name = 'b.bin'`,
      [base],
    );
    const { rows: inserted } = await site.query<{ id: string }>(
      `INSERT INTO metadata_triples (object_id, attribute, value_type, value)
       SELECT $1, 'seq', 'text', i::text FROM generate_series(1, 25001) i RETURNING id`,
      [rows[0]!.id],
    );
    const ids = inserted.map((r) => r.id);
    // The batches whose first row is one of these (not extracted yet, or in the log).
    const { rows: batches } = await site.query<{ row_count: number }>(
      `SELECT row_count FROM (
         SELECT row_count, (data -> 'id' -> 0)::text AS first FROM repl_changes WHERE tbl = 'metadata_triples' AND op = 'B'
         UNION ALL
         SELECT jsonb_array_length(x -> 'd' -> 'id'), (x -> 'd' -> 'id' -> 0)::text
           FROM repl_log l, jsonb_array_elements(repl_log_changes(l.seq)) x WHERE x ->> 't' = 'metadata_triples' AND x ->> 'o' = 'B') b
        WHERE first = ANY ($1::text[]) ORDER BY row_count DESC`,
      [ids],
    );
    expect(batches.map((b) => b.row_count)).toEqual([10000, 10000, 5001]);
    const unfolded = await changes(ids);
    expect(unfolded).toHaveLength(25001);
    expect(new Set(unfolded.map((c) => c.key))).toEqual(new Set(ids));
    expect(
      unfolded.every((c) => c.op === 'I' && c.data.attribute === 'seq' && c.data.id === Number(c.key)),
    ).toBe(true);

    // Extracted into the log, each batch's data is kept beside the entry, not inside it, and comes
    // back whole (repl_log_changes; the dispatcher does the same).
    const pool = new pg.Pool(site.connection);
    try {
      await new Extractor(pool).extract([]);
    } finally {
      await pool.end();
    }
    const { rows: logged } = await site.query<{ inline: unknown; named: boolean; stored: number }>(
      `SELECT x -> 'd' AS inline, x ? 'x' AS named,
              (SELECT jsonb_array_length(d.data -> 'id') FROM repl_log_data d
                WHERE d.seq = l.seq AND d.change_id = (x ->> 'x')::bigint) AS stored
         FROM repl_log l, jsonb_array_elements(l.changes) x
        WHERE x ->> 't' = 'metadata_triples' AND x ->> 'o' = 'B'
          AND EXISTS (SELECT 1 FROM repl_log_data d WHERE d.seq = l.seq AND d.data -> 'id' -> 0 = to_jsonb($1::bigint))`,
      [ids[0]],
    );
    expect(logged).toHaveLength(3);
    expect(logged.every((r) => r.inline === null && r.named)).toBe(true);
    expect(logged.map((r) => r.stored).sort()).toEqual([10000, 10000, 5001].sort());
    expect(await changes(ids)).toEqual(unfolded);
  });

  it('writes over the version a key already has (a tombstone) when a row with that key is inserted again', async () => {
    const id = await addOne('again', 'one');
    const { rows } = await site.query<Record<string, unknown>>(
      'SELECT * FROM metadata_triples WHERE id = $1',
      [id],
    );
    await site.query('DELETE FROM metadata_triples WHERE id = $1', [id]);
    const tombstone = (await version(id))!;
    expect(tombstone.deleted).toBe(true);
    // The same row back, with its key, and a new one beside it in the same statement.
    const row = rows[0]!;
    await site.query(
      `INSERT INTO metadata_triples (id, object_id, attribute, value_type, value)
       VALUES ($1, $2, 'again', 'text', 'one'), (DEFAULT, $2, 'again', 'text', 'two')`,
      [id, row.object_id],
    );
    const back = (await changes([id])).at(-1)!;
    expect(back.op).toBe('I');
    expect(await version(id)).toEqual({
      stamp: back.stamp,
      site: 'lsu',
      deleted: false,
      baseStamp: tombstone.stamp,
      implied: false,
    });
    // The new row beside it states its own insert, which its change carries.
    const { rows: fresh } = await site.query<{ id: string }>(
      `SELECT id FROM metadata_triples WHERE object_id = $1 AND attribute = 'again' AND value = 'two'`,
      [row.object_id],
    );
    const freshChange = (await changes([fresh[0]!.id])).at(-1)!;
    expect(freshChange.op).toBe('I');
    expect(freshChange.data).toMatchObject({ insert_stamp: freshChange.stamp, insert_site: 'lsu' });
    expect(await version(fresh[0]!.id)).toEqual({
      stamp: freshChange.stamp,
      site: 'lsu',
      deleted: false,
      baseStamp: null,
      implied: true,
    });
  });

  it('does not capture what the injector writes for a peer', async () => {
    const id = await addOne('x', 'one');
    await site.query(
      `BEGIN;
       SET LOCAL tributary.origin = 'tulane';
       UPDATE metadata_triples SET value = 'two' WHERE id = ${BigInt(id)};
       DELETE FROM metadata_triples WHERE id = ${BigInt(id)};
       COMMIT;`,
    );
    expect((await changes([id])).map((c) => c.op)).toEqual(['I']);
  });
});
