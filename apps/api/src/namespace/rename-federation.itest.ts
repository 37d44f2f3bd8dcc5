import { describe, expect, it } from 'vitest';
import { testBytes, uniqueName, type FederationSite } from '@tributary/testkit';
import { useTwoSites } from '../test/two-sites';

/**
 * A folder renamed or moved at one site with folders below it: every site ends with the whole subtree
 * under the new path. The origin captures the subfolders' path changes before the folder's own, so the
 * receiving site first sets them back under the old path and must repair them when the folder arrives.
 */
describe('renaming a folder with subfolders across sites', () => {
  let lsu: FederationSite;
  let tulane: FederationSite;
  const { exchange } = useTwoSites((sites) => ({ lsu, tulane } = sites));

  async function paths(site: FederationSite, under: string): Promise<string[]> {
    const rows = await site.query<{ path: string }>(
      `SELECT path FROM collections WHERE path = $1 OR path LIKE $2 ORDER BY path`,
      [under, `${under}/%`],
    );
    return rows.rows.map((r) => r.path);
  }

  it('moves the subtree at the other site too, and its objects stay readable there', async () => {
    const base = `/projects/${uniqueName('tree')}`;
    for (const dir of [base, `${base}/a`, `${base}/a/b`, `${base}/a/b/c`, `${base}/a/d`]) {
      await lsu.client.createCollection(dir);
    }
    const bytes = testBytes(300, 5);
    await lsu.client.upload(`${base}/a/b/c/deep.txt`, bytes);
    await exchange();

    // Renamed at tulane, then moved below another folder at lsu after the exchange.
    await tulane.client.move(`${base}/a`, `${base}/renamed`);
    await exchange();
    const expected = [
      base,
      `${base}/renamed`,
      `${base}/renamed/b`,
      `${base}/renamed/b/c`,
      `${base}/renamed/d`,
    ];
    expect(await paths(lsu, base)).toEqual(expected);
    expect(await paths(tulane, base)).toEqual(expected);

    await lsu.client.createCollection(`${base}/other`);
    await lsu.client.move(`${base}/renamed`, `${base}/other/moved`);
    await exchange();
    const moved = [
      base,
      `${base}/other`,
      `${base}/other/moved`,
      `${base}/other/moved/b`,
      `${base}/other/moved/b/c`,
      `${base}/other/moved/d`,
    ];
    expect(await paths(tulane, base)).toEqual(moved);
    expect(await paths(lsu, base)).toEqual(moved);
    for (const site of [lsu, tulane]) {
      const res = await site.client.download(`${base}/other/moved/b/c/deep.txt`);
      expect(res.status, site.id).toBe(200);
      expect(Buffer.from(await res.arrayBuffer())).toEqual(bytes);
    }
  });
});
