import { Injectable, Logger } from '@nestjs/common';
import type { ErasureRuleChoice, PlacementResource } from '@tributary/placement';
import { SqlPool } from '../database/sql-pool';
import { SqlParams } from '../metadata/query-compiler';
import { ruleConditionSql, rulesMetBy } from '../placement/rule-condition';

/** A live erasure rule as the erasure mover reads it. */
export interface ErasureRule extends ErasureRuleChoice {
  id: string;
  collectionId: string;
  condition: string | null;
}

/** A shard row (any site). */
export interface ShardRow {
  id: string;
  objectId: string;
  index: number;
  siteId: string;
  resourceId: string;
  key: string;
  k: number;
  m: number;
  chunk: number;
  objectSize: number;
  objectChecksum: string;
  size: number;
  checksum: string;
  status: 'good' | 'suspect';
  verifiedAt: Date | null;
  error: string | null;
}

/** A live object an erasure rule covers. */
export interface CoveredObject {
  id: string;
  size: number;
  checksum: string;
}

interface RuleRow {
  id: string;
  collection_id: string;
  erasure_k: number;
  erasure_m: number;
  erasure_domain: string | null;
  sites: string[] | null;
  condition: string | null;
}

interface ShardSqlRow {
  id: string;
  object_id: string;
  shard_index: number;
  site_id: string;
  resource_id: string;
  physical_path: string;
  k: number;
  m: number;
  chunk: number;
  object_size: string;
  object_checksum: string;
  size: string;
  checksum: string;
  status: string;
  verified_at: Date | null;
  error: string | null;
}

const SHARD_COLUMNS = `id::text, object_id::text, shard_index, site_id, resource_id::text, physical_path, k, m, chunk,
  object_size::text, object_checksum, size::text, checksum, status, verified_at, error`;

const toShard = (r: ShardSqlRow): ShardRow => ({
  id: r.id,
  objectId: r.object_id,
  index: r.shard_index,
  siteId: r.site_id,
  resourceId: r.resource_id,
  key: r.physical_path,
  k: r.k,
  m: r.m,
  chunk: r.chunk,
  objectSize: Number(r.object_size),
  objectChecksum: r.object_checksum,
  size: Number(r.size),
  checksum: r.checksum,
  status: r.status === 'good' ? 'good' : 'suspect',
  verifiedAt: r.verified_at,
  error: r.error,
});

const toRule = (r: RuleRow): ErasureRule => ({
  id: r.id,
  collectionId: r.collection_id,
  k: r.erasure_k,
  m: r.erasure_m,
  domain: r.erasure_domain === 'resource' ? 'resource' : 'site',
  sites: r.sites,
  condition: r.condition,
});

const RULE_COLUMNS =
  'r.id::text, r.collection_id::text, r.erasure_k, r.erasure_m, r.erasure_domain, r.sites, r.condition';

/**
 * The erasure mover's SQL (docs/erasure.md): live erasure rules and what they cover, shard rows, and
 * the last checks of a shard's commit under the object's lock. A site writes only its own shard rows.
 */
@Injectable()
export class ErasureRepository {
  private readonly logger = new Logger('Erasure');

  constructor(private readonly sql: SqlPool) {}

  async resources(): Promise<PlacementResource[]> {
    const { rows } = await this.sql.query<{ id: string; site_id: string }>(
      'SELECT id::text, site_id FROM storage_resources ORDER BY id',
    );
    return rows.map((r) => ({ id: r.id, siteId: r.site_id }));
  }

  /** Erasure rules that count now (not expired), on live collections. */
  async liveRules(): Promise<ErasureRule[]> {
    const { rows } = await this.sql.query<RuleRow>(
      `SELECT ${RULE_COLUMNS}
         FROM placement_rules r JOIN collections c ON c.id = r.collection_id
        WHERE c.trash_id = 0 AND (r.expires_at IS NULL OR r.expires_at > now()) AND r.erasure_k IS NOT NULL
        ORDER BY r.id`,
    );
    return rows.map(toRule);
  }

