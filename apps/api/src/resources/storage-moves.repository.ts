import { Injectable, Logger } from '@nestjs/common';
import { SqlPool } from '../database/sql-pool';
import { SqlParams } from '../metadata/query-compiler';
import { ruleConditionSql } from '../placement/rule-condition';

export interface MoveRow {
  id: bigint;
  collectionId: bigint;
  path: string;
  resourceId: bigint;
  resource: string;
  status: 'running' | 'done' | 'failed';
  objectsTotal: number;
  objectsMoved: number;
  bytesTotal: number;
  bytesMoved: number;
  error: string | null;
  createdAt: Date;
  finishedAt: Date | null;
}

/** A copy of this site still to move: its row, where its bytes are, what they must hash to. */
export interface CopyToMove {
  replicaId: bigint;
  objectId: bigint;
  resourceId: bigint;
  key: string;
  size: number;
  checksum: string;
}

/** The good copies of this site under the collection (at any depth) not yet on the resource. */
const PENDING = `
  WITH RECURSIVE sub AS (
    SELECT id FROM collections WHERE id = $1
    UNION ALL
    SELECT c.id FROM collections c JOIN sub ON c.parent_id = sub.id
  )
  SELECT r.id::text AS replica_id, r.object_id::text AS object_id, r.resource_id::text AS resource_id,
         r.physical_path, r.size::text AS size, r.checksum
    FROM replicas r JOIN data_objects o ON o.id = r.object_id
   WHERE o.collection_id IN (SELECT id FROM sub) AND r.site_id = $2 AND r.resource_id <> $3
     AND r.status = 'good'`;

const MOVE_SELECT = `
  SELECT m.id::text, m.collection_id::text, m.path, m.resource_id::text, s.name AS resource, m.status,
         m.objects_total, m.objects_moved, m.bytes_total::text, m.bytes_moved::text, m.error,
         m.created_at, m.finished_at
    FROM storage_moves m JOIN storage_resources s ON s.id = m.resource_id`;

interface MoveSqlRow {
  id: string;
  collection_id: string;
  path: string;
  resource_id: string;
  resource: string;
  status: MoveRow['status'];
  objects_total: number;
  objects_moved: number;
  bytes_total: string;
  bytes_moved: string;
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
}

const toMove = (r: MoveSqlRow): MoveRow => ({
  id: BigInt(r.id),
  collectionId: BigInt(r.collection_id),
  path: r.path,
  resourceId: BigInt(r.resource_id),
  resource: r.resource,
  status: r.status,
  objectsTotal: r.objects_total,
  objectsMoved: r.objects_moved,
  bytesTotal: Number(r.bytes_total),
  bytesMoved: Number(r.bytes_moved),
  error: r.error,
  createdAt: r.created_at,
  finishedAt: r.finished_at,
});

/** A copy row as the queries of copies to move select it. */
interface CopySqlRow {
  replica_id: string;
  object_id: string;
  resource_id: string;
  physical_path: string;
  size: string;
  checksum: string;
}

const toCopy = (r: CopySqlRow): CopyToMove => ({
  replicaId: BigInt(r.replica_id),
  objectId: BigInt(r.object_id),
  resourceId: BigInt(r.resource_id),
  key: r.physical_path,
  size: Number(r.size),
  checksum: r.checksum,
});

/** A copy of this site a placement rule wants on another of the site's resources. */
export interface MisplacedCopy extends CopyToMove {
  /** The resource the rule names for this site. */
  targetId: bigint;
  ruleId: string;
}

/** A live rule of copies that names a resource for this site. */
interface ResourceRule {
  id: string;
  collection_id: string;
  condition: string | null;
  resource_id: string;
}

/**
 * storage_moves (migration 20261129010000_storage_moves) and the copy rows a move changes. Plain
 * SQL: a move switches each copy under the object's row lock, with its old bytes left to the
 * storage garbage sweep in the same transaction.
 */
@Injectable()
export class StorageMovesRepository {
  private readonly logger = new Logger('StorageMoves');

  constructor(private readonly sql: SqlPool) {}

