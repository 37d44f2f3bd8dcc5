import { Injectable } from '@nestjs/common';
import type { ConflictKind, ConflictPolicy } from '@tributary/shared';
import { inTransaction } from '@tributary/replication';
import type pg from 'pg';
import { SqlPool } from '../database/sql-pool';
import type { ConflictRow } from '../replication/catalog/conflict-rows';

/** A conflict record with where its record is now (namespace records) and its collection's path. */
export interface ConflictRecord extends ConflictRow {
  path: string | null;
  collection_path: string | null;
  /** The record's owner, for namespace records (involvement). */
  owner_id: string | null;
}

export interface ConflictFilter {
  kind?: ConflictKind;
  path?: string;
  site?: string;
  ids?: string[];
  /** SQL-side status: open (undecided, deadline or not), decided, or everything. */
  status: 'open' | 'decided' | 'all';
}

export interface PolicyRecord {
  id: string;
  collection_id: string;
  path: string;
  kind: ConflictKind;
  policy: ConflictPolicy;
  site: string | null;
  set_by: string | null;
  updated_at: Date;
}

/** A decision as a closed conflict records it: who or which policy made it, where, and what it chose. */
export interface DecisionRow {
  action: string;
  value: unknown;
  userId: bigint | null;
  username: string | null;
  policy: string | null;
  site: string;
}

/** Most records one listing looks at (conflicts are rare; a backlog this large needs an operator). */
export const MAX_SCANNED = 10_000;

/** Rows of `conflicts` with the current place of the record they are about. */
const SELECT_RECORDS = `
  SELECT to_jsonb(c) || jsonb_build_object(
           'path', COALESCE(oc.path || CASE WHEN oc.path = '/' THEN '' ELSE '/' END || o.name, col.path,
                            pc.path, po_c.path || CASE WHEN po_c.path = '/' THEN '' ELSE '/' END || po.name,
                            mc.path, mo_c.path || CASE WHEN mo_c.path = '/' THEN '' ELSE '/' END || mo.name),
           'collection_path', cc.path,
           'owner_id', COALESCE(o.owner_id, col.owner_id)::text) AS row
    FROM conflicts c
    LEFT JOIN data_objects o ON c.tbl = 'data_objects' AND o.id::text = c.row_key
    LEFT JOIN collections oc ON oc.id = o.collection_id
    LEFT JOIN collections col ON c.tbl = 'collections' AND col.id::text = c.row_key
    LEFT JOIN permissions pm ON c.tbl = 'permissions' AND pm.id::text = c.row_key
    LEFT JOIN collections pc ON pc.id = pm.collection_id
    LEFT JOIN data_objects po ON po.id = pm.object_id
    LEFT JOIN collections po_c ON po_c.id = po.collection_id
    LEFT JOIN metadata_triples mt ON c.tbl = 'metadata_triples' AND mt.id::text = c.row_key
    LEFT JOIN collections mc ON mc.id = mt.collection_id
    LEFT JOIN data_objects mo ON mo.id = mt.object_id
    LEFT JOIN collections mo_c ON mo_c.id = mo.collection_id
    LEFT JOIN collections cc ON cc.id = c.collection_id`;

@Injectable()
export class ConflictsRepository {
  constructor(private readonly sql: SqlPool) {}

  /** Matching records, newest first, at most MAX_SCANNED (visibility is checked by the service). */
  async find(filter: ConflictFilter): Promise<ConflictRecord[]> {
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (clause: string, value: unknown): void => {
      params.push(value);
      where.push(clause.replace('?', `$${params.length}`));
    };
    if (filter.kind) add('c.kind = ?', filter.kind);
    if (filter.status !== 'all') add('c.status = ?', filter.status);
    if (filter.site) add(`c.versions @> jsonb_build_array(jsonb_build_object('site', ?::text))`, filter.site);
    if (filter.ids) add('c.id = ANY(?::text[])', filter.ids);
    const res = await this.sql.pool.query<{ row: ConflictRecord }>(
      `SELECT row FROM (${SELECT_RECORDS} ${where.length ? `WHERE ${where.join(' AND ')}` : ''}) r
        ${filter.path && filter.path !== '/' ? `WHERE row ->> 'path' = $${params.length + 1} OR left(row ->> 'path', $${params.length + 2}) = $${params.length + 3}` : ''}
        ORDER BY row ->> 'opened_at' DESC, row ->> 'id' DESC LIMIT ${MAX_SCANNED}`,
      filter.path && filter.path !== '/'
        ? [...params, filter.path, filter.path.length + 1, filter.path + '/']
        : params,
    );
    return res.rows.map((r) => r.row);
  }

