import { Injectable } from '@nestjs/common';
import type pg from 'pg';
import { SqlPool } from '../database/sql-pool';

export interface UploadTarget {
  collectionId: bigint;
  /** What already has the name in that collection, if anything. */
  existing: 'collection' | 'object' | null;
}

export interface NewObject {
  collectionId: bigint;
  name: string;
  size: bigint;
  checksum: string;
  contentType: string;
  ownerId: bigint;
  groupId: bigint | null;
}

export interface InsertedObject {
  id: bigint;
  createdAt: Date;
  updatedAt: Date;
}

/**
 * The ingest hot path in plain SQL on the shared pool: a new object costs one lookup and one short
 * transaction. Everything else (overwrites, listings) goes through Prisma.
 */
@Injectable()
export class IngestRepository {
  constructor(private readonly sql: SqlPool) {}

  async target(parentPath: string, name: string): Promise<UploadTarget | null> {
    const { rows } = await this.sql.query<{ id: string; existing: 'collection' | 'object' | null }>(
      `SELECT c.id,
              (SELECT 'collection' FROM collections k WHERE k.parent_id = c.id AND k.trash_id = 0 AND k.name = $2
               UNION ALL
               SELECT 'object' FROM data_objects o WHERE o.collection_id = c.id AND o.trash_id = 0 AND o.name = $2
               LIMIT 1) AS existing
         FROM collections c WHERE c.path = $1 AND c.trash_id = 0`,
      [parentPath, name],
    );
    const r = rows[0];
    return r ? { collectionId: BigInt(r.id), existing: r.existing } : null;
  }

  /**
   * Inserts the object and, through `placeBytes` (which receives the new id and moves the bytes
   * into place), its replica, in one transaction. Returns null when the name was taken meanwhile.
   */
  async insert(
    object: NewObject,
    placeBytes: (id: bigint) => Promise<{ siteId: string; resourceId: bigint; key: string }>,
  ): Promise<InsertedObject | null> {
    return this.sql.transaction(async (client) => {
      await lockName(client, object.collectionId, object.name);
      const clash = await client.query(
        'SELECT 1 FROM collections WHERE parent_id = $1 AND trash_id = 0 AND name = $2',
        [object.collectionId.toString(), object.name],
      );
      if (clash.rowCount) return null;
      const inserted = await client.query<{ id: string; created_at: Date; updated_at: Date }>(
        `INSERT INTO data_objects (collection_id, name, size, checksum, content_type, owner_id, group_id, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $6)
         ON CONFLICT (collection_id, trash_id, name) DO NOTHING
         RETURNING id, created_at, updated_at`,
        [
          object.collectionId.toString(),
          object.name,
          object.size.toString(),
          object.checksum,
          object.contentType,
          object.ownerId.toString(),
          object.groupId?.toString() ?? null,
        ],
      );
      const row = inserted.rows[0];
      if (!row) return null;
      const id = BigInt(row.id);
      const replica = await placeBytes(id);
      await client.query(
        `INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, created_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          row.id,
          replica.siteId,
          replica.resourceId.toString(),
          replica.key,
          object.size.toString(),
          object.checksum,
          object.ownerId.toString(),
        ],
      );
      return { id, createdAt: row.created_at, updatedAt: row.updated_at };
    });
  }
}

/**
 * Serialises everything that gives a name to an entry of one collection (uploads, new collections,
 * moves and restores into it), so a collection and an object can never end up with the same name.
 * Only entries with the same parent and name wait for each other.
 */
export async function lockName(client: pg.ClientBase, collectionId: bigint, name: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))', [
    collectionId.toString(),
    name,
  ]);
}

/** The same lock, as one SQL statement for callers inside a Prisma transaction. */
export const LOCK_NAME_SQL = 'SELECT pg_advisory_xact_lock(hashtext($1), hashtext($2))';
