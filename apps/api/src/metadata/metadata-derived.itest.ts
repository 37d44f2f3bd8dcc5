import pg from 'pg';
import type {
  BulkMetadataResult,
  EntryTriplesDto,
  MetadataQueryRequest,
  MetadataQueryResult,
  TrashEntryDto,
} from '@tributary/shared';
import { beforeAll, describe, expect, it } from 'vitest';
import { expectToWaitUntil } from '../test/storage';
import { useSiteWithFolder } from '../test/site-folder';
import { expectStatus, type TestClient, type TestSite } from '../test/test-site';
import { ValueCountsFolder } from './value-counts.folder';

/**
 * The tables derived from the triples for queries (migration 20261122200000_metadata_terms): each
 * object's terms (conjunctions of equalities) and the value counts (whole-catalog facets). Every
 * check compares them with what the triples themselves say, after each kind of write.
 */
describe('metadata: terms and value counts follow the triples', () => {
  let site: TestSite;
  let admin: TestClient;
  let base: string;

  const path = (name: string): string => `${base}/${name}`;

  const { upload } = useSiteWithFolder('derived', (suite) => {
    ({ site, admin, base } = suite);
  });

  async function bulk(body: unknown): Promise<BulkMetadataResult> {
    return expectStatus(await admin.post<BulkMetadataResult>('/api/v1/metadata/bulk', body), 200).body;
  }

  async function names(body: MetadataQueryRequest): Promise<string[]> {
    const res = await admin.post<MetadataQueryResult>('/api/v1/metadata/query', {
      scope: base,
      limit: 1000,
      ...body,
    });
    return expectStatus(res, 200)
      .body.items.map((i) => i.name)
      .sort();
  }

  /**
   * The terms table (terms, measures and the object's name) against the triples and the objects: equal
   * for every object, or the differences.
   */
  async function termsMismatches(): Promise<unknown[]> {
    const { rows } = await site.query(
      `WITH want AS (
              SELECT object_id,
                     COALESCE(array_agg(DISTINCT metadata_term(attribute, value) ORDER BY metadata_term(attribute, value))
                                FILTER (WHERE value_type = 'text'), '{}') AS terms,
                     ARRAY(SELECT x FROM unnest(array_agg(CASE value_type WHEN 'number' THEN 'n:' || attribute || '=' || num::text
                                                                          ELSE 't:' || attribute || '=' || value END)
                                                  FILTER (WHERE value_type <> 'text')) x ORDER BY x) AS measures,
                     (SELECT o.name FROM data_objects o WHERE o.id = object_id) AS name
                FROM metadata_triples WHERE object_id IS NOT NULL GROUP BY object_id),
            have AS (
              SELECT object_id, ARRAY(SELECT x FROM unnest(terms) x ORDER BY x) AS terms,
                     ARRAY(SELECT CASE WHEN k LIKE 'n:%' THEN k || '=' || v::text
                                       ELSE k || '=' || to_char(to_timestamp(v / 1000) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') END
                             FROM unnest(measure_keys, measures) AS m(k, v) ORDER BY 1) AS measures, name
                FROM metadata_terms)
       SELECT w.object_id AS want_id, w.terms AS want, w.measures AS want_measures, w.name AS want_name,
              h.object_id AS have_id, h.terms AS have, h.measures AS have_measures, h.name AS have_name
         FROM want w FULL JOIN have h ON h.object_id = w.object_id
        WHERE w.terms IS DISTINCT FROM h.terms OR w.measures IS DISTINCT FROM h.measures OR w.name IS DISTINCT FROM h.name`,
    );
    return rows;
  }

  /** A whole-catalog facet (counts table) and the same counted from the triples (the other path). */
  async function facetBothWays(attribute: string): Promise<{ kept: unknown; counted: unknown }> {
    const ask = async (where: MetadataQueryRequest['where']) => {
      const res = await admin.post<MetadataQueryResult>('/api/v1/metadata/query', {
        limit: 0,
        count: false,
        facets: [attribute],
        ...(where ? { where } : {}),
      });
      return expectStatus(res, 200).body.facets?.[attribute];
    };
    return { kept: await ask(undefined), counted: await ask({ attribute, op: 'exists' }) };
  }

  beforeAll(async () => {
    for (let i = 0; i < 8; i++) await upload(`o${i}`);
    // kind: raw for o0-o5, cal for o6-o7; band: red for even, blue for odd; o0 has red twice.
    await bulk({
      operations: [
        ...Array.from({ length: 8 }, (_, i) => ({
          paths: [path(`o${i}`)],
          add: [
            { attribute: 'kind', value: i < 6 ? 'raw' : 'cal' },
            { attribute: 'band', value: i % 2 === 0 ? 'red' : 'blue' },
            { attribute: 'exposure', value: i * 10, unit: 's' },
          ],
        })),
        { paths: [path('o0')], add: [{ attribute: 'band', value: 'red', unit: 'nm-label' }] },
      ],
    });
  });

  it('answers conjunctions of equalities from the terms after adds, changes and removals', async () => {
    expect(await names({ q: 'kind = raw and band = red' })).toEqual(['o0', 'o2', 'o4']);
    expect(await names({ q: 'kind = raw and band = red and exposure >= 20' })).toEqual(['o2', 'o4']);
    expect(await termsMismatches()).toEqual([]);

    // Change in place: o4's band becomes blue.
    const o4 = expectStatus(
      await admin.get<EntryTriplesDto>('/api/v1/metadata', { query: { path: path('o4') } }),
      200,
    ).body;
    const band = o4.triples.find((t) => t.attribute === 'band')!;
    expectStatus(await admin.patch(`/api/v1/metadata/triples/${band.id}`, { value: 'blue' }), 200);
    expect(await names({ q: 'kind = raw and band = red' })).toEqual(['o0', 'o2']);
    expect(await names({ q: 'kind = raw and band = blue' })).toEqual(['o1', 'o3', 'o4', 'o5']);

    // o0 has band=red twice (two units): removing one keeps the term, removing both drops it.
    await bulk({
      operations: [{ paths: [path('o0')], remove: [{ attribute: 'band', value: 'red', unit: 'nm-label' }] }],
    });
    expect(await names({ q: 'kind = raw and band = red' })).toEqual(['o0', 'o2']);
    await bulk({ operations: [{ paths: [path('o0')], remove: [{ attribute: 'band', value: 'red' }] }] });
    expect(await names({ q: 'kind = raw and band = red' })).toEqual(['o2']);

    // `set` replaces values in place; removing every text triple of an object leaves it no terms row.
    await bulk({ operations: [{ paths: [path('o6')], set: [{ attribute: 'kind', value: 'raw' }] }] });
    expect(await names({ q: 'kind = raw and band = red' })).toEqual(['o2', 'o6']);
    await bulk({
      operations: [{ paths: [path('o7')], remove: [{ attribute: 'kind' }, { attribute: 'band' }] }],
    });
    expect(await termsMismatches()).toEqual([]);
  });

  it("answers a conjunction's number and time ranges from the measures after changes", async () => {
    const q = (rest: string): Promise<string[]> => names({ q: `kind = raw and band = red and ${rest}` });
    expect(await q('exposure >= 20')).toEqual(['o2', 'o6']);
    await bulk({
      operations: [
        {
          paths: [path('o2')],
          set: [{ attribute: 'exposure', value: 5 }],
          add: [{ attribute: 'seen', value: '2024-05-01T10:00:00Z', type: 'time' }],
        },
      ],
    });
    expect(await q('exposure >= 20')).toEqual(['o6']);
    expect(await q('exposure in (5, 60)')).toEqual(['o2', 'o6']);
    expect(await q('seen between 2024-05-01 and 2024-05-02')).toEqual(['o2']);
    expect(await q('seen < 2024-05-01T10:00:00Z')).toEqual([]);
    expect(await q('seen <= 2024-05-01T10:00:00Z')).toEqual(['o2']);
    expect(await q('seen in (2024-05-01T10:00:00Z, 2025-01-01)')).toEqual(['o2']);
    expect(await q('seen in (2024-05-01T10:00:00.001Z)')).toEqual([]);
    // A text value that looks like a number is not a number.
    await bulk({ operations: [{ paths: [path('o6')], set: [{ attribute: 'exposure', value: '60' }] }] });
    expect(await q('exposure >= 20')).toEqual([]);
    expect(await termsMismatches()).toEqual([]);
  });

  it('leaves trashed objects out and brings them back on restore; a purge removes their terms', async () => {
    await upload('gone');
    await bulk({
      operations: [
        {
          paths: [path('gone')],
          add: [
            { attribute: 'kind', value: 'raw' },
            { attribute: 'band', value: 'red' },
          ],
        },
      ],
    });
    expect(await names({ q: 'kind = raw and band = red' })).toContain('gone');
    const del = expectStatus(
      await admin.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: path('gone') } }),
      200,
    ).body;
    expect(await names({ q: 'kind = raw and band = red' })).not.toContain('gone');
    expectStatus(await admin.post(`/api/v1/trash/${del.id}/restore`), 200);
    expect(await names({ q: 'kind = raw and band = red' })).toContain('gone');

    const again = expectStatus(
      await admin.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: path('gone') } }),
      200,
    ).body;
    await site.runReplicationCycle();
    const purged = await admin.delete(`/api/v1/trash/${again.id}`);
    expect(purged.status).toBe(204);
    expect(await termsMismatches()).toEqual([]);
  });

  it("merges the terms index's pending list at each fold", async () => {
    const pending = async (): Promise<number> =>
      Number(
        (
          await site.query<{ n: string }>(
            `SELECT gin_clean_pending_list('metadata_terms_terms_idx'::regclass) AS n`,
          )
        ).rows[0]!.n,
      );
    await pending();
    const targets = Array.from({ length: 8 }, (_, i) => path(`o${i}`));
    await bulk({ operations: [{ paths: targets, add: [{ attribute: 'pending', value: 'yes' }] }] });
    await site.siteApp.app.get(ValueCountsFolder).fold();
    // Nothing left to merge: the fold did it (the tags themselves went to the list).
    expect(await pending()).toBe(0);
    await bulk({ operations: [{ paths: targets, add: [{ attribute: 'pending', value: 'again' }] }] });
    expect(await pending()).toBeGreaterThan(0);
    expect(await names({ q: 'pending = yes and pending = again' })).toHaveLength(8);
  });

  it('keeps every term when two requests tag the same objects at once', async () => {
    const targets = Array.from({ length: 8 }, (_, i) => path(`o${i}`));
    await Promise.all(
      ['alpha', 'beta', 'gamma'].map((v) =>
        bulk({ operations: [{ paths: targets, add: [{ attribute: 'campaign', value: v }] }] }),
      ),
    );
    expect(await names({ q: 'campaign = alpha and campaign = beta and campaign = gamma' })).toEqual(
      Array.from({ length: 8 }, (_, i) => `o${i}`),
    );
    expect(await termsMismatches()).toEqual([]);
  });

  it('whole-catalog facets from the kept counts equal the counts from the triples, through trash and folds', async () => {
    const first = await facetBothWays('band');
    expect(first.kept).toEqual(first.counted);
    expect(first.kept).toEqual(expect.arrayContaining([expect.objectContaining({ value: 'blue' })]));

    // Trash an object: its triples leave the facet (they stay in the table and the counts).
    const del = expectStatus(
      await admin.delete<TrashEntryDto>('/api/v1/namespace', { query: { path: path('o3') } }),
      200,
    ).body;
    const trashed = await facetBothWays('band');
    expect(trashed.kept).toEqual(trashed.counted);
    expect(trashed.kept).not.toEqual(first.kept);

    // Folding the deltas changes nothing a reader sees; afterwards no delta is left.
    await site.query('SELECT metadata_fold_counts()');
    expect((await site.query('SELECT 1 FROM metadata_value_deltas')).rowCount).toBe(0);
    expect((await facetBothWays('band')).kept).toEqual(trashed.kept);

    expectStatus(await admin.post(`/api/v1/trash/${del.id}/restore`), 200);
    await bulk({ operations: [{ paths: [path('o5')], set: [{ attribute: 'band', value: 'green' }] }] });
    const after = await facetBothWays('band');
    expect(after.kept).toEqual(after.counted);
    expect(after.kept).toEqual(expect.arrayContaining([{ value: 'green', count: 1 }]));
    // Numbers are counted by value too.
    const exposure = await facetBothWays('exposure');
    expect(exposure.kept).toEqual(exposure.counted);

    // A value whose last triple goes leaves no count behind once folded.
    const solo = async (): Promise<number> =>
      (await site.query(`SELECT 1 FROM metadata_value_counts WHERE attribute = 'band' AND value = 'solo'`))
        .rowCount ?? 0;
    await bulk({ operations: [{ paths: [path('o6')], add: [{ attribute: 'band', value: 'solo' }] }] });
    await site.query('SELECT metadata_fold_counts()');
    expect(await solo()).toBe(1);
    await bulk({ operations: [{ paths: [path('o6')], remove: [{ attribute: 'band', value: 'solo' }] }] });
    await site.query('SELECT metadata_fold_counts()');
    expect(await solo()).toBe(0);
    expect((await facetBothWays('band')).kept).toEqual((await facetBothWays('band')).counted);
  });
  /** Rows of a catalog table for one attribute. */
  async function rowsFor(table: string, attribute: string): Promise<number> {
    const { rows } = await site.query<{ n: string }>(
      `SELECT count(*) AS n FROM ${table} WHERE attribute = $1`,
      [attribute],
    );
    return Number(rows[0]!.n);
  }

  it('counts an attribute from its first whole-catalog facet on; writes leave other attributes uncounted', async () => {
    await bulk({
      operations: [
        { paths: [0, 1, 2, 3].map((i) => path(`o${i}`)), add: [{ attribute: 'survey', value: 'north' }] },
        { paths: [path('o4')], add: [{ attribute: 'survey', value: 'south' }] },
      ],
    });
    // Nobody has asked for a facet on it: no count, no delta.
    expect(await rowsFor('metadata_counted_attributes', 'survey')).toBe(0);
    expect(await rowsFor('metadata_value_deltas', 'survey')).toBe(0);
    expect(await rowsFor('metadata_value_counts', 'survey')).toBe(0);

    const first = await facetBothWays('survey');
    expect(first.kept).toEqual(first.counted);
    expect(first.kept).toEqual([
      expect.objectContaining({ value: 'north', count: 4 }),
      expect.objectContaining({ value: 'south', count: 1 }),
    ]);
    expect(await rowsFor('metadata_counted_attributes', 'survey')).toBe(1);
    expect(await rowsFor('metadata_value_counts', 'survey')).toBe(2);

    // From now on its writes append deltas; an attribute nobody faceted on still gets none.
    await bulk({
      operations: [
        {
          paths: [path('o5')],
          add: [
            { attribute: 'survey', value: 'south' },
            { attribute: 'pass', value: 'p1' },
          ],
        },
      ],
    });
    expect(await rowsFor('metadata_value_deltas', 'survey')).toBe(1);
    expect(await rowsFor('metadata_value_deltas', 'pass')).toBe(0);
    const after = await facetBothWays('survey');
    expect(after.kept).toEqual(after.counted);
    expect(after.kept).toEqual(
      expect.arrayContaining([expect.objectContaining({ value: 'south', count: 2 })]),
    );
    await bulk({ operations: [{ paths: [path('o0')], remove: [{ attribute: 'survey', value: 'north' }] }] });
    await site.query('SELECT metadata_fold_counts()');
    const removed = await facetBothWays('survey');
    expect(removed.kept).toEqual(removed.counted);
    expect(removed.kept).toEqual(
      expect.arrayContaining([expect.objectContaining({ value: 'north', count: 3 })]),
    );
  });

  it('sorts pages by name from the terms rows as from the objects, through renames, trash and cursors', async () => {
    // Objects whose names sort differently from their ids (uploaded in this order).
    const order = ['m5', 'b2', 'x9', 'a1', 'k3', 'c7'];
    for (const n of order) await upload(n);
    await bulk({
      operations: [
        {
          paths: order.map(path),
          add: [
            { attribute: 'shelf', value: 'sorted' },
            { attribute: 'tier', value: 'one' },
          ],
        },
        { paths: [path('x9'), path('a1')], add: [{ attribute: 'flag', value: 'odd' }] },
      ],
    });
    /**
     * Every page of a query walked with its cursor, in the order returned: at scope `/` (the terms
     * rows' names, for this admin) and at the collection's scope (the objects' own names).
     */
    const walk = async (q: string, scope: string, order: 'asc' | 'desc' = 'asc'): Promise<string[]> => {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (;;) {
        const res = await admin.post<MetadataQueryResult>('/api/v1/metadata/query', {
          q,
          scope,
          sort: 'name',
          order,
          limit: 2,
          ...(cursor ? { cursor } : {}),
        });
        const body = expectStatus(res, 200).body;
        seen.push(...body.items.map((i) => i.name));
        if (!body.nextCursor) return seen;
        cursor = body.nextCursor;
      }
    };
    const both = async (q: string, want: string[], dir: 'asc' | 'desc' = 'asc'): Promise<void> => {
      expect(await walk(q, '/', dir)).toEqual(want);
      expect(await walk(q, base, dir)).toEqual(want);
    };
    await both('shelf = sorted', ['a1', 'b2', 'c7', 'k3', 'm5', 'x9']);
    await both('shelf = sorted', ['x9', 'm5', 'k3', 'c7', 'b2', 'a1'], 'desc');
    // Two equalities, and one with a condition left to check per object.
    await both('shelf = sorted and tier = one', ['a1', 'b2', 'c7', 'k3', 'm5', 'x9']);
    await both('shelf = sorted and tier = one and flag exists', ['a1', 'x9']);
    await both('shelf = sorted and tier = one and flag != odd', []);

    // A rename moves the object in the order; a trashed object leaves it.
    expectStatus(await admin.post('/api/v1/namespace/move', { from: path('x9'), to: path('a0') }), 200);
    expectStatus(await admin.delete('/api/v1/namespace', { query: { path: path('k3') } }), 200);
    await both('shelf = sorted', ['a0', 'a1', 'b2', 'c7', 'm5']);
    await both('shelf = sorted and tier = one and flag = odd', ['a0', 'a1']);
    expect(await termsMismatches()).toEqual([]);
  });

  it("a rename and an object's first tag at once leave its terms row with the new name", async () => {
    await upload('race');
    const { rows } = await site.query<{ id: string }>(
      `SELECT o.id FROM data_objects o JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 AND o.name = 'race'`,
      [base],
    );
    const id = rows[0]!.id;
    const nameOf = async (): Promise<string | undefined> =>
      (await site.query<{ name: string }>('SELECT name FROM metadata_terms WHERE object_id = $1', [id]))
        .rows[0]?.name;
    const tagger = new pg.Client(site.connection);
    const renamer = new pg.Client(site.connection);
    await Promise.all([tagger.connect(), renamer.connect()]);
    try {
      // The tag first: the rename waits for it, then renames its new row.
      await tagger.query('BEGIN');
      await tagger.query(
        `INSERT INTO metadata_triples (object_id, attribute, value_type, value) VALUES ($1, 'race', 'text', 'one')`,
        [id],
      );
      await expectToWaitUntil(
        renamer.query(`UPDATE data_objects SET name = 'race-2' WHERE id = $1`, [id]),
        () => tagger.query('COMMIT'),
      );
      expect(await nameOf()).toBe('race-2');

      // The rename first: a first tag (after its last triple went) waits, then reads the new name.
      await site.query(`DELETE FROM metadata_triples WHERE object_id = $1`, [id]);
      expect(await nameOf()).toBeUndefined();
      await renamer.query('BEGIN');
      await renamer.query(`UPDATE data_objects SET name = 'race-3' WHERE id = $1`, [id]);
      await expectToWaitUntil(
        tagger.query(
          `INSERT INTO metadata_triples (object_id, attribute, value_type, value) VALUES ($1, 'race', 'text', 'two')`,
          [id],
        ),
        () => renamer.query('COMMIT'),
      );
      expect(await nameOf()).toBe('race-3');
    } finally {
      await Promise.all([tagger.end(), renamer.end()]);
    }
    expect(await termsMismatches()).toEqual([]);
  });

  it("a first facet waits for a writer in flight and counts that writer's triples once", async () => {
    const { rows } = await site.query<{ id: string }>(
      `SELECT o.id FROM data_objects o JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 AND o.name IN ('o1', 'o2') ORDER BY o.name`,
      [base],
    );
    const [o1, o2] = rows.map((r) => r.id);
    await bulk({ operations: [{ paths: [path('o3')], add: [{ attribute: 'epoch', value: 'e1' }] }] });
    const writer = new pg.Client(site.connection);
    await writer.connect();
    try {
      // A writer adds a triple and keeps its transaction open while the attribute's first facet is asked.
      await writer.query('BEGIN');
      await writer.query(
        `INSERT INTO metadata_triples (object_id, attribute, value_type, value) VALUES ($1, 'epoch', 'text', 'e1')`,
        [o1],
      );
      const first = await expectToWaitUntil(facetBothWays('epoch'), () => writer.query('COMMIT'));
      expect(first.kept).toEqual(first.counted);
      expect(first.kept).toEqual([expect.objectContaining({ value: 'e1', count: 2 })]);
      // Written after the count: a delta, counted once.
      await writer.query(
        `INSERT INTO metadata_triples (object_id, attribute, value_type, value) VALUES ($1, 'epoch', 'text', 'e1')`,
        [o2],
      );
      const next = await facetBothWays('epoch');
      expect(next.kept).toEqual(next.counted);
      expect(next.kept).toEqual([expect.objectContaining({ value: 'e1', count: 3 })]);
    } finally {
      await writer.end();
    }
  });
});
