import { promises as fs } from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { waitFor } from '@tributary/testkit';
import type { TestSite } from './test-site';

export { expectToWaitUntil, waitFor } from '@tributary/testkit';

/** Every file below `dir`, as paths relative to it. */
export async function filesBelow(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true, withFileTypes: true }).catch(() => []);
  return entries
    .filter((e) => e.isFile())
    .map((e) => path.relative(dir, path.join(e.parentPath, e.name)))
    .sort();
}

/**
 * The site's storage holds exactly the bytes its catalog refers to: no stray staging files (given
 * a moment for uploads whose connection dropped), no orphaned versions, nothing missing.
 */
export async function expectStorageMatchesCatalog(site: TestSite): Promise<void> {
  const storage = site.config.storageRoot;
  const staging = path.join(storage, '.staging');
  const settled = await waitFor(async () => (await filesBelow(staging)).length === 0);
  expect(settled, `staging files left: ${(await filesBelow(staging)).join(', ')}`).toBe(true);
  const replicas = await site.query<{ physical_path: string }>('SELECT physical_path FROM replicas');
  const expected = replicas.rows.map((r) => r.physical_path).sort();
  const actual = (await filesBelow(path.join(storage, 'objects'))).map((f) => path.basename(f)).sort();
  expect(actual).toEqual(expected);
}
