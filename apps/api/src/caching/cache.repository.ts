import { Injectable } from '@nestjs/common';
import type { CopyState } from '@tributary/shared';
import { SqlPool } from '../database/sql-pool';

/** The object path of `o` (joined with its collection `c`). */
const OBJECT_PATH = `CASE WHEN c.path = '/' THEN '/' || o.name ELSE c.path || '/' || o.name END`;

/** What a path names for the cache: a live collection (everything below it) or one live object. */
export type CacheScope = { kind: 'collection'; id: string } | { kind: 'object'; id: string };

/**
 * `scope(id, size, checksum)`: the live objects with bytes that `scope` names ($1 its id), symbolic
 * links left out; below a collection through its live sub-collections.
 */
function scopeSql(scope: CacheScope): string {
  if (scope.kind === 'object')
    return `WITH scope AS (SELECT o.id, o.size, o.checksum FROM data_objects o
                            WHERE o.id = $1 AND o.trash_id = 0 AND o.link_target IS NULL)`;
  return `WITH RECURSIVE tree AS (
      SELECT c.id FROM collections c WHERE c.id = $1 AND c.trash_id = 0
      UNION ALL
      SELECT k.id FROM collections k JOIN tree t ON k.parent_id = t.id WHERE k.trash_id = 0
    ),
    scope AS (SELECT o.id, o.size, o.checksum FROM data_objects o JOIN tree t ON o.collection_id = t.id
               WHERE o.trash_id = 0 AND o.link_target IS NULL)`;
}

/** A cached copy eviction may take: good, current, not pinned. */
export interface EvictionCandidate {
  replicaId: string;
  objectId: string;
  path: string;
  size: number;
  checksum: string;
  /** Other sites with a good copy of the current bytes (in this site's view). */
  goodAt: string[];
}

export interface CacheUsage {
  bytes: number;
  pinnedBytes: number;
  copies: number;
}

/** The outcome of recording a fault-in. */
export type FaultInOutcome = { done: true; previousKey: string | null } | { done: false; reason: string };

export interface CacheEntryRow {
  path: string;
  size: number;
  state: CopyState;
  current: boolean;
  pinned: boolean;
  lastReadAt: Date | null;
}

export interface StageCounts {
  objects: number;
  bytes: number;
  readyObjects: number;
  readyBytes: number;
  pendingObjects: number;
  failedObjects: number;
}

/** Failed background fills of a cached copy given up after this many attempts (about 13 minutes). */
export const CACHE_FILL_ATTEMPTS = 10;

/**
 * The cache's SQL (docs/caching.md): cached copies are `replicas` rows with `cached` set; their
 * states are the mover's, `last_read_at` is a local column (reads are not catalog changes).
 */
@Injectable()
export class CacheRepository {
  constructor(private readonly sql: SqlPool) {}

  /** Bytes of this site's cached copies that hold or will hold bytes (good, pending, copying). */
  async usage(siteId: string): Promise<CacheUsage> {
    const { rows } = await this.sql.query<{ bytes: string; pinned: string; copies: number }>(
      `SELECT COALESCE(sum(size), 0)::text AS bytes,
              COALESCE(sum(size) FILTER (WHERE pinned), 0)::text AS pinned, count(*)::int AS copies
         FROM replicas WHERE site_id = $1 AND cached AND status IN ('good', 'pending', 'copying')`,
      [siteId],
    );
    const r = rows[0]!;
    return { bytes: Number(r.bytes), pinnedBytes: Number(r.pinned), copies: r.copies };
  }

  /**
   * Records bytes faulted in (already verified against `checksum`): under the object's lock, only if
   * the object is live with that checksum and size; this site's row for the object becomes good with
   * the new key (a new cached row when there is none; a row already there keeps its kind). `place`
   * puts the file under its key inside the transaction.
   */
  async commitFaultIn(
    copy: {
      siteId: string;
      resourceId: bigint;
      objectId: string;
      key: string;
      size: number;
      checksum: string;
    },
    place: () => Promise<void>,
  ): Promise<FaultInOutcome> {
    return this.sql.transaction(async (client) => {
      const object = await client.query<{ checksum: string; size: string }>(
        `SELECT checksum, size::text FROM data_objects
          WHERE id = $1 AND trash_id = 0 AND link_target IS NULL FOR UPDATE`,
        [copy.objectId],
      );
      const o = object.rows[0];
      if (!o) return { done: false, reason: 'the object is gone' };
      if (o.checksum !== copy.checksum || Number(o.size) !== copy.size)
        return { done: false, reason: 'the object changed during the read' };
      const row = await client.query<{
        id: string;
        physical_path: string;
        status: CopyState;
        checksum: string;
      }>(
        `SELECT id::text, physical_path, status::text AS status, checksum FROM replicas
          WHERE object_id = $1 AND site_id = $2 FOR UPDATE`,
        [copy.objectId, copy.siteId],
      );
      const r = row.rows[0];
      if (r?.status === 'good' && r.checksum === copy.checksum)
        return { done: false, reason: 'this site holds the bytes already' };
      await place();
      if (r) {
        await client.query(
          `UPDATE replicas SET status = 'good', physical_path = $2, size = $3, checksum = $4, verified_at = now(),
                  error = NULL, attempts = 0, next_attempt_at = NULL, last_read_at = now(), updated_at = now()
            WHERE id = $1`,
          [r.id, copy.key, copy.size, copy.checksum],
        );
        return { done: true, previousKey: r.physical_path || null };
      }
      await client.query(
        `INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, status,
                               verified_at, cached, last_read_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'good', now(), true, now())`,
        [copy.objectId, copy.siteId, copy.resourceId.toString(), copy.key, copy.size, copy.checksum],
      );
      return { done: true, previousKey: null };
    });
  }

