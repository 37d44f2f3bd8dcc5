import path from 'node:path';
import type { ErrorBody, Page, TrashEntryDto } from '@tributary/shared';
import { testBytes, uniqueName, type FederationSite } from '@tributary/testkit';
import { describe, expect, it } from 'vitest';
import { addCopy, copyRows, fileExists, storageFile, useSites } from '../test/copies';
import { expectError, expectStatus } from '../test/test-site';
import { filesBelow, waitFor } from '../test/storage';

/**
 * A purge removes every copy's file (docs/placement.md, "Updates, deletes and fewer copies"): three
 * real site processes; objects written at lsu get good copies at tulane and uno made by the test
 * itself (file and copy row, as the mover would leave them). The purge is made at lsu; tulane and uno
 * lose their copy rows when it arrives, and their own sweepers remove the files.
 */
describe('a purge removes the files of every copy', () => {
  const { fed, exchange } = useSites(['lsu', 'tulane', 'uno']);

  /** An object at `path` with a good copy at every site; answers its id and its copies' key. */
  async function everywhere(file: string, seed: number): Promise<{ id: string; key: string; bytes: Buffer }> {
    const [lsu, tulane, uno] = fed().sites;
    const bytes = testBytes(50_000, seed);
    const entry = await lsu!.client.upload(file, bytes);
    await exchange();
    await addCopy(fed(), lsu!, tulane!, entry.id);
    await addCopy(fed(), lsu!, uno!, entry.id);
    await exchange();
    const rows = await copyRows(lsu!, entry.id);
    expect(rows.map((r) => `${r.site_id}:${r.status}`)).toEqual(['lsu:good', 'tulane:good', 'uno:good']);
    return { id: entry.id, key: rows[0]!.physical_path, bytes };
  }

  const filesOf = (key: string): string[] => fed().sites.map((s) => storageFile(fed(), s.id, key));

  async function settled(entryId: string): Promise<void> {
    for (let i = 0; i < 20; i++) {
      await exchange();
      const page = expectStatus(
        await fed()
          .site('lsu')
          .http.get<Page<TrashEntryDto>>('/api/v1/trash', { query: { limit: 1000 } }),
        200,
      ).body;
      if (page.items.find((t) => t.id === entryId)?.purgeAllowed) return;
    }
    throw new Error(`trash entry ${entryId} did not settle`);
  }

  /** Each site's storage holds exactly the files its copy rows name, and nothing waits to be swept. */
  async function storageMatchesCatalog(site: FederationSite): Promise<void> {
    const objects = path.join(fed().dataDir, 'sites', site.id, 'storage', 'objects');
    const matches = async (): Promise<boolean> => {
      const rows = await site.query<{ physical_path: string }>(
        'SELECT physical_path FROM replicas WHERE site_id = $1',
        [site.id],
      );
      const files = (await filesBelow(objects)).map((f) => path.basename(f)).sort();
      return JSON.stringify(files) === JSON.stringify(rows.rows.map((r) => r.physical_path).sort());
    };
    expect(await waitFor(matches, 10_000), `${site.id}: storage and catalog differ`).toBe(true);
    expect(await waitFor(async () => (await garbage(site)) === 0, 10_000)).toBe(true);
  }

  const garbage = async (site: FederationSite): Promise<number> =>
    Number((await site.query<{ n: string }>('SELECT count(*) AS n FROM storage_garbage')).rows[0]!.n);

  it('an object: trashed, every file stays; purged, every file is gone at every site', async () => {
    const lsu = fed().site('lsu');
    const dir = `/projects/${uniqueName('purge-copies')}`;
    await lsu.client.createCollection(dir);
    const { id, key } = await everywhere(`${dir}/f.bin`, 1);
    for (const file of filesOf(key)) expect(await fileExists(file), file).toBe(true);

    const entry = await lsu.client.remove(`${dir}/f.bin`);
    await settled(entry.id);
    for (const file of filesOf(key)) expect(await fileExists(file), `trashed: ${file}`).toBe(true);

    expectStatus(await lsu.http.delete(`/api/v1/trash/${entry.id}`), 204);
    await exchange();
    for (const site of fed().sites) {
      expect(await copyRows(site, id)).toEqual([]);
      const file = storageFile(fed(), site.id, key);
      expect(
        await waitFor(async () => !(await fileExists(file)), 10_000),
        `${site.id} still has ${key}`,
      ).toBe(true);
      await storageMatchesCatalog(site);
    }
  }, 240_000);

  it('a folder purged at another site than its copies: the files of everything inside go everywhere', async () => {
    const lsu = fed().site('lsu');
    const dir = `/projects/${uniqueName('purge-folder')}`;
    await lsu.client.createCollection(dir);
    await lsu.client.createCollection(`${dir}/sub`);
    const a = await everywhere(`${dir}/sub/a.bin`, 2);
    const b = await everywhere(`${dir}/sub/b.bin`, 3);
    const entry = await lsu.client.remove(`${dir}/sub`);
    await settled(entry.id);
    // Purged at uno (forwarded to lsu, where it was deleted, which decides).
    expectStatus(await fed().site('uno').http.delete(`/api/v1/trash/${entry.id}`), 204);
    await exchange();
    for (const key of [a.key, b.key]) {
      for (const file of filesOf(key)) {
        expect(await waitFor(async () => !(await fileExists(file)), 10_000), file).toBe(true);
      }
    }
    for (const site of fed().sites) await storageMatchesCatalog(site);
  }, 240_000);

  it('a rescue at another site (a rename that meets the delete) keeps every copy and its bytes', async () => {
    const [lsu, tulane] = [fed().site('lsu'), fed().site('tulane')];
    const dir = `/projects/${uniqueName('purge-rescued')}`;
    await lsu.client.createCollection(dir);
    const { id, key, bytes } = await everywhere(`${dir}/keep.bin`, 4);
    // The delete at lsu and the rename at tulane in the same cycle: the rename rescues the object.
    const entry = await lsu.client.remove(`${dir}/keep.bin`);
    await tulane.client.move(`${dir}/keep.bin`, `${dir}/kept.bin`);
    await exchange();
    await exchange();
    for (const site of fed().sites) {
      expectError(await site.http.delete<ErrorBody>(`/api/v1/trash/${entry.id}`), 404, 'NOT_FOUND');
    }
    await exchange();
    for (const site of fed().sites) {
      expect((await copyRows(site, id)).map((r) => `${r.site_id}:${r.status}`)).toEqual([
        'lsu:good',
        'tulane:good',
        'uno:good',
      ]);
      expect(await fileExists(storageFile(fed(), site.id, key)), `${site.id} lost its file`).toBe(true);
      const res = await site.client.download(`${dir}/kept.bin`);
      expect(Buffer.from(await res.arrayBuffer()).equals(bytes)).toBe(true);
      await storageMatchesCatalog(site);
    }
  }, 240_000);
});