  /**
   * This site's good copies that live placement rules want on another of its resources
   * (placement_rules.resources names this site; docs/storage.md, "Rules naming resources"), up to
   * `limit`. An object several such rules cover goes where the one with the lowest id says.
   */
  async misplaced(siteId: string, limit: number): Promise<MisplacedCopy[]> {
    const rules = await this.sql.query<ResourceRule>(
      `SELECT r.id::text, r.collection_id::text, r.condition, s.id::text AS resource_id
         FROM placement_rules r
         JOIN collections c ON c.id = r.collection_id
         CROSS JOIN LATERAL jsonb_to_recordset(r.resources) AS x(site text, resource text)
         JOIN storage_resources s ON s.site_id = x.site AND s.name = x.resource
        WHERE r.resources IS NOT NULL AND x.site = $1 AND c.trash_id = 0 AND r.erasure_k IS NULL
          AND (r.expires_at IS NULL OR r.expires_at > now())
        ORDER BY r.id`,
      [siteId],
    );
    const decided = new Map<string, MisplacedCopy | null>();
    for (const rule of rules.rows) {
      const params = new SqlParams();
      params.add(rule.collection_id); // $1: the rule's collection
      const me = params.add(siteId);
      const where = ruleConditionSql(rule, params, 'o.id', this.logger);
      if (where === null) continue;
      const res = await this.sql.pool.query<CopySqlRow>(
        `WITH RECURSIVE tree AS (
           SELECT c.id FROM collections c WHERE c.id = $1 AND c.trash_id = 0
           UNION ALL
           SELECT k.id FROM collections k JOIN tree t ON k.parent_id = t.id WHERE k.trash_id = 0
         )
         SELECT r.id::text AS replica_id, o.id::text AS object_id, r.resource_id::text AS resource_id,
                r.physical_path, r.size::text AS size, r.checksum
           FROM data_objects o JOIN tree t ON o.collection_id = t.id
           JOIN replicas r ON r.object_id = o.id AND r.site_id = ${me} AND r.status = 'good'
          WHERE o.trash_id = 0 AND o.link_target IS NULL AND ${where}
          ORDER BY r.id
          LIMIT 10000`,
        params.values,
      );
      for (const r of res.rows) {
        if (decided.has(r.object_id)) continue;
        decided.set(
          r.object_id,
          r.resource_id === rule.resource_id
            ? null
            : { ...toCopy(r), targetId: BigInt(rule.resource_id), ruleId: rule.id },
        );
      }
    }
    return [...decided.values()].filter((c): c is MisplacedCopy => c !== null).slice(0, limit);
  }

  /** Records a move with what there is to move now. */
  async create(
    collectionId: bigint,
    path: string,
    siteId: string,
    resourceId: bigint,
    createdBy: bigint,
  ): Promise<MoveRow> {
    const res = await this.sql.query<{ id: string }>(
      `WITH todo AS (${PENDING})
       INSERT INTO storage_moves (collection_id, path, resource_id, objects_total, bytes_total, created_by)
       SELECT $1, $4, $3, count(*), COALESCE(sum(size::bigint), 0), $5 FROM todo
       RETURNING id::text`,
      [collectionId.toString(), siteId, resourceId.toString(), path, createdBy.toString()],
    );
    return (await this.get(BigInt(res.rows[0]!.id)))!;
  }

  async get(id: bigint): Promise<MoveRow | null> {
    const res = await this.sql.query<MoveSqlRow>(`${MOVE_SELECT} WHERE m.id = $1`, [id.toString()]);
    return res.rows[0] ? toMove(res.rows[0]) : null;
  }

  async list(limit: number): Promise<MoveRow[]> {
    const res = await this.sql.query<MoveSqlRow>(`${MOVE_SELECT} ORDER BY m.id DESC LIMIT $1`, [limit]);
    return res.rows.map(toMove);
  }

  async running(): Promise<MoveRow[]> {
    const res = await this.sql.query<MoveSqlRow>(`${MOVE_SELECT} WHERE m.status = 'running' ORDER BY m.id`);
    return res.rows.map(toMove);
  }

  /** Up to `limit` copies still to move (by row id: the order is the same after a restart). */
  async pending(move: MoveRow, siteId: string, limit: number): Promise<CopyToMove[]> {
    const res = await this.sql.query<CopySqlRow>(`${PENDING} ORDER BY r.id LIMIT $4`, [
      move.collectionId.toString(),
      siteId,
      move.resourceId.toString(),
      limit,
    ]);
    return res.rows.map(toCopy);
  }