  /** The erasure rules covering an object (its ancestors' rules whose condition it meets), by id. */
  async rulesCovering(objectId: string): Promise<ErasureRule[]> {
    const { rows } = await this.sql.query<RuleRow>(
      `WITH RECURSIVE up AS (
         SELECT c.id, c.parent_id FROM collections c JOIN data_objects o ON o.collection_id = c.id WHERE o.id = $1
         UNION ALL
         SELECT p.id, p.parent_id FROM collections p JOIN up ON p.id = up.parent_id
       )
       SELECT ${RULE_COLUMNS}
         FROM placement_rules r JOIN up ON up.id = r.collection_id
        WHERE (r.expires_at IS NULL OR r.expires_at > now()) AND r.erasure_k IS NOT NULL
        ORDER BY r.id`,
      [objectId],
    );
    return rulesMetBy(this.sql, rows.map(toRule), objectId, this.logger);
  }

  /** Live objects with bytes below the rule's collection that meet its condition (at most `limit`). */
  async covered(rule: ErasureRule, limit = 100_000): Promise<CoveredObject[]> {
    const params = new SqlParams();
    params.add(rule.collectionId); // $1
    const where = ruleConditionSql(rule, params, 'o.id', this.logger);
    if (where === null) return [];
    const max = params.add(limit);
    const { rows } = await this.sql.pool.query<{ id: string; size: string; checksum: string }>(
      `WITH RECURSIVE tree AS (
         SELECT c.id FROM collections c WHERE c.id = $1 AND c.trash_id = 0
         UNION ALL
         SELECT k.id FROM collections k JOIN tree t ON k.parent_id = t.id WHERE k.trash_id = 0
       )
       SELECT o.id::text, o.size::text, o.checksum FROM data_objects o JOIN tree t ON o.collection_id = t.id
        WHERE o.trash_id = 0 AND o.link_target IS NULL AND ${where}
        ORDER BY o.id LIMIT ${max}`,
      params.values,
    );
    return rows.map((r) => ({ id: r.id, size: Number(r.size), checksum: r.checksum }));
  }

  /** The live object (with bytes), if any. */
  async object(objectId: string): Promise<CoveredObject | null> {
    const { rows } = await this.sql.query<{ id: string; size: string; checksum: string }>(
      'SELECT id::text, size::text, checksum FROM data_objects WHERE id = $1 AND trash_id = 0 AND link_target IS NULL',
      [objectId],
    );
    const r = rows[0];
    return r ? { id: r.id, size: Number(r.size), checksum: r.checksum } : null;
  }

  /** Every shard row of these objects (any site), by object then index then site. */
  async shardsOf(objectIds: readonly string[]): Promise<ShardRow[]> {
    if (objectIds.length === 0) return [];
    const { rows } = await this.sql.query<ShardSqlRow>(
      `SELECT ${SHARD_COLUMNS} FROM erasure_shards WHERE object_id = ANY($1::bigint[])
        ORDER BY object_id, shard_index, site_id`,
      [objectIds],
    );
    return rows.map(toShard);
  }

  /** This site's shard rows of objects, for the scrub: good ones not verified since `before`. */
  async toVerify(siteId: string, before: Date, limit: number): Promise<ShardRow[]> {
    const { rows } = await this.sql.query<ShardSqlRow>(
      `SELECT ${SHARD_COLUMNS} FROM erasure_shards
        WHERE site_id = $1 AND status = 'good' AND (verified_at IS NULL OR verified_at < $2)
        ORDER BY verified_at NULLS FIRST, id LIMIT $3`,
      [siteId, before, limit],
    );
    return rows.map(toShard);
  }

  /** This site's shard rows (any object). */
  async shardsHere(siteId: string): Promise<ShardRow[]> {
    const { rows } = await this.sql.query<ShardSqlRow>(
      `SELECT ${SHARD_COLUMNS} FROM erasure_shards WHERE site_id = $1 ORDER BY object_id, shard_index`,
      [siteId],
    );
    return rows.map(toShard);
  }

