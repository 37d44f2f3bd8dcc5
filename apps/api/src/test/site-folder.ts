import { afterAll, beforeAll } from 'vitest';
import { expectStatus, startTestSite, type TestClient, type TestSite } from './test-site';

export interface SiteWithFolder {
  site: TestSite;
  /** The bootstrap administrator's session. */
  admin: TestClient;
  /** The suite's own folder, `/projects/<name>-<time>`, made by the administrator. */
  base: string;
}

/**
 * One test site, its administrator and a folder of the suite's own. Call it in a `describe`: it
 * starts the site and makes the folder before the suite (handing them to `started`) and closes the
 * site after it. `upload(name)` writes a file of that name into the folder (its name as its bytes)
 * and returns the object's id.
 */
export function useSiteWithFolder(
  name: string,
  started: (suite: SiteWithFolder) => void,
): { upload: (file: string) => Promise<bigint> } {
  let suite: SiteWithFolder | undefined;

  beforeAll(async () => {
    const site = await startTestSite();
    const admin = await site.admin();
    const base = `/projects/${name}-${Date.now()}`;
    suite = { site, admin, base };
    expectStatus(await admin.post('/api/v1/namespace/collections', { path: base, parents: true }), 201);
    started(suite);
  });

  afterAll(async () => {
    await suite?.site.close();
  });

  async function upload(file: string): Promise<bigint> {
    if (!suite) throw new Error('the site has not started');
    const res = await suite.admin.request<{ id: string }>('PUT', '/api/v1/data', {
      query: { path: `${suite.base}/${file}` },
      headers: { 'content-type': 'application/octet-stream' },
      body: file,
    });
    return BigInt(expectStatus(res, 201).body.id);
  }

  return { upload };
}