  /**
   * Points the copy at its bytes on the new resource, under the object's row lock and only if it
   * still names the bytes that were copied (same resource, key and checksum: an update or a purge
   * meanwhile wins); the old key goes to storage_garbage in the same transaction and the move's
   * progress is counted. Resolves false when the copy changed meanwhile.
   */
  async switchCopy(
    moveId: bigint | null,
    copy: CopyToMove,
    target: bigint,
    newKey: string,
  ): Promise<boolean> {
    const client = await this.sql.pool.connect();
    try {
      await client.query('BEGIN');
      await client.query('SELECT 1 FROM data_objects WHERE id = $1 FOR UPDATE', [copy.objectId.toString()]);
      const updated = await client.query(
        `UPDATE replicas SET resource_id = $2, physical_path = $3, updated_at = now()
          WHERE id = $1 AND resource_id = $4 AND physical_path = $5 AND checksum = $6 AND status = 'good'`,
        [
          copy.replicaId.toString(),
          target.toString(),
          newKey,
          copy.resourceId.toString(),
          copy.key,
          copy.checksum,
        ],
      );
      if (updated.rowCount !== 1) {
        await client.query('ROLLBACK');
        return false;
      }
      await client.query(
        `INSERT INTO storage_garbage (resource_id, key, object_id) VALUES ($1, $2, $3)
         ON CONFLICT (resource_id, key) DO NOTHING`,
        [copy.resourceId.toString(), copy.key, copy.objectId.toString()],
      );
      if (moveId !== null) {
        await client.query(
          `UPDATE storage_moves SET objects_moved = objects_moved + 1, bytes_moved = bytes_moved + $2,
                  updated_at = now() WHERE id = $1`,
          [moveId.toString(), copy.size],
        );
      }
      await client.query('COMMIT');
      return true;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * Takes `key` out of the resource's storage garbage before bytes are written under it again
   * there; waits for a sweep that holds it (which removes the old file first).
   */
  async reclaim(resourceId: bigint, key: string): Promise<void> {
    await this.sql.query('DELETE FROM storage_garbage WHERE resource_id = $1 AND key = $2', [
      resourceId.toString(),
      key,
    ]);
  }

  /** Leaves `key` on the resource to the storage garbage sweep. */
  async garbage(resourceId: bigint, key: string, objectId: bigint): Promise<void> {
    await this.sql.query(
      `INSERT INTO storage_garbage (resource_id, key, object_id) VALUES ($1, $2, $3)
       ON CONFLICT (resource_id, key) DO NOTHING`,
      [resourceId.toString(), key, objectId.toString()],
    );
  }

  /** Whether the copy row still names the bytes a move is copying (resource, key, checksum, good). */
  async stillCurrent(copy: CopyToMove): Promise<boolean> {
    const res = await this.sql.query(
      `SELECT 1 FROM replicas
        WHERE id = $1 AND resource_id = $2 AND physical_path = $3 AND checksum = $4 AND status = 'good'`,
      [copy.replicaId.toString(), copy.resourceId.toString(), copy.key, copy.checksum],
    );
    return (res.rowCount ?? 0) > 0;
  }

  /** Whether a copy row of this site names `key` on the resource `resourceId`. */
  async names(siteId: string, resourceId: bigint, key: string): Promise<boolean> {
    const res = await this.sql.query(
      'SELECT 1 FROM replicas WHERE site_id = $1 AND resource_id = $2 AND physical_path = $3 LIMIT 1',
      [siteId, resourceId.toString(), key],
    );
    return (res.rowCount ?? 0) > 0;
  }

  async finish(id: bigint, status: 'done' | 'failed', error: string | null): Promise<void> {
    await this.sql.query(
      `UPDATE storage_moves SET status = $2, error = $3, finished_at = now(), updated_at = now() WHERE id = $1`,
      [id.toString(), status, error],
    );
  }

  async noteError(id: bigint, error: string): Promise<void> {
    await this.sql.query(`UPDATE storage_moves SET error = $2, updated_at = now() WHERE id = $1`, [
      id.toString(),
      error,
    ]);
  }
}