  /** Marks these objects' cached copies here as read now (the eviction's order). */
  async touch(siteId: string, objectIds: readonly string[]): Promise<void> {
    if (!objectIds.length) return;
    await this.sql.query(
      `UPDATE replicas SET last_read_at = now()
        WHERE site_id = $1 AND object_id = ANY($2::bigint[]) AND cached`,
      [siteId, objectIds],
    );
  }

  /**
   * A `pending` cached row here for each object of `scope` that has no row here (the mover brings
   * the bytes); with `pin`, this site's cached rows of the scope are pinned too. Resolves with the
   * rows added.
   */
  async request(siteId: string, resourceId: bigint, scope: CacheScope, pin: boolean): Promise<number> {
    return this.sql.transaction(async (client) => {
      const added = await client.query(
        `${scopeSql(scope)}
         INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, status,
                               cached, pinned, last_read_at)
         SELECT s.id, $2, $3, '', s.size, s.checksum, 'pending', true, $4, now() FROM scope s
          WHERE NOT EXISTS (SELECT 1 FROM replicas r WHERE r.object_id = s.id AND r.site_id = $2)
         ON CONFLICT (object_id, site_id, resource_id) DO NOTHING`,
        [scope.id, siteId, resourceId.toString(), pin],
      );
      if (pin) {
        await client.query(
          `${scopeSql(scope)}
           UPDATE replicas r SET pinned = true, last_read_at = now()
             FROM scope s WHERE r.object_id = s.id AND r.site_id = $2 AND r.cached AND NOT r.pinned`,
          [scope.id, siteId],
        );
      }
      return added.rowCount ?? 0;
    });
  }

  /**
   * Bytes of `scope`'s objects that this site does not hold with their current bytes, and are not
   * already counted as cached copies on their way: what staging them adds to the cache.
   */
  async missingBytes(siteId: string, scope: CacheScope): Promise<number> {
    const { rows } = await this.sql.query<{ bytes: string }>(
      `${scopeSql(scope)}
       SELECT COALESCE(sum(s.size), 0)::text AS bytes FROM scope s
        WHERE NOT EXISTS (SELECT 1 FROM replicas r WHERE r.object_id = s.id AND r.site_id = $2
                             AND (r.status IN ('pending', 'copying') OR (r.status = 'good' AND r.checksum = s.checksum)))`,
      [scope.id, siteId],
    );
    return Number(rows[0]!.bytes);
  }

  /** How far `scope`'s objects have come to this site. */
  async stageCounts(siteId: string, scope: CacheScope): Promise<StageCounts> {
    const { rows } = await this.sql.query<{
      objects: number;
      bytes: string;
      ready: number;
      ready_bytes: string;
      pending: number;
      failed: number;
    }>(
      `${scopeSql(scope)}
       SELECT count(*)::int AS objects, COALESCE(sum(s.size), 0)::text AS bytes,
              count(*) FILTER (WHERE r.status = 'good' AND r.checksum = s.checksum)::int AS ready,
              COALESCE(sum(s.size) FILTER (WHERE r.status = 'good' AND r.checksum = s.checksum), 0)::text AS ready_bytes,
              count(*) FILTER (WHERE r.status IN ('pending', 'copying'))::int AS pending,
              count(*) FILTER (WHERE r.status = 'failed')::int AS failed
         FROM scope s LEFT JOIN replicas r ON r.object_id = s.id AND r.site_id = $2`,
      [scope.id, siteId],
    );
    const r = rows[0]!;
    return {
      objects: r.objects,
      bytes: Number(r.bytes),
      readyObjects: r.ready,
      readyBytes: Number(r.ready_bytes),
      pendingObjects: r.pending,
      failedObjects: r.failed,
    };
  }

  /** Unpins this site's cached copies of `scope`; resolves with how many. */
  async unpin(siteId: string, scope: CacheScope): Promise<number> {
    const res = await this.sql.query(
      `${scopeSql(scope)}
       UPDATE replicas r SET pinned = false FROM scope s
        WHERE r.object_id = s.id AND r.site_id = $2 AND r.cached AND r.pinned`,
      [scope.id, siteId],
    );
    return res.rowCount ?? 0;
  }

