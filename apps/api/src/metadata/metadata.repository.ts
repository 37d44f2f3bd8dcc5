import { Injectable } from '@nestjs/common';
import { inTransaction } from '@tributary/replication';
import { escapeLike, splitPath, type CheckedTriple, type MetadataValueType } from '@tributary/shared';
import type pg from 'pg';
import { copyRows, type CopyValue } from '../database/copy-rows';
import { SqlPool } from '../database/sql-pool';
import type { TargetColumn } from './query-compiler';

export type EntryKind = 'object' | 'collection';

/** An object or collection that triples hang on. */
export interface MetadataTarget {
  kind: EntryKind;
  id: bigint;
  path: string;
  ownerId: bigint;
}

export interface TripleRecord {
  id: bigint;
  kind: EntryKind;
  targetId: bigint;
  attribute: string;
  type: MetadataValueType;
  value: string;
  unit: string | null;
  updatedAt: Date;
}

/** Triples for targets: every triple of a group applies to every target of it. */
export interface TripleGroup {
  targets: bigint[];
  triples: CheckedTriple[];
}

/** A removal: every value of the attribute (`value` null), or one value; `unit` undefined matches any. */
export interface TripleMatchRow {
  attribute: string;
  value: string | null;
  unit: string | null | undefined;
}

interface TripleRow {
  id: string;
  object_id: string | null;
  collection_id: string | null;
  attribute: string;
  value_type: MetadataValueType;
  value: string;
  unit: string | null;
  updated_at: Date;
}

const TRIPLE_COLUMNS = 'id, object_id, collection_id, attribute, value_type, value, unit, updated_at';

export function toRecord(r: TripleRow): TripleRecord {
  return {
    id: BigInt(r.id),
    kind: r.object_id !== null ? 'object' : 'collection',
    targetId: BigInt(r.object_id ?? r.collection_id!),
    attribute: r.attribute,
    type: r.value_type,
    value: r.value,
    unit: r.unit,
    updatedAt: r.updated_at,
  };
}

const columnOf = (kind: EntryKind): TargetColumn => (kind === 'object' ? 'object_id' : 'collection_id');

/**
 * Whether the target `r.tid` already has the triple of `r`: one descent of the (target, attribute)
 * index per new row. `OFFSET 0` keeps PostgreSQL from turning it into an anti-join, which it costs as
 * a hash of the whole table for a large batch (at ten million triples, seconds per statement).
 */
const alreadyThere = (col: TargetColumn): string =>
  `SELECT 1 FROM metadata_triples t WHERE t.${col} = r.tid AND t.attribute = r.attr AND t.value_type = r.typ
      AND t.value = r.val AND t.unit IS NOT DISTINCT FROM r.unit OFFSET 0`;

/**
 * Inserts the rows of the arrays $1..$7 (target, attribute, type, value, number, time, unit) that their
 * target does not have yet, by $8. Only targets with any triple at all are probed row by row (one
 * probe per target finds them first), so tagging new objects, as a load does, costs a probe per
 * object rather than one per triple (0.33 s of 0.37 s for 100,000 triples on 10,000 objects).
 */
const insertNew = (col: TargetColumn, returning = ''): string =>
  `WITH r AS (
     SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::timestamptz[], $7::text[])
            AS r(tid, attr, typ, val, num, tm, unit)
   ), tagged AS (
     SELECT k.tid FROM (SELECT DISTINCT r.tid FROM r) k
      WHERE EXISTS (SELECT 1 FROM metadata_triples t WHERE t.${col} = k.tid OFFSET 0)
   )
   INSERT INTO metadata_triples (${col}, attribute, value_type, value, num, time, unit, created_by, updated_by)
   SELECT r.tid, r.attr, r.typ, r.val, r.num, r.tm, r.unit, $8, $8 FROM r
    WHERE r.tid NOT IN (SELECT tagged.tid FROM tagged) OR NOT EXISTS (${alreadyThere(col)})
   ${returning}`;

