import { Injectable, Logger } from '@nestjs/common';
import type { CopyState } from '@tributary/shared';
import type { CopyJob, PlacementRuleChoice, PlacementSite } from '@tributary/placement';
import { SqlPool } from '../database/sql-pool';
import { SqlParams } from '../metadata/query-compiler';
import { ruleConditionSql, rulesMetBy } from '../placement/rule-condition';

/** A live placement rule as the mover reads it. */
export interface LiveRule extends PlacementRuleChoice {
  id: string;
  collectionId: string;
  condition: string | null;
  /**
   * A subscription (docs/placement.md, "Subscriptions"): its site is wanted too, but a subscription
   * alone never makes a copy surplus.
   */
  subscription: boolean;
}

/** A rule's row as the mover's queries select it. */
interface RuleRow {
  id: string;
  collection_id: string;
  copies: number;
  sites: string[] | null;
  condition: string | null;
  subscription: boolean;
}

const liveRule = (r: RuleRow): LiveRule => ({
  id: r.id,
  collectionId: r.collection_id,
  copies: r.copies,
  sites: r.sites,
  condition: r.condition,
  subscription: r.subscription,
});

/** A copy here of an object with copies elsewhere too (a trim candidate). */
export interface CopyHere {
  replicaId: string;
  objectId: string;
  path: string;
  status: CopyState;
  /** The copy's checksum equals the object's. */
  current: boolean;
  objectChecksum: string;
  /** Sites holding a good copy with the object's checksum. */
  goodAt: string[];
}

/** One row of an object's copies (every site). */
export interface CopyRow {
  siteId: string;
  status: CopyState;
  size: number;
  checksum: string;
  verifiedAt: Date | null;
  error: string | null;
  cached: boolean;
  pinned: boolean;
  updatedAt: Date;
}

/** What ended a copy's last step under the object's lock. */
export type CompleteOutcome = { done: true; previousKey: string } | { done: false; reason: string };

/** The object path of `o` (joined with its collection `c`). */
const OBJECT_PATH = `CASE WHEN c.path = '/' THEN '/' || o.name ELSE c.path || '/' || o.name END`;

/**
 * The descent from a rule's collection ($1) through live sub-collections: `tree(id)`. Rules follow
 * their collection through renames because they hold its id, not its path.
 */
const TREE = `WITH RECURSIVE tree AS (
    SELECT c.id FROM collections c WHERE c.id = $1 AND c.trash_id = 0
    UNION ALL
    SELECT k.id FROM collections k JOIN tree t ON k.parent_id = t.id WHERE k.trash_id = 0
  )`;

/**
 * The mover's SQL (docs/placement.md, "The mover"): which objects the live rules want here, this
 * site's queue of copies to make, the last checks of a copy and of a trim under the object's lock,
 * and the receiving side's check of a keep request. Retry bookkeeping touches only the local
 * columns (attempts, next_attempt_at) and never updated_at, so a retry is not a replicated change.
 */
@Injectable()
export class MoverRepository {
  private readonly logger = new Logger('Mover');

  constructor(private readonly sql: SqlPool) {}

  async sites(): Promise<PlacementSite[]> {
    const { rows } = await this.sql.query<{ id: string; s: string; e: string }>(
      'SELECT id, id_range_start::text AS s, id_range_end::text AS e FROM sites ORDER BY id',
    );
    return rows.map((r) => ({ id: r.id, idRangeStart: BigInt(r.s), idRangeEnd: BigInt(r.e) }));
  }

  /**
   * Rules of copies that count now (not expired), on live collections. Erasure rules are the
   * erasure mover's (docs/erasure.md): they want no whole copy, and are left out here.
   */
  async liveRules(): Promise<LiveRule[]> {
    const { rows } = await this.sql.query<RuleRow>(
      `SELECT r.id::text, r.collection_id::text, r.copies, r.sites, r.condition, r.subscription
         FROM placement_rules r JOIN collections c ON c.id = r.collection_id
        WHERE c.trash_id = 0 AND (r.expires_at IS NULL OR r.expires_at > now()) AND r.erasure_k IS NULL
        ORDER BY r.id`,
    );
    return rows.map(liveRule);
  }

