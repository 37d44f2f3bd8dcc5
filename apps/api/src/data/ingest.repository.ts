import { Injectable } from '@nestjs/common';
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
  /** The file time; absent: now. */
  mtimeNs?: bigint;
  /** The permission bits; absent: 0o644. */
  mode?: number;
}

export interface InsertedObject {
  id: bigint;
  createdAt: Date;
  updatedAt: Date;
  mtimeNs: bigint;
  mode: number;
}

/**
 * The ingest hot path in plain SQL on the shared pool: a new object costs one lookup and one call. Everything else (overwrites, listings) goes through Prisma.
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
   * Records the object and its replica (bytes already in place under `replica.key`) in one round
   * trip: the `catalog_ingest_object` function of the migrations. Says why when it did not (the
   * name was taken or the collection deleted meanwhile).
   */
  async insert(
    object: NewObject,
    replica: { siteId: string; resourceId: bigint; key: string },
  ): Promise<InsertedObject | 'name-taken' | 'parent-gone'> {
    const { rows } = await this.sql.query<{
      status: 'created' | 'name-taken' | 'parent-gone';
      id: string | null;
      created_at: Date | null;
      updated_at: Date | null;
      mtime_ns: string | null;
      mode: number | null;
    }>(
      'SELECT status, id, created_at, updated_at, mtime_ns, mode FROM catalog_ingest_object($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)',
      [
        object.collectionId.toString(),
        object.name,
        object.size.toString(),
        object.checksum,
        object.contentType,
        object.ownerId.toString(),
        object.groupId?.toString() ?? null,
        replica.siteId,
        replica.resourceId.toString(),
        replica.key,
        object.mtimeNs?.toString() ?? null,
        object.mode ?? null,
      ],
    );
    const row = rows[0];
    if (row?.status !== 'created') return row?.status === 'parent-gone' ? 'parent-gone' : 'name-taken';
    return {
      id: BigInt(row.id!),
      createdAt: row.created_at!,
      updatedAt: row.updated_at!,
      mtimeNs: BigInt(row.mtime_ns!),
      mode: row.mode!,
    };
  }

  /**
   * Records many new objects of one collection and their replicas, all or nothing, in one round
   * trip (`catalog_ingest_objects` of the migrations).
   */
  async insertMany(
    collectionId: bigint,
    objects: { name: string; size: bigint; checksum: string; contentType: string; key: string }[],
    owner: { ownerId: bigint; groupId: bigint | null },
    replica: { siteId: string; resourceId: bigint },
  ): Promise<BatchResult> {
    const { rows } = await this.sql.query<{
      status: 'created' | 'name-taken' | 'parent-gone';
      name: string | null;
      id: string | null;
      created_at: Date | null;
      mtime_ns: string | null;
      mode: number | null;
    }>(
      'SELECT status, name, id, created_at, mtime_ns, mode FROM catalog_ingest_objects($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)',
      [
        collectionId.toString(),
        objects.map((o) => o.name),
        objects.map((o) => o.size.toString()),
        objects.map((o) => o.checksum),
        objects.map((o) => o.contentType),
        owner.ownerId.toString(),
        owner.groupId?.toString() ?? null,
        replica.siteId,
        replica.resourceId.toString(),
        objects.map((o) => o.key),
      ],
    );
    if (rows.some((r) => r.status === 'parent-gone')) return { parentGone: true };
    if (rows.some((r) => r.status === 'name-taken')) return { taken: rows.map((r) => r.name!) };
    return {
      inserted: new Map(
        rows.map((r) => [
          r.name!,
          {
            id: BigInt(r.id!),
            createdAt: r.created_at!,
            updatedAt: r.created_at!,
            mtimeNs: BigInt(r.mtime_ns!),
            mode: r.mode!,
          },
        ]),
      ),
    };
  }
}

export interface BatchResult {
  /** Set when every name was free: the new objects by name. */
  inserted?: Map<string, InsertedObject>;
  /** Set when some names were taken: those names; nothing was inserted. */
  taken?: string[];
  /** Set when the collection was deleted meanwhile; nothing was inserted. */
  parentGone?: boolean;
}
