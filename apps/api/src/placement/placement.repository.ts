import { Injectable } from '@nestjs/common';
import { splitPath } from '@tributary/shared';
import { SqlPool } from '../database/sql-pool';

/** What a path names in the live namespace (the trash left out). */
export interface PlacementEntry {
  kind: 'collection' | 'object';
  id: string;
}

/** A rule with its collection's current path and its owner's name. */
export interface RuleRecord {
  id: string;
  collection_id: string;
  path: string;
  copies: number;
  sites: string[] | null;
  condition: string | null;
  expires_at: Date | null;
  owner: string | null;
  created_at: Date;
  subscription: boolean;
  /** Set for an erasure rule (docs/erasure.md). */
  erasure_k: number | null;
  erasure_m: number | null;
  erasure_domain: 'site' | 'resource' | null;
  /** At each site listed, the storage resource its copies are kept on (docs/storage.md). */
  resources: Array<{ site: string; resource: string }> | null;
}

export interface NewRule {
  collectionId: string;
  copies: number;
  sites: string[] | null;
  condition: string | null;
  expiresAt: Date | null;
  ownerId: bigint;
  /** A subscription of its one site (docs/placement.md, "Subscriptions"). */
  subscription?: boolean;
  /** An erasure rule: k data + m parity shards, each in another domain (docs/erasure.md). */
  erasure?: { k: number; m: number; domain: 'site' | 'resource' };
  /** At each site listed, the storage resource its copies are kept on (docs/storage.md). */
  resources?: Array<{ site: string; resource: string }>;
}

/** Where a listing resumes: after this rule, ordered by collection depth (deepest first), then id. */
export interface RuleCursor {
  pathLength: number;
  id: string;
}

const SELECT_RULES = `
  SELECT r.id::text, r.collection_id::text, c.path, r.copies, r.sites, r.condition, r.expires_at,
         u.username AS owner, r.created_at, r.subscription, r.erasure_k, r.erasure_m, r.erasure_domain,
         r.resources
    FROM placement_rules r
    JOIN collections c ON c.id = r.collection_id
    LEFT JOIN users u ON u.id = r.owner_id`;

/**
 * placement_rules, in plain SQL (the table is not modelled in Prisma). Rules are catalog rows: a
 * write here is captured and replicated like any other, and a rule points at its collection by id,
 * so it follows the collection through renames and goes with it when the collection is purged.
 */
@Injectable()
export class PlacementRepository {
  constructor(private readonly sql: SqlPool) {}

  /** The live collection or object at `path`, if any. */
  async entryAt(path: string): Promise<PlacementEntry | null> {
    const collection = await this.sql.query<{ id: string }>(
      'SELECT id::text FROM collections WHERE path = $1 AND trash_id = 0',
      [path],
    );
    if (collection.rows[0]) return { kind: 'collection', id: collection.rows[0].id };
    if (path === '/') return null;
    const { parent, name } = splitPath(path);
    const object = await this.sql.query<{ id: string }>(
      `SELECT o.id::text FROM data_objects o JOIN collections c ON c.id = o.collection_id
        WHERE c.path = $1 AND c.trash_id = 0 AND o.name = $2 AND o.trash_id = 0`,
      [parent, name],
    );
    return object.rows[0] ? { kind: 'object', id: object.rows[0].id } : null;
  }

  /** The sites in the catalog: the sites a rule can place copies at. */
  async sites(): Promise<{ id: string; name: string; is_local: boolean }[]> {
    const res = await this.sql.query<{ id: string; name: string; is_local: boolean }>(
      'SELECT id, name, is_local FROM sites ORDER BY id',
    );
    return res.rows;
  }

  /** The storage resources in the catalog (the domains of an erasure rule by resource). */
  /**
   * The storage resources of these sites by name that may hold a rule's copies: not the cache or
   * archive of a compound resource (its settings name them), which are reached only through it.
   */
  async placeableResources(sites: string[]): Promise<Map<string, string[]>> {
    const res = await this.sql.query<{ site_id: string; name: string }>(
      `SELECT s.site_id, s.name FROM storage_resources s
        WHERE s.site_id = ANY($1::text[])
          AND NOT EXISTS (SELECT 1 FROM storage_resources c
                           WHERE c.site_id = s.site_id AND c.driver = 'compound'
                             AND s.name IN (c.settings->>'cache', c.settings->>'archive'))
        ORDER BY s.site_id, s.name`,
      [sites],
    );
    const out = new Map<string, string[]>();
    for (const r of res.rows) out.set(r.site_id, [...(out.get(r.site_id) ?? []), r.name]);
    return out;
  }