  /**
   * Plans one rule: a `pending` row here for every live object the rule covers that ranks this
   * site among its first `copies` candidates (home site first, then md5(object:site) ascending)
   * and has no row here yet; a cached copy here of such an object stops being one (a rule wants it
   * now: eviction no longer takes it, and it is refreshed when the bytes change). One statement;
   * resolves with the rows added.
   */
  async planRule(rule: LiveRule, siteId: string, resourceId: bigint): Promise<number> {
    const params = new SqlParams();
    params.add(rule.collectionId); // $1: TREE
    const me = params.add(siteId);
    const resource = params.add(resourceId.toString());
    const sites = params.add(rule.sites, '::text[]');
    const copies = params.add(rule.copies);
    const where = ruleConditionSql(rule, params, 'o.id', this.logger);
    if (where === null) return 0;
    const res = await this.sql.pool.query(
      `${TREE},
       cand AS (SELECT s.id, s.id_range_start, s.id_range_end FROM sites s WHERE ${sites} IS NULL OR s.id = ANY(${sites})),
       mine AS (SELECT * FROM cand WHERE id = ${me}),
       wanted AS MATERIALIZED (
       SELECT o.id, o.size, o.checksum
         FROM data_objects o JOIN tree t ON o.collection_id = t.id CROSS JOIN mine m
        WHERE o.trash_id = 0 AND o.link_target IS NULL AND ${where}
          AND (SELECT count(*) FROM cand k
                WHERE k.id <> m.id
                  AND (o.id BETWEEN k.id_range_start AND k.id_range_end
                       OR (NOT (o.id BETWEEN m.id_range_start AND m.id_range_end)
                           AND md5(o.id::text || ':' || k.id) COLLATE "C" < md5(o.id::text || ':' || m.id) COLLATE "C"))
              ) < ${copies}),
       promoted AS (
         UPDATE replicas r SET cached = false, pinned = false
          WHERE r.site_id = ${me} AND r.cached AND r.object_id IN (SELECT id FROM wanted)
       )
       INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, status)
       SELECT w.id, ${me}, ${resource}::bigint, '', w.size, w.checksum, 'pending'
         FROM wanted w
        WHERE NOT EXISTS (SELECT 1 FROM replicas r WHERE r.object_id = w.id AND r.site_id = ${me})
       ON CONFLICT (object_id, site_id, resource_id) DO NOTHING`,
      params.values,
    );
    return res.rowCount ?? 0;
  }

  /** Refreshes the planner's statistics of replicas (after a plan added many rows). */
  async analyzeCopies(): Promise<void> {
    await this.sql.query('ANALYZE replicas');
  }

  /**
   * Good rows here whose checksum is no longer the object's become `stale`. Checked again under the
   * objects' locks, in a snapshot taken after them: an update of the bytes here changes the object
   * and its copy in one transaction, and a single UPDATE ... FROM racing it would re-check the new
   * copy row against the object row of its own snapshot and mark the fresh copy stale.
   */
  async markStale(siteId: string): Promise<number> {
    const found = await this.sql.query<{ id: string; object_id: string }>(
      `SELECT r.id::text, r.object_id::text FROM replicas r JOIN data_objects o ON o.id = r.object_id
        WHERE r.site_id = $1 AND r.status = 'good' AND r.checksum <> o.checksum
        LIMIT 10000`,
      [siteId],
    );
    if (found.rows.length === 0) return 0;
    return this.sql.transaction(async (client) => {
      await client.query('SELECT id FROM data_objects WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE', [
        found.rows.map((r) => r.object_id),
      ]);
      const res = await client.query(
        `UPDATE replicas r SET status = 'stale', updated_at = now()
           FROM data_objects o
          WHERE r.id = ANY($1::bigint[]) AND o.id = r.object_id AND r.status = 'good' AND r.checksum <> o.checksum`,
        [found.rows.map((r) => r.id)],
      );
      return res.rowCount ?? 0;
    });
  }