/**
 * Triples in plain SQL on the shared pool (the table is SQL-only; see the migration). Bulk changes
 * are one statement per kind of change over arrays (`unnest`), whatever the number of targets.
 */
@Injectable()
export class MetadataRepository {
  constructor(readonly sql: SqlPool) {}

  /** Runs `fn` in one transaction on one connection. */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.sql.pool, fn);
  }

  /**
   * Live objects and collections by path (a path that is both is impossible). Missing paths are left
   * out. Each object is one probe of its collection's (collection_id, trash_id, name) index: `OFFSET 0`
   * keeps it a probe, as a join on the name is otherwise planned as a hash of every object (0.5 s per
   * 10,000 paths at a million objects).
   */
  async resolve(paths: string[], db: pg.ClientBase | pg.Pool = this.sql.pool): Promise<MetadataTarget[]> {
    if (paths.length === 0) return [];
    const parents: string[] = [];
    const names: string[] = [];
    for (const p of paths) {
      const { parent, name } = p === '/' ? { parent: '', name: '' } : splitPath(p);
      parents.push(parent);
      names.push(name);
    }
    const { rows } = await db.query<{ kind: EntryKind; id: string; path: string; owner_id: string }>(
      `WITH input AS (SELECT * FROM unnest($1::text[], $2::text[], $3::text[]) AS i(path, parent, name))
       SELECT 'collection' AS kind, c.id, c.path, c.owner_id FROM input i
         JOIN collections c ON c.path = i.path AND c.trash_id = 0
       UNION ALL
       SELECT 'object', o.id, i.path, o.owner_id FROM input i
         JOIN collections c ON c.path = i.parent AND c.trash_id = 0
         CROSS JOIN LATERAL (SELECT o.id, o.owner_id FROM data_objects o
                              WHERE o.collection_id = c.id AND o.trash_id = 0 AND o.name = i.name OFFSET 0) o`,
      [paths, parents, names],
    );
    return rows.map((r) => ({ kind: r.kind, id: BigInt(r.id), path: r.path, ownerId: BigInt(r.owner_id) }));
  }

  /** Ids of the live objects (or collections) below a collection. */
  async idsUnder(
    path: string,
    kind: EntryKind,
    db: pg.ClientBase | pg.Pool = this.sql.pool,
  ): Promise<bigint[]> {
    const like = (path === '/' ? '' : escapeLike(path)) + '/%';
    const { rows } = await db.query<{ id: string }>(
      kind === 'object'
        ? `SELECT o.id FROM data_objects o WHERE o.trash_id = 0 AND o.collection_id IN
             (SELECT c.id FROM collections c WHERE c.trash_id = 0 AND (c.path = $1 OR c.path LIKE $2))`
        : `SELECT c.id FROM collections c WHERE c.trash_id = 0 AND c.path LIKE $2 AND c.path <> $1`,
      [path, like],
    );
    return rows.map((r) => BigInt(r.id));
  }

  async list(kind: EntryKind, id: bigint): Promise<TripleRecord[]> {
    const { rows } = await this.sql.query<TripleRow>(
      `SELECT ${TRIPLE_COLUMNS} FROM metadata_triples WHERE ${columnOf(kind)} = $1 ORDER BY attribute, id`,
      [id.toString()],
    );
    return rows.map(toRecord);
  }

  /** The triples of many entries of one kind, by entry id. */
  async listMany(kind: EntryKind, ids: bigint[]): Promise<Map<bigint, TripleRecord[]>> {
    const out = new Map<bigint, TripleRecord[]>();
    if (ids.length === 0) return out;
    const { rows } = await this.sql.query<TripleRow>(
      `SELECT ${TRIPLE_COLUMNS} FROM metadata_triples WHERE ${columnOf(kind)} = ANY($1::bigint[]) ORDER BY attribute, id`,
      [ids.map(String)],
    );
    for (const r of rows.map(toRecord)) out.set(r.targetId, [...(out.get(r.targetId) ?? []), r]);
    return out;
  }

  /** One triple with the path of what it is on (null when that is gone or in the trash). */
  async findOne(
    id: bigint,
    db: pg.ClientBase | pg.Pool = this.sql.pool,
  ): Promise<(TripleRecord & { path: string | null }) | null> {
    const { rows } = await db.query<TripleRow & { path: string | null }>(
      `SELECT t.id, t.object_id, t.collection_id, t.attribute, t.value_type, t.value, t.unit, t.updated_at,
              CASE WHEN t.object_id IS NOT NULL THEN
                (SELECT CASE WHEN c.path = '/' THEN '/' ELSE c.path || '/' END || o.name
                   FROM data_objects o JOIN collections c ON c.id = o.collection_id WHERE o.id = t.object_id AND o.trash_id = 0)
              ELSE (SELECT c.path FROM collections c WHERE c.id = t.collection_id AND c.trash_id = 0) END AS path
         FROM metadata_triples t WHERE t.id = $1 FOR UPDATE OF t`,
      [id.toString()],
    );
    const r = rows[0];
    return r ? { ...toRecord(r), path: r.path } : null;
  }

  async updateOne(
    db: pg.ClientBase,
    id: bigint,
    t: {
      attribute: string;
      type: MetadataValueType;
      value: string;
      num?: number;
      time?: string;
      unit: string | null;
    },
    by: bigint,
  ): Promise<TripleRecord> {
    const { rows } = await db.query<TripleRow>(
      `UPDATE metadata_triples SET attribute = $2, value_type = $3, value = $4, num = $5, time = $6, unit = $7,
              updated_at = now(), updated_by = $8
        WHERE id = $1 RETURNING ${TRIPLE_COLUMNS}`,
      [id.toString(), t.attribute, t.type, t.value, t.num ?? null, t.time ?? null, t.unit, by.toString()],
    );
    return toRecord(rows[0]!);
  }

  async deleteOne(db: pg.ClientBase, id: bigint): Promise<void> {
    await db.query('DELETE FROM metadata_triples WHERE id = $1', [id.toString()]);
  }

  /**
   * Removes matching triples from the targets; returns how many. Rows are found by index probes per
   * (target, match) and deleted by id through the primary key (`= ANY (ARRAY(...))`), so the plan
   * never scans the table whatever the planner estimates (the same for `set` below).
   */
  async remove(
    db: pg.ClientBase,
    kind: EntryKind,
    ids: bigint[],
    matches: TripleMatchRow[],
  ): Promise<number> {
    if (ids.length === 0 || matches.length === 0) return 0;
    const col = columnOf(kind);
    const { rowCount } = await db.query(
      `DELETE FROM metadata_triples WHERE id = ANY (ARRAY(
         SELECT t.id FROM unnest($1::bigint[]) AS e(id)
           CROSS JOIN unnest($2::text[], $3::text[], $4::text[], $5::bool[]) AS m(attr, val, unit, any_unit)
           CROSS JOIN LATERAL (
             SELECT t.id FROM metadata_triples t
              WHERE t.${col} = e.id AND t.attribute = m.attr AND (m.val IS NULL OR t.value = m.val)
                AND (m.any_unit OR t.unit IS NOT DISTINCT FROM m.unit) OFFSET 0) t))`,
      [
        ids.map(String),
        matches.map((m) => m.attribute),
        matches.map((m) => m.value),
        matches.map((m) => m.unit ?? null),
        matches.map((m) => m.unit === undefined),
      ],
    );
    return rowCount ?? 0;
  }

  /**
   * Adds triples, one row per (target, triple); a triple identical to one the target already has
   * (attribute, type, value, unit) is not added again. Returns how many were added. Targets with no
   * triple yet (all of them in a load) get theirs by COPY, which has nothing to compare them with;
   * the others by the statement that skips what is there (`insertNew`). The groups' pairs must be
   * distinct (the service's `distinctPairs`).
   */
  async add(db: pg.ClientBase, kind: EntryKind, groups: TripleGroup[], by: bigint): Promise<number> {
    const col = columnOf(kind);
    const nonEmpty = groups.filter((g) => g.triples.length > 0);
    const targets = [...new Set(nonEmpty.flatMap((g) => g.targets))];
    if (targets.length === 0) return 0;
    const { rows } = await db.query<{ id: string }>(
      `SELECT k.id FROM unnest($1::bigint[]) AS k(id)
        WHERE EXISTS (SELECT 1 FROM metadata_triples t WHERE t.${col} = k.id)`,
      [targets.map(String)],
    );
    const tagged = new Set(rows.map((r) => BigInt(r.id)));
    const fresh: TripleGroup[] = [];
    const known: TripleGroup[] = [];
    for (const g of nonEmpty) {
      const untagged = g.targets.filter((t) => !tagged.has(t));
      if (untagged.length) fresh.push({ targets: untagged, triples: g.triples });
      if (untagged.length < g.targets.length)
        known.push({ targets: g.targets.filter((t) => tagged.has(t)), triples: g.triples });
    }
    let added = fresh.length
      ? await copyRows(db, 'metadata_triples', [col, ...COPIED_COLUMNS], copied(fresh, by))
      : 0;
    const a = tripleColumns(known);
    if (a[0].length) added += (await db.query(insertNew(col), [...a, by.toString()])).rowCount ?? 0;
    return added;
  }

  /** Adds triples and returns them (the single-entry API). */
  async addReturning(
    db: pg.ClientBase,
    kind: EntryKind,
    target: bigint,
    triples: CheckedTriple[],
    by: bigint,
  ): Promise<TripleRecord[]> {
    const col = columnOf(kind);
    const a = tripleColumns([{ targets: [target], triples }]);
    const { rows } = await db.query<TripleRow>(insertNew(col, `RETURNING ${TRIPLE_COLUMNS}`), [
      ...a,
      by.toString(),
    ]);
    return rows.map(toRecord);
  }

  /**
   * Replaces the values of each (target, attribute) with the given ones. Values already there stay
   * as they are; the others are paired with the remaining old rows in order and those rows are
   * updated in place (same id, so a concurrent change at another site is an update conflict there),
   * surplus old rows are deleted and surplus new values inserted.
   */
  async set(
    db: pg.ClientBase,
    kind: EntryKind,
    groups: TripleGroup[],
    by: bigint,
  ): Promise<{ updated: number; removed: number; added: number }> {
    const a = tripleColumns(groups);
    if (a[0].length === 0) return { updated: 0, removed: 0, added: 0 };
    const col = columnOf(kind);
    const { rows: counts } = await db.query<{ updated: string; removed: string; added: string }>(
      `WITH r AS (
         SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::float8[], $6::timestamptz[], $7::text[])
                WITH ORDINALITY AS r(tid, attr, typ, val, num, tm, unit, ord)
       ), e AS (
         -- The current values, probed once per target for all its attributes (not a join over the
         -- whole table; one index search per target rather than per (target, attribute): a target's
         -- triples sit together in the index and mostly on one heap page).
         SELECT t.* FROM (SELECT r.tid, array_agg(DISTINCT r.attr) AS attrs FROM r GROUP BY r.tid) k CROSS JOIN LATERAL (
           SELECT t.id, t.${col} AS tid, t.attribute AS attr, t.value_type AS typ, t.value AS val, t.unit
             FROM metadata_triples t WHERE t.${col} = k.tid AND t.attribute = ANY (k.attrs) OFFSET 0) t
       ), old_rows AS (
         SELECT e.*, row_number() OVER (PARTITION BY e.tid, e.attr ORDER BY e.id) AS rn FROM e
          WHERE NOT EXISTS (SELECT 1 FROM r WHERE r.tid = e.tid AND r.attr = e.attr AND r.typ = e.typ AND r.val = e.val
                              AND r.unit IS NOT DISTINCT FROM e.unit)
       ), new_rows AS (
         SELECT r.*, row_number() OVER (PARTITION BY r.tid, r.attr ORDER BY r.ord) AS rn FROM r
          WHERE NOT EXISTS (SELECT 1 FROM e WHERE e.tid = r.tid AND e.attr = r.attr AND e.typ = r.typ AND e.val = r.val
                              AND e.unit IS NOT DISTINCT FROM r.unit)
       ), pairs AS MATERIALIZED (
         SELECT o.id, nr.typ, nr.val, nr.num, nr.tm, nr.unit
           FROM old_rows o JOIN new_rows nr ON nr.tid = o.tid AND nr.attr = o.attr AND nr.rn = o.rn
       ), upd AS (
         -- One primary-key probe per pair. (Not also \`id = ANY (ARRAY(...))\`: with both, the planner
         -- put the table inside a nested loop whose every loop sorted the whole array again, and a
         -- modify of 50,000 triples ran for minutes.)
         UPDATE metadata_triples t SET value_type = x.typ, value = x.val, num = x.num, time = x.tm, unit = x.unit,
                updated_at = now(), updated_by = $8
           FROM pairs x WHERE t.id = x.id
         RETURNING 1
       ), del AS (
         DELETE FROM metadata_triples t WHERE t.id = ANY (ARRAY(
           SELECT o.id FROM old_rows o
            WHERE NOT EXISTS (SELECT 1 FROM new_rows nr WHERE nr.tid = o.tid AND nr.attr = o.attr AND nr.rn = o.rn)))
         RETURNING 1
       ), ins AS (
         INSERT INTO metadata_triples (${col}, attribute, value_type, value, num, time, unit, created_by, updated_by)
         SELECT nr.tid, nr.attr, nr.typ, nr.val, nr.num, nr.tm, nr.unit, $8, $8 FROM new_rows nr
          WHERE NOT EXISTS (SELECT 1 FROM old_rows o WHERE o.tid = nr.tid AND o.attr = nr.attr AND o.rn = nr.rn)
         RETURNING 1
       )
       SELECT (SELECT count(*) FROM upd) AS updated, (SELECT count(*) FROM del) AS removed, (SELECT count(*) FROM ins) AS added`,
      [...a, by.toString()],
    );
    const c = counts[0]!;
    return { updated: Number(c.updated), removed: Number(c.removed), added: Number(c.added) };
  }
}