  async findOne(id: string, client?: pg.PoolClient): Promise<ConflictRecord | null> {
    const res = await (client ?? this.sql.pool).query<{ row: ConflictRecord }>(
      `${SELECT_RECORDS} WHERE c.id = $1`,
      [id],
    );
    return res.rows[0]?.row ?? null;
  }

  /** Runs `fn` in one transaction on one connection. */
  transaction<T>(fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    return inTransaction(this.sql.pool, fn);
  }

  /** Locks a conflict for a decision; its status as stored. */
  async lock(client: pg.PoolClient, id: string): Promise<string | null> {
    const res = await client.query<{ status: string }>(
      'SELECT status FROM conflicts WHERE id = $1 FOR UPDATE',
      [id],
    );
    return res.rows[0]?.status ?? null;
  }

  async markDecided(client: pg.PoolClient, id: string, decision: DecisionRow): Promise<void> {
    await client.query(
      `UPDATE conflicts SET status = 'decided', decision = $2, decided_value = $3, decided_by = $4,
              decided_by_name = $5, decided_policy = $6, decided_at = now(), decided_at_site = $7
        WHERE id = $1`,
      [
        id,
        decision.action,
        decision.value === undefined ? null : JSON.stringify(decision.value),
        decision.userId,
        decision.username,
        decision.policy,
        decision.site,
      ],
    );
  }

  /** The statements replication uses to write a row of `table` from its JSON form. */
  async rowStatements(
    client: pg.PoolClient,
    table: string,
  ): Promise<{ key_column: string; insert_sql: string; update_sql: string; delete_sql: string } | null> {
    const res = await client.query<{
      key_column: string;
      insert_sql: string;
      update_sql: string;
      delete_sql: string;
    }>('SELECT key_column, insert_sql, update_sql, delete_sql FROM repl_tables WHERE name = $1', [table]);
    return res.rows[0] ?? null;
  }

  /** The record's current row (as JSON), locked. */
  async currentRow(
    client: pg.PoolClient,
    table: string,
    key: string,
  ): Promise<Record<string, unknown> | null> {
    const statements = await this.rowStatements(client, table);
    if (!statements) return null;
    const res = await client.query<{ row: Record<string, unknown> }>(
      `SELECT to_jsonb(x) AS row FROM "${table.replace(/"/g, '""')}" x
        WHERE x."${statements.key_column.replace(/"/g, '""')}"::text = $1 FOR UPDATE`,
      [key],
    );
    return res.rows[0]?.row ?? null;
  }

  /** Writes a record's row as given (a chosen or merged version): updated, inserted back, or deleted. */
  async writeRow(
    client: pg.PoolClient,
    table: string,
    row: Record<string, unknown> | null,
    key: string,
    exists: boolean,
  ): Promise<void> {
    const statements = await this.rowStatements(client, table);
    if (!statements) throw new Error(`${table} is not a replicated table`);
    if (row === null) {
      await client.query(statements.delete_sql, [JSON.stringify({ [statements.key_column]: key })]);
      return;
    }
    await client.query(exists ? statements.update_sql : statements.insert_sql, [JSON.stringify(row)]);
    if (table === 'collections') await client.query('SELECT repl_fix_collection_path($1::bigint)', [key]);
  }

  /** Which of these records (keys by table) still exist. */
  async existing(byTable: ReadonlyMap<string, readonly string[]>): Promise<Set<string>> {
    const out = new Set<string>();
    for (const [table, keys] of byTable) {
      if (keys.length === 0) continue;
      const res = await this.sql.pool.query<{ key_column: string }>(
        'SELECT key_column FROM repl_tables WHERE name = $1',
        [table],
      );
      const column = res.rows[0]?.key_column;
      if (!column) continue;
      const found = await this.sql.pool.query<{ k: string }>(
        `SELECT x."${column.replace(/"/g, '""')}"::text AS k FROM "${table.replace(/"/g, '""')}" x
          WHERE x."${column.replace(/"/g, '""')}"::text = ANY($1::text[])`,
        [keys],
      );
      for (const r of found.rows) out.add(`${table}:${r.k}`);
    }
    return out;
  }