  /**
   * Good cached copies here of the object's current bytes that eviction may take, least recently
   * read first (never read first); only those of `scope` when given.
   */
  async candidates(siteId: string, limit: number, scope?: CacheScope): Promise<EvictionCandidate[]> {
    const params: unknown[] = [siteId, limit];
    let scoped = '';
    let prefix = '';
    if (scope) {
      prefix = scopeSql(scope).replace(/\$1\b/g, '$3');
      params.push(scope.id);
      scoped = 'AND r.object_id IN (SELECT id FROM scope)';
    }
    const { rows } = await this.sql.query<{
      id: string;
      object_id: string;
      path: string;
      size: string;
      checksum: string;
      good_at: string[];
    }>(
      `${prefix}
       SELECT r.id::text, r.object_id::text, ${OBJECT_PATH} AS path, r.size::text, o.checksum,
              ARRAY(SELECT g.site_id FROM replicas g
                     WHERE g.object_id = o.id AND g.site_id <> $1 AND g.status = 'good' AND g.checksum = o.checksum
                     ORDER BY g.site_id) AS good_at
         FROM replicas r
         JOIN data_objects o ON o.id = r.object_id
         JOIN collections c ON c.id = o.collection_id
        WHERE r.site_id = $1 AND r.cached AND NOT r.pinned AND r.status = 'good' AND r.checksum = o.checksum
          ${scoped}
        ORDER BY r.last_read_at NULLS FIRST, r.id
        LIMIT $2`,
      params,
    );
    return rows.map((r) => ({
      replicaId: r.id,
      objectId: r.object_id,
      path: r.path,
      size: Number(r.size),
      checksum: r.checksum,
      goodAt: r.good_at,
    }));
  }

  /**
   * Removes this site's cached copy row under the object's lock, only if it is still a good,
   * unpinned cached copy of the object's bytes `checksum` (the promise was for those). Resolves with
   * its key, or null when it did not remove it.
   */
  async evict(replicaId: string, siteId: string, checksum: string): Promise<string | null> {
    return this.sql.transaction(async (client) => {
      const object = await client.query<{ checksum: string }>(
        `SELECT o.checksum FROM data_objects o
          WHERE o.id = (SELECT object_id FROM replicas WHERE id = $1) AND o.trash_id = 0 FOR UPDATE`,
        [replicaId],
      );
      if (object.rows[0]?.checksum !== checksum) return null;
      const row = await client.query<{ physical_path: string }>(
        `DELETE FROM replicas WHERE id = $1 AND site_id = $2 AND cached AND NOT pinned
            AND status = 'good' AND checksum = $3
          RETURNING physical_path`,
        [replicaId, siteId, checksum],
      );
      return row.rows[0]?.physical_path ?? null;
    });
  }

  /**
   * Removes this site's cached copies that can no longer be served and are not being fetched: stale
   * (the bytes changed; the next read faults the new ones in), suspect (the scrub found them damaged),
   * failed too often. Their files go with the storage garbage (and are removed by the caller). Rows
   * of objects in the trash stay (a rescue brings them back as they were).
   */
  async dropUnusable(siteId: string): Promise<string[]> {
    const { rows } = await this.sql.query<{ physical_path: string }>(
      `DELETE FROM replicas r USING data_objects o
        WHERE r.object_id = o.id AND o.trash_id = 0 AND r.site_id = $1 AND r.cached
          AND (r.status IN ('stale', 'suspect') OR (r.status = 'failed' AND r.attempts >= $2))
        RETURNING r.physical_path`,
      [siteId, CACHE_FILL_ATTEMPTS],
    );
    return rows.map((r) => r.physical_path).filter((k) => k !== '');
  }

  /** This site's cached copies of `scope`, most recently read first, with their count and bytes. */
  async list(
    siteId: string,
    scope: CacheScope,
    limit: number,
  ): Promise<{ items: CacheEntryRow[]; total: number; bytes: number }> {
    const [items, totals] = await Promise.all([
      this.sql.query<{
        path: string;
        size: string;
        status: CopyState;
        current: boolean;
        pinned: boolean;
        last_read_at: Date | null;
      }>(
        `${scopeSql(scope)}
         SELECT ${OBJECT_PATH} AS path, r.size::text, r.status::text AS status,
                r.status = 'good' AND r.checksum = o.checksum AS current, r.pinned, r.last_read_at
           FROM scope s
           JOIN replicas r ON r.object_id = s.id AND r.site_id = $2 AND r.cached
           JOIN data_objects o ON o.id = s.id
           JOIN collections c ON c.id = o.collection_id
          ORDER BY r.last_read_at DESC NULLS LAST, r.id
          LIMIT $3`,
        [scope.id, siteId, limit],
      ),
      this.sql.query<{ total: number; bytes: string }>(
        `${scopeSql(scope)}
         SELECT count(*)::int AS total, COALESCE(sum(r.size), 0)::text AS bytes
           FROM scope s JOIN replicas r ON r.object_id = s.id AND r.site_id = $2 AND r.cached`,
        [scope.id, siteId],
      ),
    ]);
    return {
      items: items.rows.map((r) => ({
        path: r.path,
        size: Number(r.size),
        state: r.status,
        current: r.current,
        pinned: r.pinned,
        lastReadAt: r.last_read_at,
      })),
      total: totals.rows[0]!.total,
      bytes: Number(totals.rows[0]!.bytes),
    };
  }
}