  /** Due rows here, oldest first: not good, retry time reached, the object live and with bytes. */
  async due(siteId: string, limit: number, skip: readonly string[]): Promise<CopyJob[]> {
    const { rows } = await this.sql.query<{
      id: string;
      object_id: string;
      path: string;
      size: string;
      checksum: string;
      attempts: number;
    }>(
      // This site's due rows first, on their own (one scan of the site's index): joined in one
      // statement, a planner whose statistics still said this site had no rows (a rule planned
      // thousands a moment ago) probed that index once per object, and took a minute.
      `WITH mine AS MATERIALIZED (
         SELECT r.id, r.object_id, r.attempts, r.updated_at FROM replicas r
          WHERE r.site_id = $1 AND r.status IN ('pending', 'copying', 'stale', 'suspect', 'failed')
            AND (r.next_attempt_at IS NULL OR r.next_attempt_at <= now())
            -- A cached copy of older or damaged bytes is dropped by the cache, not fetched again.
            AND NOT (r.cached AND r.status IN ('stale', 'suspect'))
            AND NOT (r.id = ANY($3::bigint[]))
       )
       SELECT r.id::text, r.object_id::text, ${OBJECT_PATH} AS path, o.size::text, o.checksum, r.attempts
         FROM mine r
         JOIN data_objects o ON o.id = r.object_id
         JOIN collections c ON c.id = o.collection_id
        WHERE o.trash_id = 0 AND o.link_target IS NULL
        ORDER BY r.updated_at, r.id
        LIMIT $2`,
      [siteId, limit, skip],
    );
    const sources = await this.sourcesOf(
      rows.map((r) => ({ objectId: r.object_id, checksum: r.checksum })),
      siteId,
    );
    return rows.map((r) => ({
      replicaId: r.id,
      objectId: r.object_id,
      path: r.path,
      size: Number(r.size),
      checksum: r.checksum,
      attempts: r.attempts,
      sources: sources.get(r.object_id) ?? [],
    }));
  }

  /**
   * Sites other than `siteId` with a good copy of each object's current bytes, by object id: one
   * query over the objects' ids as an array, not a subquery per due row (planned as a scan of
   * replicas per row while the statistics described a smaller table).
   */
  private async sourcesOf(
    objects: ReadonlyArray<{ objectId: string; checksum: string }>,
    siteId: string,
  ): Promise<Map<string, string[]>> {
    if (!objects.length) return new Map();
    const { rows } = await this.sql.query<{ object_id: string; site_id: string; checksum: string }>(
      `SELECT object_id::text, site_id, checksum FROM replicas
        WHERE object_id = ANY($1::bigint[]) AND site_id <> $2 AND status = 'good'
        ORDER BY object_id, site_id`,
      [objects.map((o) => o.objectId), siteId],
    );
    const current = new Map(objects.map((o) => [o.objectId, o.checksum]));
    const out = new Map<string, string[]>();
    for (const r of rows)
      if (current.get(r.object_id) === r.checksum)
        out.set(r.object_id, [...(out.get(r.object_id) ?? []), r.site_id]);
    return out;
  }

  /**
   * A failed attempt: `failed` with the error (replicated only when they change), and the retry
   * schedule in the local columns, updated_at untouched.
   */
  async recordFailure(
    replicaId: string,
    siteId: string,
    error: string,
    attempts: number,
    next: Date,
  ): Promise<void> {
    await this.sql.query(
      `UPDATE replicas SET status = 'failed', error = $3, attempts = $4, next_attempt_at = $5
        WHERE id = $1 AND site_id = $2`,
      [replicaId, siteId, error.slice(0, 2000), attempts, next],
    );
  }

  /** A large copy has started (or resumed): `copying`. */
  async markCopying(replicaId: string, siteId: string): Promise<void> {
    await this.sql.query(
      `UPDATE replicas SET status = 'copying', updated_at = now()
        WHERE id = $1 AND site_id = $2 AND status <> 'copying'`,
      [replicaId, siteId],
    );
  }