  /**
   * Records this site's shard `index` of an object, under the object's lock and only while the
   * object still has the checksum and size it was encoded from: a new row, or this site's row of
   * that index replaced (a stale or suspect shard rebuilt). `place` puts the staged file under its
   * key inside the transaction. Resolves with the replaced file's key ('' for none), or null when
   * the object changed or went (nothing recorded; the caller discards the staged file).
   */
  async commitShard(
    siteId: string,
    shard: {
      objectId: string;
      index: number;
      resourceId: string;
      key: string;
      k: number;
      m: number;
      chunk: number;
      objectSize: number;
      objectChecksum: string;
      size: number;
      checksum: string;
    },
    place: () => Promise<void>,
  ): Promise<string | null> {
    return this.sql.transaction(async (client) => {
      const o = await client.query<{ checksum: string; size: string }>(
        'SELECT checksum, size::text FROM data_objects WHERE id = $1 AND trash_id = 0 FOR UPDATE',
        [shard.objectId],
      );
      const object = o.rows[0];
      if (!object || object.checksum !== shard.objectChecksum || Number(object.size) !== shard.objectSize)
        return null;
      const old = await client.query<{ id: string; physical_path: string }>(
        `SELECT id::text, physical_path FROM erasure_shards
          WHERE object_id = $1 AND shard_index = $2 AND site_id = $3 FOR UPDATE`,
        [shard.objectId, shard.index, siteId],
      );
      await place();
      const values = [
        shard.objectId,
        shard.index,
        siteId,
        shard.resourceId,
        shard.key,
        shard.k,
        shard.m,
        shard.chunk,
        shard.objectSize,
        shard.objectChecksum,
        shard.size,
        shard.checksum,
      ];
      const previous = old.rows[0];
      if (previous) {
        await client.query(
          `UPDATE erasure_shards SET resource_id = $4, physical_path = $5, k = $6, m = $7, chunk = $8,
                  object_size = $9, object_checksum = $10, size = $11, checksum = $12, status = 'good',
                  verified_at = now(), error = NULL, updated_at = now()
            WHERE object_id = $1 AND shard_index = $2 AND site_id = $3`,
          values,
        );
        return previous.physical_path;
      }
      await client.query(
        `INSERT INTO erasure_shards (object_id, shard_index, site_id, resource_id, physical_path, k, m, chunk,
                                     object_size, object_checksum, size, checksum, status, verified_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, 'good', now())`,
        values,
      );
      return '';
    });
  }

  /**
   * The scrub's finding on this site's shard, written only while the row still names the file and
   * bytes that were hashed (an update or a rebuild meanwhile drops it).
   */
  async recordCheck(
    siteId: string,
    shard: Pick<ShardRow, 'id' | 'key' | 'checksum'>,
    outcome: { ok: true } | { ok: false; error: string },
  ): Promise<boolean> {
    const res = outcome.ok
      ? await this.sql.query(
          `UPDATE erasure_shards SET verified_at = now(), error = NULL, status = 'good', updated_at = now()
            WHERE id = $1 AND site_id = $2 AND physical_path = $3 AND checksum = $4`,
          [shard.id, siteId, shard.key, shard.checksum],
        )
      : await this.sql.query(
          `UPDATE erasure_shards SET status = 'suspect', error = $5, updated_at = now()
            WHERE id = $1 AND site_id = $2 AND physical_path = $3 AND checksum = $4`,
          [shard.id, siteId, shard.key, shard.checksum, outcome.error.slice(0, 2000)],
        );
    return (res.rowCount ?? 0) > 0;
  }

  /**
   * Removes this site's shard row if it still encodes `objectChecksum` and the object's checksum is
   * another now (older bytes: of no use for reads). Resolves with its key, or null.
   */
  async dropStaleShard(siteId: string, shardId: string, objectChecksum: string): Promise<string | null> {
    return this.sql.transaction(async (client) => {
      const row = await client.query<{ object_id: string }>(
        'SELECT object_id::text FROM erasure_shards WHERE id = $1 AND site_id = $2',
        [shardId, siteId],
      );
      const objectId = row.rows[0]?.object_id;
      if (objectId === undefined) return null;
      const o = await client.query<{ checksum: string }>(
        'SELECT checksum FROM data_objects WHERE id = $1 FOR UPDATE',
        [objectId],
      );
      if (o.rows[0]?.checksum === objectChecksum) return null;
      const res = await client.query<{ physical_path: string }>(
        `DELETE FROM erasure_shards WHERE id = $1 AND site_id = $2 AND object_checksum = $3 RETURNING physical_path`,
        [shardId, siteId, objectChecksum],
      );
      return res.rows[0]?.physical_path ?? null;
    });
  }

