import { access, copyFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { Federation, FederationSite } from '@tributary/testkit';
import { useFederation } from './federation';
import { expectStatus } from './test-site';

/** A site's file of a storage key (LocalFsDriver's layout: objects/<last two characters>/<key>). */
export function storageFile(fed: Federation, site: string, key: string): string {
  const shard = key.split('.')[0]!.slice(-2).padStart(2, '0');
  return path.join(fed.dataDir, 'sites', site, 'storage', 'objects', shard, key);
}

export async function fileExists(file: string): Promise<boolean> {
  return access(file).then(
    () => true,
    () => false,
  );
}

/** An object's copy rows as `site` knows them. */
export async function copyRows(
  site: FederationSite,
  objectId: string,
): Promise<Array<{ site_id: string; physical_path: string; status: string; checksum: string }>> {
  const res = await site.query<{ site_id: string; physical_path: string; status: string; checksum: string }>(
    'SELECT site_id, physical_path, status::text AS status, checksum FROM replicas WHERE object_id = $1 ORDER BY site_id',
    [objectId],
  );
  return res.rows;
}

/**
 * Gives `to` a good copy of an object `from` holds, as the mover would leave it: the file copied into
 * `to`'s storage under the same key, and `to`'s copy row inserted at `to` (a change of `to`'s own,
 * which replicates with the next exchange).
 */
export async function addCopy(
  fed: Federation,
  from: FederationSite,
  to: FederationSite,
  objectId: string,
): Promise<void> {
  const rows = await from.query<{ physical_path: string; size: string; checksum: string }>(
    'SELECT physical_path, size::text AS size, checksum FROM replicas WHERE object_id = $1 AND site_id = $2',
    [objectId, from.id],
  );
  const source = rows.rows[0];
  if (!source) throw new Error(`${from.id} holds no copy of object ${objectId}`);
  const target = storageFile(fed, to.id, source.physical_path);
  await mkdir(path.dirname(target), { recursive: true });
  await copyFile(storageFile(fed, from.id, source.physical_path), target);
  await to.query(
    `INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum, status, verified_at)
     SELECT $1, $2, r.id, $3, $4, $5, 'good', now() FROM storage_resources r WHERE r.site_id = $2 AND r.name = 'default'`,
    [objectId, to.id, source.physical_path, source.size, source.checksum],
  );
}

/**
 * Real site processes with an hour-long cycle (cycles run on demand through `exchange`), started
 * before the suite and closed after it; every site's output is printed when a test fails. The
 * suites make their copies by hand, so the mover is off: its own replicated writes between the
 * on-demand exchanges would keep the catalogs apart until a cycle an hour away.
 */
export function useSites(
  ids: string[],
  env: Record<string, string> = {},
): { fed: () => Federation; exchange: () => Promise<void> } {
  let fed: Federation | undefined;
  useFederation(
    { ids, cycleSeconds: 3600, env: { PLACEMENT_ENABLED: 'false', ...env } },
    (started) => (fed = started),
    4000,
    180_000,
  );
  const get = (): Federation => {
    if (!fed) throw new Error('the sites have not started');
    return fed;
  };
  /** Cycles at every running site (not paused) until their catalogs agree. */
  async function exchange(): Promise<void> {
    const live = get().sites.filter((s) => s.running && !s.paused);
    for (let i = 0; i < 3; i++) {
      for (const site of live) expectStatus(await site.http.post('/api/v1/replication/cycle'), 200);
    }
    await get().waitForConvergence(60_000, live);
  }
  return { fed: get, exchange };
}