  /**
   * Records copies whose bytes are verified, in one transaction (one large copy, or a batch of small
   * ones from one source): the objects and the rows locked in id order, each copy placed (`place`
   * puts its file under its key inside the transaction; if the transaction does not commit, the
   * caller removes it) and marked good only if its object still has the checksum and size it was
   * copied for. One outcome per copy, by replica id.
   */
  async completeCopies(
    siteId: string,
    copies: ReadonlyArray<{
      replicaId: string;
      objectId: string;
      key: string;
      size: number;
      checksum: string;
    }>,
    place: (replicaId: string) => Promise<void>,
  ): Promise<Map<string, CompleteOutcome>> {
    const out = new Map<string, CompleteOutcome>();
    if (copies.length === 0) return out;
    return this.sql.transaction(async (client) => {
      const objects = await client.query<{ id: string; checksum: string; size: string }>(
        'SELECT id::text, checksum, size::text FROM data_objects WHERE id = ANY($1::bigint[]) ORDER BY id FOR UPDATE',
        [copies.map((c) => c.objectId)],
      );
      const rows = await client.query<{
        id: string;
        physical_path: string;
        resource_id: string;
        target: string;
      }>(
        // target: the resource the copies' files are placed on (this site's default, where the
        // mover stages them); a row whose old bytes are on another resource leaves them to the
        // storage garbage sweep there (docs/storage.md, "Moving between resources").
        `SELECT r.id::text, r.physical_path, r.resource_id::text,
                (SELECT d.id::text FROM storage_resources d WHERE d.site_id = $2 AND d.is_default) AS target
           FROM replicas r WHERE r.id = ANY($1::bigint[]) AND r.site_id = $2 ORDER BY r.id FOR UPDATE`,
        [copies.map((c) => c.replicaId), siteId],
      );
      const objectById = new Map(objects.rows.map((o) => [o.id, o]));
      const rowById = new Map(rows.rows.map((r) => [r.id, r]));
      const ready: (typeof copies)[number][] = [];
      for (const copy of copies) {
        const o = objectById.get(copy.objectId);
        const r = rowById.get(copy.replicaId);
        if (!o) out.set(copy.replicaId, { done: false, reason: 'the object is gone' });
        else if (o.checksum !== copy.checksum || Number(o.size) !== copy.size)
          out.set(copy.replicaId, { done: false, reason: 'the object changed during the copy' });
        else if (!r) out.set(copy.replicaId, { done: false, reason: 'the copy row is gone' });
        else ready.push(copy);
      }
      // Renames only; the bytes were fsynced when staged.
      await Promise.all(ready.map((c) => place(c.replicaId)));
      if (ready.length > 0) {
        await client.query(
          `UPDATE replicas r SET status = 'good', physical_path = u.key, size = u.size, checksum = u.checksum,
                  resource_id = COALESCE(u.target, r.resource_id),
                  verified_at = now(), error = NULL, attempts = 0, next_attempt_at = NULL, updated_at = now()
             FROM unnest($1::bigint[], $2::text[], $3::bigint[], $4::text[], $5::bigint[])
                  AS u(id, key, size, checksum, target)
            WHERE r.id = u.id`,
          [
            ready.map((c) => c.replicaId),
            ready.map((c) => c.key),
            ready.map((c) => c.size),
            ready.map((c) => c.checksum),
            ready.map((c) => rowById.get(c.replicaId)!.target),
          ],
        );
      }
      // A stale copy that had been moved to another resource: its old bytes are swept there.
      const elsewhere = ready.filter((c) => {
        const r = rowById.get(c.replicaId)!;
        return r.target !== null && r.resource_id !== r.target && r.physical_path !== '';
      });
      if (elsewhere.length > 0) {
        await client.query(
          `INSERT INTO storage_garbage (resource_id, key, object_id)
           SELECT * FROM unnest($1::bigint[], $2::text[], $3::bigint[]) ON CONFLICT (resource_id, key) DO NOTHING`,
          [
            elsewhere.map((c) => rowById.get(c.replicaId)!.resource_id),
            elsewhere.map((c) => rowById.get(c.replicaId)!.physical_path),
            elsewhere.map((c) => c.objectId),
          ],
        );
      }
      for (const c of ready) {
        const r = rowById.get(c.replicaId)!;
        // Removed by the caller from the default resource, unless it is on another one (swept there).
        const moved = r.target !== null && r.resource_id !== r.target;
        out.set(c.replicaId, { done: true, previousKey: moved ? '' : r.physical_path });
      }
      return out;
    });
  }

  /** Objects with a copy here and with copies elsewhere that `rule` covers (trim candidates). */
  async coveredHere(rule: LiveRule, siteId: string): Promise<string[]> {
    const params = new SqlParams();
    params.add(rule.collectionId);
    const me = params.add(siteId);
    const where = ruleConditionSql(rule, params, 'o.id', this.logger);
    if (where === null) return [];
    const { rows } = await this.sql.pool.query<{ id: string }>(
      `${TREE}
       SELECT o.id::text FROM data_objects o
         JOIN tree t ON o.collection_id = t.id
         JOIN replicas r ON r.object_id = o.id AND r.site_id = ${me}
        WHERE o.trash_id = 0 AND o.link_target IS NULL AND ${where}
          AND EXISTS (SELECT 1 FROM replicas x WHERE x.object_id = o.id AND x.site_id <> ${me})`,
      params.values,
    );
    return rows.map((r) => r.id);
  }