  /** Objects with shard rows (any site) that are live. */
  async shardedObjects(): Promise<string[]> {
    const { rows } = await this.sql.query<{ id: string }>(
      `SELECT DISTINCT s.object_id::text AS id FROM erasure_shards s JOIN data_objects o ON o.id = s.object_id
        WHERE o.trash_id = 0 ORDER BY 1`,
    );
    return rows.map((r) => r.id);
  }

  /** This site's whole-copy rows that wait for bytes (pending, copying, failed, stale, suspect), by object. */
  async waitingCopiesHere(siteId: string): Promise<string[]> {
    const { rows } = await this.sql.query<{ id: string }>(
      `SELECT DISTINCT r.object_id::text AS id FROM replicas r JOIN data_objects o ON o.id = r.object_id
        WHERE r.site_id = $1 AND r.status <> 'good' AND o.trash_id = 0 AND EXISTS (
              SELECT 1 FROM erasure_shards s WHERE s.object_id = r.object_id AND s.object_checksum = o.checksum)`,
      [siteId],
    );
    return rows.map((r) => r.id);
  }

  /**
   * A whole copy here made from the shards: this site's row of the object (on `resourceId`) set good
   * with the file at `key`, or inserted so, under the object's lock and only while the object is
   * still the bytes rebuilt. Resolves with the replaced file's key ('' for none), or null.
   */
  async commitWholeCopy(
    siteId: string,
    resourceId: string,
    copy: { objectId: string; key: string; size: number; checksum: string },
    place: () => Promise<void>,
  ): Promise<string | null> {
    return this.sql.transaction(async (client) => {
      const o = await client.query<{ checksum: string; size: string }>(
        'SELECT checksum, size::text FROM data_objects WHERE id = $1 AND trash_id = 0 FOR UPDATE',
        [copy.objectId],
      );
      const object = o.rows[0];
      if (!object || object.checksum !== copy.checksum || Number(object.size) !== copy.size) return null;
      const old = await client.query<{ physical_path: string }>(
        'SELECT physical_path FROM replicas WHERE object_id = $1 AND site_id = $2 AND resource_id = $3 FOR UPDATE',
        [copy.objectId, siteId, resourceId],
      );
      await place();
      await client.query(
        `INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, status, verified_at)
         VALUES ($1, $2, $3, $4, $5, $6, 'good', now())
         ON CONFLICT (object_id, site_id, resource_id) DO UPDATE SET physical_path = EXCLUDED.physical_path,
           size = EXCLUDED.size, checksum = EXCLUDED.checksum, status = 'good', verified_at = now(), error = NULL,
           attempts = 0, next_attempt_at = NULL, updated_at = now()`,
        [copy.objectId, siteId, resourceId, copy.key, copy.size, copy.checksum],
      );
      return old.rows[0]?.physical_path ?? '';
    });
  }

  /**
   * Removes this site's shard rows of an object while its checksum is still `objectChecksum` (a good
   * whole copy of those bytes was confirmed). Resolves with the removed files' keys.
   */
  async dropShardsOf(siteId: string, objectId: string, objectChecksum: string): Promise<string[]> {
    return this.sql.transaction(async (client) => {
      const o = await client.query<{ checksum: string }>(
        'SELECT checksum FROM data_objects WHERE id = $1 FOR UPDATE',
        [objectId],
      );
      if (o.rows[0]?.checksum !== objectChecksum) return [];
      const res = await client.query<{ physical_path: string }>(
        'DELETE FROM erasure_shards WHERE object_id = $1 AND site_id = $2 RETURNING physical_path',
        [objectId, siteId],
      );
      return res.rows.map((r) => r.physical_path);
    });
  }
}
