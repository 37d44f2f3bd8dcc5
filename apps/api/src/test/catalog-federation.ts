import { createFederation, type TestFederation } from '@tributary/replication/testing';
import type pg from 'pg';
import { afterEach, beforeEach, expect } from 'vitest';
import { catalogApplication } from '../replication/catalog/application';
import type { ConflictRow } from '../replication/catalog/conflict-rows';

/** The catalog's rules, with the default time to decide a conflict. */
export const CATALOG = catalogApplication({ conflictDeadlineMs: 24 * 3600_000 });

/** Rows written straight into the catalogs of the running test's federation, and checks of them. */
export interface CatalogFederation {
  db: (site: string) => pg.Pool;
  /** The first row a query returns at a site. */
  one: <T>(site: string, sql: string, params?: unknown[]) => Promise<T>;
  /** A user (its name also its display name); returns its id. */
  addUser: (site: string, username: string) => Promise<string>;
  /** A collection owned by the first user; returns its id. */
  addCollection: (site: string, parentId: string | null, name: string, path: string) => Promise<string>;
  /** The conflict records at a site, by id. */
  conflicts: (site: string) => Promise<ConflictRow[]>;
  /** Runs cycles until quiet, then requires equal catalogs (conflict records included) everywhere. */
  converge: () => Promise<void>;
}

/**
 * A federation of `sites` on real catalogs with the catalog's rules (in-memory transport), a new one
 * for each test (handed to `started`), closed after it. Call it at the top of a test file or in a
 * `describe`.
 */
export function useCatalogFederation(
  sites: string[],
  started: (fed: TestFederation) => void,
): CatalogFederation {
  let fed: TestFederation | undefined;

  beforeEach(async () => {
    fed = await createFederation(sites, CATALOG);
    started(fed);
  });
  afterEach(async () => {
    await fed?.close();
    fed = undefined;
  });

  const current = (): TestFederation => {
    if (!fed) throw new Error('no federation: it is made before each test');
    return fed;
  };
  const db = (site: string): pg.Pool => current().sites[site]!.catalog.db;

  async function one<T>(site: string, sql: string, params: unknown[] = []): Promise<T> {
    const res = await db(site).query(sql, params);
    return res.rows[0] as T;
  }

  async function conflicts(site: string): Promise<ConflictRow[]> {
    const res = await db(site).query<{ row: ConflictRow }>(
      'SELECT to_jsonb(c) AS row FROM conflicts c ORDER BY id',
    );
    return res.rows.map((r) => r.row);
  }

  return {
    db,
    one,
    conflicts,
    addUser: async (site, username) => {
      return (
        await one<{ id: string }>(
          site,
          `INSERT INTO users (username, display_name, password_hash, updated_at) VALUES ($1, $1, 'x', now()) RETURNING id`,
          [username],
        )
      ).id;
    },
    addCollection: async (site, parentId, name, path) => {
      return (
        await one<{ id: string }>(
          site,
          `INSERT INTO collections (parent_id, name, path, owner_id, updated_at)
           VALUES ($1, $2, $3, (SELECT min(id) FROM users), now()) RETURNING id`,
          [parentId, name, path],
        )
      ).id;
    },
    converge: async () => {
      const f = current();
      await f.settle();
      const digests = await f.digests();
      if (new Set(digests).size !== 1) {
        for (const site of sites) {
          const t = await f.sites[site]!.engine.digest();
          console.log(site, JSON.stringify(t.tables));
          console.log(site, JSON.stringify(await conflicts(site)));
          console.log(site, JSON.stringify((await db(site).query('SELECT * FROM trash_entries')).rows));
        }
      }
      expect(new Set(digests).size).toBe(1);
    },
  };
}