  /** Paths of collections (live or in the trash) and data objects, names of users and groups, by id. */
  async lookups(ids: {
    collections: string[];
    objects: string[];
    users: string[];
    groups: string[];
  }): Promise<{
    collections: Map<string, string>;
    objects: Map<string, string>;
    users: Map<string, string>;
    groups: Map<string, string>;
  }> {
    const numeric = (xs: string[]) => [...new Set(xs.filter((x) => /^\d{1,19}$/.test(x)))];
    const [collections, objects, users, groups] = await Promise.all([
      this.sql.pool.query<{ id: string; v: string }>(
        'SELECT id::text, path AS v FROM collections WHERE id = ANY($1::bigint[])',
        [numeric(ids.collections)],
      ),
      this.sql.pool.query<{ id: string; v: string }>(
        `SELECT o.id::text, c.path || CASE WHEN c.path = '/' THEN '' ELSE '/' END || o.name AS v
           FROM data_objects o JOIN collections c ON c.id = o.collection_id WHERE o.id = ANY($1::bigint[])`,
        [numeric(ids.objects)],
      ),
      this.sql.pool.query<{ id: string; v: string }>(
        'SELECT id::text, username AS v FROM users WHERE id = ANY($1::bigint[])',
        [numeric(ids.users)],
      ),
      this.sql.pool.query<{ id: string; v: string }>(
        'SELECT id::text, name AS v FROM project_groups WHERE id = ANY($1::bigint[])',
        [numeric(ids.groups)],
      ),
    ]);
    const map = (r: { rows: Array<{ id: string; v: string }> }) => new Map(r.rows.map((x) => [x.id, x.v]));
    return { collections: map(collections), objects: map(objects), users: map(users), groups: map(groups) };
  }

  /**
   * Every record created under a contested name in one scope (a same-name contest): the keepers and
   * the renamed of every same-name record on that name, decided or not, as each is now.
   */
  async contenders(
    table: string,
    name: string,
    collectionId: string | null,
  ): Promise<
    Array<{
      key: string;
      kept: boolean;
      site: string;
      stamp: number;
      by: string | null;
      current: {
        name: string;
        path: string | null;
        size: string | null;
        checksum: string | null;
        trash_id: string;
      } | null;
    }>
  > {
    const res = await this.sql.pool.query<{
      detail: { kept?: string };
      versions: Array<{ key?: string; site: string; stamp: number | string; by?: string | null }>;
    }>(
      `SELECT detail, versions FROM conflicts
        WHERE kind = 'same-name' AND tbl = $1 AND detail ->> 'name' = $2
          AND collection_id IS NOT DISTINCT FROM $3::bigint
        ORDER BY id LIMIT 1000`,
      [table, name, collectionId],
    );
    const byKey = new Map<string, { kept: boolean; site: string; stamp: number; by: string | null }>();
    for (const row of res.rows) {
      const kept = row.detail.kept ?? '';
      for (const v of row.versions) {
        const key = v.key ?? '';
        if (key === '' || byKey.has(key)) continue;
        byKey.set(key, {
          kept: key === kept,
          site: v.site,
          stamp: Number(v.stamp),
          by: v.by ?? null,
        });
      }
    }
    const keys = [...byKey.keys()].filter((k) => /^\d{1,19}$/.test(k));
    const current = new Map<
      string,
      { name: string; path: string | null; size: string | null; checksum: string | null; trash_id: string }
    >();
    if (keys.length > 0 && (table === 'data_objects' || table === 'collections')) {
      const rows = await this.sql.pool.query<{
        id: string;
        name: string;
        path: string | null;
        size: string | null;
        checksum: string | null;
        trash_id: string;
      }>(
        table === 'data_objects'
          ? `SELECT o.id::text, o.name, c.path || CASE WHEN c.path = '/' THEN '' ELSE '/' END || o.name AS path,
                    o.size::text, o.checksum, o.trash_id::text
               FROM data_objects o JOIN collections c ON c.id = o.collection_id WHERE o.id = ANY($1::bigint[])`
          : `SELECT id::text, name, path, NULL AS size, NULL AS checksum, trash_id::text
               FROM collections WHERE id = ANY($1::bigint[])`,
        [keys],
      );
      for (const r of rows.rows) current.set(r.id, r);
    } else if (keys.length > 0 && (table === 'users' || table === 'project_groups')) {
      const rows = await this.sql.pool.query<{ id: string; name: string }>(
        table === 'users'
          ? 'SELECT id::text, username AS name FROM users WHERE id = ANY($1::bigint[])'
          : 'SELECT id::text, name FROM project_groups WHERE id = ANY($1::bigint[])',
        [keys],
      );
      for (const r of rows.rows)
        current.set(r.id, { name: r.name, path: null, size: null, checksum: null, trash_id: '0' });
    }
    return [...byKey.entries()].map(([key, v]) => ({ key, ...v, current: current.get(key) ?? null }));
  }