  /**
   * This site's copies of these objects, with where good current copies are; cached copies left out
   * (the cache's eviction removes those, never the trim).
   */
  async copiesHere(siteId: string, objectIds: string[]): Promise<CopyHere[]> {
    if (!objectIds.length) return [];
    const { rows } = await this.sql.query<{
      id: string;
      object_id: string;
      path: string;
      status: CopyState;
      current: boolean;
      checksum: string;
      good_at: string[];
    }>(
      `SELECT r.id::text, r.object_id::text, ${OBJECT_PATH} AS path, r.status::text AS status,
              r.checksum = o.checksum AS current, o.checksum,
              ARRAY(SELECT g.site_id FROM replicas g
                     WHERE g.object_id = o.id AND g.status = 'good' AND g.checksum = o.checksum) AS good_at
         FROM replicas r
         JOIN data_objects o ON o.id = r.object_id
         JOIN collections c ON c.id = o.collection_id
        WHERE r.site_id = $1 AND r.object_id = ANY($2::bigint[]) AND NOT r.cached
        ORDER BY r.object_id`,
      [siteId, objectIds],
    );
    return rows.map((r) => ({
      replicaId: r.id,
      objectId: r.object_id,
      path: r.path,
      status: r.status,
      current: r.current,
      objectChecksum: r.checksum,
      goodAt: r.good_at,
    }));
  }

  /**
   * Removes this site's copy row under the object's lock, only if the object is live and, for a
   * copy that was good, the object's checksum is still the one the wanted sites promised to keep.
   * Resolves with the removed row's key (for the file), or null when it did not remove it.
   */
  async removeCopy(
    replicaId: string,
    siteId: string,
    expect: { good: boolean; checksum: string },
  ): Promise<string | null> {
    return this.sql.transaction(async (client) => {
      const object = await client.query<{ checksum: string; trash_id: string }>(
        `SELECT o.checksum, o.trash_id::text FROM data_objects o
          WHERE o.id = (SELECT object_id FROM replicas WHERE id = $1) FOR UPDATE`,
        [replicaId],
      );
      const o = object.rows[0];
      if (!o || o.trash_id !== '0') return null;
      const row = await client.query<{ physical_path: string; status: CopyState; checksum: string }>(
        'SELECT physical_path, status::text AS status, checksum FROM replicas WHERE id = $1 AND site_id = $2 FOR UPDATE',
        [replicaId, siteId],
      );
      const r = row.rows[0];
      if (!r) return null;
      const good = r.status === 'good' && r.checksum === o.checksum;
      if (good !== expect.good) return null;
      if (expect.good && o.checksum !== expect.checksum) return null;
      await client.query('DELETE FROM replicas WHERE id = $1', [replicaId]);
      return r.physical_path;
    });
  }

  /** The object, live, with the rules that cover it (ancestors' rules whose condition it meets). */
  async objectWithRules(
    objectId: string,
  ): Promise<{ checksum: string; size: number; rules: LiveRule[] } | null> {
    const object = await this.sql.query<{ checksum: string; size: string }>(
      'SELECT checksum, size::text FROM data_objects WHERE id = $1 AND trash_id = 0 AND link_target IS NULL',
      [objectId],
    );
    const o = object.rows[0];
    if (!o) return null;
    return { checksum: o.checksum, size: Number(o.size), rules: await this.rulesCovering(objectId) };
  }

  /** The rules of copies that cover the object (erasure rules left out, as in liveRules). */
  async rulesCovering(objectId: string): Promise<LiveRule[]> {
    const { rows } = await this.sql.query<RuleRow>(
      `WITH RECURSIVE up AS (
         SELECT c.id, c.parent_id FROM collections c JOIN data_objects o ON o.collection_id = c.id WHERE o.id = $1
         UNION ALL
         SELECT p.id, p.parent_id FROM collections p JOIN up ON p.id = up.parent_id
       )
       SELECT r.id::text, r.collection_id::text, r.copies, r.sites, r.condition, r.subscription
         FROM placement_rules r JOIN up ON up.id = r.collection_id
        WHERE (r.expires_at IS NULL OR r.expires_at > now()) AND r.erasure_k IS NULL
        ORDER BY r.id`,
      [objectId],
    );
    return rulesMetBy(this.sql, rows.map(liveRule), objectId, this.logger);
  }

