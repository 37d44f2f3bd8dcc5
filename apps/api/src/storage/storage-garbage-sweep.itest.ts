import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { testBytes, uniqueName } from '@tributary/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SiteContext } from '../sites/site-context';
import { fileExists } from '../test/copies';
import { startTestSite, type TestSite } from '../test/test-site';
import { StorageGarbageSweeper } from './storage-garbage';
import { StorageService } from './storage.service';

/**
 * The sweeper on one site (in process): the trigger notes exactly this site's deleted copies, and a
 * sweep is idempotent (a key whose file is already gone, as after a crash between the removal and
 * the commit, just goes), keeps a key a copy row of this site uses again, and keeps a row whose file
 * it could not remove, for the next sweep.
 */
describe('storage garbage sweeper', () => {
  let site: TestSite;
  let sweeper: StorageGarbageSweeper;
  let storage: StorageService;
  let context: SiteContext;

  beforeAll(async () => {
    // No cycles meanwhile: each test runs the sweeps it checks.
    site = await startTestSite({ REPLICATION_CYCLE_SECONDS: '3600' });
    sweeper = site.siteApp.app.get(StorageGarbageSweeper);
    storage = site.siteApp.app.get(StorageService);
    context = site.siteApp.app.get(SiteContext);
  });
  afterAll(async () => {
    await site?.close();
  });

  const keysWaiting = async (): Promise<string[]> =>
    (await site.query<{ key: string }>('SELECT key FROM storage_garbage ORDER BY key')).rows.map(
      (r) => r.key,
    );

  const fileOf = (key: string): string =>
    path.join(site.config.storageRoot, 'objects', key.split('.')[0]!.slice(-2).padStart(2, '0'), key);

  async function upload(): Promise<{ id: string; key: string }> {
    const admin = await site.admin();
    const file = `/projects/${uniqueName('g')}.bin`;
    const res = await admin.request<{ id: string }>('PUT', '/api/v1/data', {
      query: { path: file },
      headers: { 'content-type': 'application/octet-stream' },
      body: testBytes(100, 1),
    });
    expect(res.status).toBe(201);
    const rows = await site.query<{ physical_path: string }>(
      'SELECT physical_path FROM replicas WHERE object_id = $1',
      [res.body.id],
    );
    return { id: res.body.id, key: rows.rows[0]!.physical_path };
  }

  it("notes this site's deleted copy rows, not other sites'; a sweep removes the file, then the row", async () => {
    const { id, key } = await upload();
    // Another site's copy row of the same object: deleting it is no file of this site's.
    await site.query(
      `INSERT INTO sites (id, name, id_range_start, id_range_end) VALUES ('elsewhere', 'E', 9000000000000, 9100000000000)
       ON CONFLICT (id) DO NOTHING`,
    );
    await site.query(
      `INSERT INTO storage_resources (site_id, name, root_path) VALUES ('elsewhere', 'default', '/x') ON CONFLICT DO NOTHING`,
    );
    await site.query(
      `INSERT INTO replicas (object_id, site_id, resource_id, physical_path, size, checksum)
       SELECT $1, 'elsewhere', r.id, 'elsewhere-key', 100, 'x' FROM storage_resources r WHERE r.site_id = 'elsewhere'`,
      [id],
    );
    await site.query('DELETE FROM replicas WHERE object_id = $1', [id]);
    expect(await keysWaiting()).toEqual([key]);
    expect(await fileExists(fileOf(key))).toBe(true);
    await sweeper.sweep();
    expect(await fileExists(fileOf(key))).toBe(false);
    expect(await keysWaiting()).toEqual([]);
  });

  it('is idempotent: a key whose file is already gone just goes', async () => {
    await site.query('INSERT INTO storage_garbage (resource_id, key, object_id) VALUES ($1, $2, 1)', [
      context.resourceId.toString(),
      'gone-already.v1',
    ]);
    await sweeper.sweep();
    expect(await keysWaiting()).toEqual([]);
  });

  it('keeps the file of a key a copy row of this site uses again', async () => {
    const { id, key } = await upload();
    await site.query('INSERT INTO storage_garbage (resource_id, key, object_id) VALUES ($1, $2, $3)', [
      context.resourceId.toString(),
      key,
      id,
    ]);
    await sweeper.sweep();
    expect(await keysWaiting()).toEqual([]);
    expect(await fileExists(fileOf(key))).toBe(true);
  });

  it('keeps the row of a file it could not remove, and removes it on a later sweep', async () => {
    const key = 'stuck.v1';
    await mkdir(path.dirname(fileOf(key)), { recursive: true });
    await writeFile(fileOf(key), 'x');
    await site.query('INSERT INTO storage_garbage (resource_id, key, object_id) VALUES ($1, $2, 1)', [
      context.resourceId.toString(),
      key,
    ]);
    const remove = storage.removeFrom.bind(storage);
    storage.removeFrom = () => Promise.reject(new Error('EIO'));
    try {
      await sweeper.sweep();
    } finally {
      storage.removeFrom = remove;
    }
    expect(await keysWaiting()).toEqual([key]);
    expect(await fileExists(fileOf(key))).toBe(true);
    await sweeper.sweep();
    expect(await keysWaiting()).toEqual([]);
    expect(await fileExists(fileOf(key))).toBe(false);
  });
});