/** The columns COPY fills after the target's (`copied` gives them in this order). */
const COPIED_COLUMNS = [
  'attribute',
  'value_type',
  'value',
  'num',
  'time',
  'unit',
  'created_by',
  'updated_by',
];

/** The rows COPY sends for the groups: one per (target, triple). */
function* copied(groups: TripleGroup[], by: bigint): Generator<CopyValue[]> {
  for (const { targets, triples } of groups) {
    for (const target of targets) {
      for (const t of triples) {
        yield [target, t.attribute, t.type, t.value, t.num ?? null, t.time ?? null, t.unit, by, by];
      }
    }
  }
}

/**
 * The statements' arrays ($1..$7: target, attribute, type, value, number, time, unit), one element per
 * (target, triple) of each group, built directly from the groups (a bulk request's 100,000 pairs are
 * not made into objects first).
 */
function tripleColumns(
  groups: TripleGroup[],
): [string[], string[], string[], string[], (number | null)[], (string | null)[], (string | null)[]] {
  const tid: string[] = [];
  const attr: string[] = [];
  const typ: string[] = [];
  const val: string[] = [];
  const num: (number | null)[] = [];
  const tm: (string | null)[] = [];
  const unit: (string | null)[] = [];
  for (const { targets, triples } of groups) {
    for (const target of targets) {
      const id = target.toString();
      for (const triple of triples) {
        tid.push(id);
        attr.push(triple.attribute);
        typ.push(triple.type);
        val.push(triple.value);
        num.push(triple.num ?? null);
        tm.push(triple.time ?? null);
        unit.push(triple.unit);
      }
    }
  }
  return [tid, attr, typ, val, num, tm, unit];
}