  /** Every copy row of an object (any site). */
  async copiesOf(objectId: string): Promise<CopyRow[]> {
    const { rows } = await this.sql.query<{
      site_id: string;
      status: CopyState;
      size: string;
      checksum: string;
      verified_at: Date | null;
      error: string | null;
      cached: boolean;
      pinned: boolean;
      updated_at: Date;
    }>(
      `SELECT site_id, status::text AS status, size::text, checksum, verified_at, error, cached, pinned, updated_at
         FROM replicas WHERE object_id = $1 ORDER BY site_id`,
      [objectId],
    );
    return rows.map((r) => ({
      siteId: r.site_id,
      status: r.status,
      size: Number(r.size),
      checksum: r.checksum,
      verifiedAt: r.verified_at,
      error: r.error,
      cached: r.cached,
      pinned: r.pinned,
      updatedAt: r.updated_at,
    }));
  }

  /** This site's good copy of an object if it has the object's current bytes: its key and size. */
  async goodCurrentCopy(
    objectId: string,
    siteId: string,
  ): Promise<{ key: string; size: number; checksum: string } | null> {
    const { rows } = await this.sql.query<{ physical_path: string; size: string; checksum: string }>(
      `SELECT r.physical_path, r.size::text, r.checksum FROM replicas r JOIN data_objects o ON o.id = r.object_id
        WHERE r.object_id = $1 AND r.site_id = $2 AND r.status = 'good' AND r.checksum = o.checksum AND o.trash_id = 0`,
      [objectId, siteId],
    );
    const r = rows[0];
    return r ? { key: r.physical_path, size: Number(r.size), checksum: r.checksum } : null;
  }

  /** This site's good copies of the current bytes of these objects (one query for a batch), by object id. */
  async goodCurrentCopies(
    objectIds: readonly string[],
    siteId: string,
  ): Promise<Map<string, { key: string; size: number; checksum: string }>> {
    if (!objectIds.length) return new Map();
    const { rows } = await this.sql.query<{
      object_id: string;
      physical_path: string;
      size: string;
      checksum: string;
    }>(
      `SELECT r.object_id::text, r.physical_path, r.size::text, r.checksum
         FROM replicas r JOIN data_objects o ON o.id = r.object_id
        WHERE r.object_id = ANY($1::bigint[]) AND r.site_id = $2 AND r.status = 'good'
          AND r.checksum = o.checksum AND o.trash_id = 0`,
      [objectIds, siteId],
    );
    return new Map(
      rows.map((r) => [r.object_id, { key: r.physical_path, size: Number(r.size), checksum: r.checksum }]),
    );
  }

  /** Which of these rows of this site still wait for bytes (their copy drafts are worth keeping). */
  async waitingRows(siteId: string, ids: string[]): Promise<Set<string>> {
    if (!ids.length) return new Set();
    const { rows } = await this.sql.query<{ id: string }>(
      `SELECT id::text FROM replicas WHERE site_id = $1 AND id = ANY($2::bigint[]) AND status <> 'good'`,
      [siteId, ids],
    );
    return new Set(rows.map((r) => r.id));
  }

  /** Copies at this site per state. */
  async stateCounts(siteId: string): Promise<Partial<Record<CopyState, number>>> {
    const { rows } = await this.sql.query<{ status: CopyState; n: number }>(
      'SELECT status::text AS status, count(*)::int AS n FROM replicas WHERE site_id = $1 GROUP BY status',
      [siteId],
    );
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }

  /** Failed copies here, most recent first. */
  async failures(
    siteId: string,
    limit: number,
  ): Promise<Array<{ path: string; error: string; attempts: number; nextAttemptAt: Date | null }>> {
    const { rows } = await this.sql.query<{
      path: string;
      error: string | null;
      attempts: number;
      next_attempt_at: Date | null;
    }>(
      `SELECT ${OBJECT_PATH} AS path, r.error, r.attempts, r.next_attempt_at
         FROM replicas r JOIN data_objects o ON o.id = r.object_id JOIN collections c ON c.id = o.collection_id
        WHERE r.site_id = $1 AND r.status = 'failed'
        ORDER BY r.next_attempt_at DESC NULLS LAST LIMIT $2`,
      [siteId, limit],
    );
    return rows.map((r) => ({
      path: r.path,
      error: r.error ?? '',
      attempts: r.attempts,
      nextAttemptAt: r.next_attempt_at,
    }));
  }

  /**
   * The rule's condition as SQL on the object id `id`, with its values in `params`; TRUE for none,
   * null (matches nothing) for a condition that no longer parses.
   */
}