  async resources(): Promise<{ id: string; siteId: string }[]> {
    const res = await this.sql.query<{ id: string; site_id: string }>(
      'SELECT id::text, site_id FROM storage_resources ORDER BY id',
    );
    return res.rows.map((r) => ({ id: r.id, siteId: r.site_id }));
  }

  /**
   * Inserts the rule if its collection is still live (it may have gone since it was checked); returns
   * the new id, or null when the collection is gone.
   */
  async insert(rule: NewRule): Promise<string | null> {
    const res = await this.sql.query<{ id: string }>(
      `INSERT INTO placement_rules (collection_id, condition, copies, sites, expires_at, owner_id, created_by, updated_by,
                                    subscription, erasure_k, erasure_m, erasure_domain, resources)
       SELECT c.id, $2, $3, $4::text[], $5::timestamptz, $6, $6, $6, $7, $8, $9, $10, $11::jsonb
         FROM collections c WHERE c.id = $1 AND c.trash_id = 0
       RETURNING id::text`,
      [
        rule.collectionId,
        rule.condition,
        rule.copies,
        rule.sites,
        rule.expiresAt,
        rule.ownerId,
        rule.subscription ?? false,
        rule.erasure?.k ?? null,
        rule.erasure?.m ?? null,
        rule.erasure?.domain ?? null,
        rule.resources ? JSON.stringify(rule.resources) : null,
      ],
    );
    return res.rows[0]?.id ?? null;
  }

  async findOne(id: string): Promise<RuleRecord | null> {
    const res = await this.sql.query<RuleRecord>(`${SELECT_RULES} WHERE r.id = $1`, [id]);
    return res.rows[0] ?? null;
  }

  /**
   * The rules on the live collections at `paths` (a collection and its ancestors), deepest
   * collection first, then by id; at most `limit`, after `after`.
   */
  async onPaths(paths: string[], limit: number, after: RuleCursor | null): Promise<RuleRecord[]> {
    const res = await this.sql.query<RuleRecord>(
      `${SELECT_RULES}
        WHERE c.path = ANY($1::text[]) AND c.trash_id = 0
          AND ($3::int IS NULL OR length(c.path) < $3 OR (length(c.path) = $3 AND r.id > $4::bigint))
        ORDER BY length(c.path) DESC, r.id
        LIMIT $2`,
      [paths, limit, after?.pathLength ?? null, after?.id ?? null],
    );
    return res.rows;
  }

  async countOnPaths(paths: string[]): Promise<number> {
    const res = await this.sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM placement_rules r JOIN collections c ON c.id = r.collection_id
        WHERE c.path = ANY($1::text[]) AND c.trash_id = 0`,
      [paths],
    );
    return res.rows[0]?.n ?? 0;
  }

  /**
   * The subscriptions on live collections at `path` or below it (by path, then id), of `site` only
   * when given; at most `limit`.
   */
  async subscriptions(path: string, site: string | undefined, limit: number): Promise<RuleRecord[]> {
    const res = await this.sql.query<RuleRecord>(
      `${SELECT_RULES}
        WHERE r.subscription AND c.trash_id = 0
          AND (c.path = $1 OR $1 = '/' OR left(c.path, length($1) + 1) = $1 || '/')
          AND ($2::text IS NULL OR r.sites = ARRAY[$2::text])
        ORDER BY c.path, r.id
        LIMIT $3`,
      [path, site ?? null, limit],
    );
    return res.rows;
  }

  /** Removes the rule; false when it was already gone. */
  async delete(id: string): Promise<boolean> {
    const res = await this.sql.query('DELETE FROM placement_rules WHERE id = $1', [id]);
    return (res.rowCount ?? 0) > 0;
  }
}
