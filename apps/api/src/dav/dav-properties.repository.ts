import { Injectable } from '@nestjs/common';
import { inTransaction } from '@tributary/replication';
import { SqlPool } from '../database/sql-pool';

export type EntryKind = 'collection' | 'object';

/** A dead property as stored: its name and the property element, serialised. */
export interface DeadProperty {
  ns: string;
  name: string;
  value: string;
}

/** A PROPPATCH instruction, applied in document order. */
export type PropertyChange = { set: DeadProperty } | { remove: { ns: string; name: string } };

/** Most dead properties one entry may carry, and most bytes of one property's element. */
export const MAX_PROPERTIES_PER_ENTRY = 1000;
export const MAX_PROPERTY_BYTES = 64 * 1024;

const OWNER: Record<EntryKind, string> = { collection: 'collection_id', object: 'object_id' };

/** Thrown inside the transaction to roll it back. */
class TooManyProperties extends Error {}

/** WebDAV dead properties (table `dav_properties`, local to this site): plain SQL. */
@Injectable()
export class DavPropertiesRepository {
  constructor(private readonly sql: SqlPool) {}

  /** The dead properties of many entries of one kind, by entry id. */
  async list(kind: EntryKind, ids: bigint[]): Promise<Map<bigint, DeadProperty[]>> {
    const result = new Map<bigint, DeadProperty[]>();
    if (ids.length === 0) return result;
    const { rows } = await this.sql.query<{ id: string; namespace: string; name: string; value: string }>(
      `SELECT ${OWNER[kind]} AS id, namespace, name, value FROM dav_properties
        WHERE ${OWNER[kind]} = ANY($1::bigint[]) ORDER BY namespace, name`,
      [ids.map(String)],
    );
    for (const r of rows) {
      const id = BigInt(r.id);
      const list = result.get(id) ?? [];
      list.push({ ns: r.namespace, name: r.name, value: r.value });
      result.set(id, list);
    }
    return result;
  }

  /**
   * Applies the changes in order, all or none. Returns false (nothing changed) when the entry would
   * carry more than MAX_PROPERTIES_PER_ENTRY properties afterwards or is gone meanwhile.
   */
  async apply(kind: EntryKind, id: bigint, changes: PropertyChange[]): Promise<'ok' | 'too-many' | 'gone'> {
    return inTransaction(this.sql.pool, async (db) => {
      const table = kind === 'collection' ? 'collections' : 'data_objects';
      const live = await db.query(`SELECT 1 FROM ${table} WHERE id = $1 AND trash_id = 0 FOR SHARE`, [
        id.toString(),
      ]);
      if (live.rowCount === 0) return 'gone' as const;
      for (const change of changes) {
        if ('set' in change) {
          await db.query(
            `INSERT INTO dav_properties (${OWNER[kind]}, namespace, name, value) VALUES ($1, $2, $3, $4)
             ON CONFLICT (${OWNER[kind]}, namespace, name) WHERE ${OWNER[kind]} IS NOT NULL
             DO UPDATE SET value = EXCLUDED.value, updated_at = CURRENT_TIMESTAMP`,
            [id.toString(), change.set.ns, change.set.name, change.set.value],
          );
        } else {
          await db.query(
            `DELETE FROM dav_properties WHERE ${OWNER[kind]} = $1 AND namespace = $2 AND name = $3`,
            [id.toString(), change.remove.ns, change.remove.name],
          );
        }
      }
      const count = await db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM dav_properties WHERE ${OWNER[kind]} = $1`,
        [id.toString()],
      );
      if ((count.rows[0]?.n ?? 0) > MAX_PROPERTIES_PER_ENTRY) throw new TooManyProperties();
      return 'ok' as const;
    }).catch((err: unknown) => {
      if (err instanceof TooManyProperties) return 'too-many' as const;
      throw err;
    });
  }

  /** Copies an entry's dead properties to another entry (COPY), replacing any it had. */
  async copy(from: { kind: EntryKind; id: bigint }, to: { kind: EntryKind; id: bigint }): Promise<void> {
    await inTransaction(this.sql.pool, async (db) => {
      await db.query(`DELETE FROM dav_properties WHERE ${OWNER[to.kind]} = $1`, [to.id.toString()]);
      await db.query(
        `INSERT INTO dav_properties (${OWNER[to.kind]}, namespace, name, value)
         SELECT $2, namespace, name, value FROM dav_properties WHERE ${OWNER[from.kind]} = $1`,
        [from.id.toString(), to.id.toString()],
      );
    });
  }

  /** Bytes of the live objects a user owns (their `quota-used-bytes`). */
  async usedBytes(userId: bigint): Promise<bigint> {
    const { rows } = await this.sql.query<{ used: string | null }>(
      `SELECT sum(size)::text AS used FROM data_objects
        WHERE owner_id = $1 AND trash_id = 0 AND link_target IS NULL`,
      [userId.toString()],
    );
    return BigInt(rows[0]?.used ?? '0');
  }
}