  async usernames(ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const res = await this.sql.pool.query<{ id: string; username: string }>(
      'SELECT id::text, username FROM users WHERE id = ANY($1::bigint[])',
      [ids],
    );
    return new Map(res.rows.map((r) => [r.id, r.username]));
  }

  /** Groups the user manages. */
  async managedGroups(userId: bigint): Promise<Set<string>> {
    const res = await this.sql.pool.query<{ group_id: string }>(
      `SELECT group_id::text FROM memberships WHERE user_id = $1 AND role = 'manager'`,
      [userId],
    );
    return new Set(res.rows.map((r) => r.group_id));
  }

  async collectionId(path: string): Promise<string | null> {
    const res = await this.sql.pool.query<{ id: string }>(
      'SELECT id::text FROM collections WHERE path = $1 AND trash_id = 0',
      [path],
    );
    return res.rows[0]?.id ?? null;
  }

  async policies(path: string, kind?: ConflictKind): Promise<PolicyRecord[]> {
    const res = await this.sql.pool.query<PolicyRecord>(
      `SELECT p.id::text, p.collection_id::text, c.path, p.kind, p.policy, p.site, u.username AS set_by, p.updated_at
         FROM conflict_policies p JOIN collections c ON c.id = p.collection_id
         LEFT JOIN users u ON u.id = COALESCE(p.updated_by, p.created_by)
        WHERE (c.path = $1 OR left(c.path, length($1) + 1) = $1 || '/' OR $1 = '/')
          AND ($2::text IS NULL OR p.kind = $2)
        ORDER BY c.path, p.kind`,
      [path, kind ?? null],
    );
    return res.rows;
  }

  /** The policy that applies at `path` for `kind`: the one set on the nearest collection at or above it. */
  async policyFor(path: string, kind: ConflictKind): Promise<PolicyRecord | null> {
    const res = await this.sql.pool.query<PolicyRecord>(
      `SELECT p.id::text, p.collection_id::text, c.path, p.kind, p.policy, p.site, NULL AS set_by, p.updated_at
         FROM conflict_policies p JOIN collections c ON c.id = p.collection_id
        WHERE p.kind = $2 AND c.trash_id = 0
          AND (c.path = $1 OR c.path = '/' OR left($1, length(c.path) + 1) = c.path || '/')
        ORDER BY length(c.path) DESC LIMIT 1`,
      [path, kind],
    );
    return res.rows[0] ?? null;
  }

  async setPolicy(
    collectionId: string,
    kind: ConflictKind,
    policy: ConflictPolicy,
    site: string | null,
    by: bigint,
  ): Promise<void> {
    await this.sql.pool.query(
      `INSERT INTO conflict_policies (collection_id, kind, policy, site, created_by, updated_by, updated_at)
       VALUES ($1, $2, $3, $4, $5, $5, now())
       ON CONFLICT (collection_id, kind) DO UPDATE
         SET policy = EXCLUDED.policy, site = EXCLUDED.site, updated_by = EXCLUDED.updated_by, updated_at = now()`,
      [collectionId, kind, policy, site, by],
    );
  }

  async deletePolicy(collectionId: string, kind: ConflictKind): Promise<boolean> {
    const res = await this.sql.pool.query(
      'DELETE FROM conflict_policies WHERE collection_id = $1 AND kind = $2',
      [collectionId, kind],
    );
    return (res.rowCount ?? 0) > 0;
  }
}
