import { test as base, type BrowserContext, type Page } from '@playwright/test';
import { signIn, siteApi, siteUrls, type SiteApi } from './helpers';

export { expect } from '@playwright/test';

export interface PortalFixtures {
  /**
   * The administrator signed in over HTTP at every site (lsu, tulane, uno, in that order), for
   * setting up data and running replication cycles; closed after the test.
   */
  sites: SiteApi[];
  /** Opens `path` at the first site in the test's page and signs in there as the administrator. */
  signedIn: (path: string) => Promise<Page>;
  /**
   * A page at another site (`site` indexes `siteUrls()`), in a browser context of its own (the
   * session cookie is per host, not per port), opened at `path` and signed in; closed after the test.
   */
  pageAt: (site: number, path: string) => Promise<Page>;
}

/** Playwright's `test` with the sign-in and per-site setup every spec needs. */
export const test = base.extend<PortalFixtures>({
  // eslint-disable-next-line no-empty-pattern
  sites: async ({}, use) => {
    const sites = await Promise.all(siteUrls().map(siteApi));
    try {
      await use(sites);
    } finally {
      await Promise.all(sites.map((s) => s.close()));
    }
  },
  signedIn: async ({ page }, use) => {
    await use(async (path) => {
      await page.goto(path);
      await signIn(page);
      return page;
    });
  },
  pageAt: async ({ browser }, use) => {
    const contexts: BrowserContext[] = [];
    try {
      await use(async (site, path) => {
        const baseURL = siteUrls()[site];
        if (baseURL === undefined) throw new Error(`no site ${site}: there are ${siteUrls().length}`);
        const context = await browser.newContext({ baseURL });
        contexts.push(context);
        const page = await context.newPage();
        await page.goto(path);
        await signIn(page);
        return page;
      });
    } finally {
      await Promise.all(contexts.map((c) => c.close()));
    }
  },
});
