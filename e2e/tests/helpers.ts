import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { expect, request, type APIRequestContext, type Page } from '@playwright/test';
import { ADMIN_PASSWORD } from '../global-setup';

/** The three sites' base URLs (lsu, tulane, uno), set by global-setup. */
export function siteUrls(): string[] {
  const urls = (process.env.E2E_SITE_URLS ?? process.env.E2E_BASE_URL ?? '').split(',').filter(Boolean);
  if (urls.length === 0) throw new Error('E2E_SITE_URLS is not set: run through playwright.config.ts');
  return urls;
}

export interface SiteApi {
  url: string;
  http: APIRequestContext;
  /** Headers for state-changing calls (the session's CSRF token). */
  csrf: Record<string, string>;
  close: () => Promise<void>;
}

/**
 * The administrator signed in at one site over HTTP, in a request context of its own (the session
 * cookie is per host, not per port, so each site needs its own jar).
 */
export async function siteApi(url: string): Promise<SiteApi> {
  const http = await request.newContext({ baseURL: url });
  const login = await http.post('/api/v1/auth/login', {
    data: { username: 'admin', password: ADMIN_PASSWORD },
  });
  expect(login.status(), await login.text()).toBe(200);
  const { csrfToken } = (await login.json()) as { csrfToken: string };
  return { url, http, csrf: { 'x-csrf-token': csrfToken }, close: () => http.dispose() };
}

/** Creates a collection at a site over HTTP (its parent must exist). */
export async function createCollection(site: SiteApi, path: string): Promise<void> {
  const res = await site.http.post('/api/v1/namespace/collections', { data: { path }, headers: site.csrf });
  expect(res.status(), await res.text()).toBe(201);
}

/**
 * Runs replication cycles at every site until their catalogs agree (equal digests,
 * `GET /api/v1/replication/digest`), at least `rounds` rounds; fails with each site's replication
 * status when they still differ after 10.
 */
export async function exchange(sites: SiteApi[], rounds = 3): Promise<void> {
  for (let i = 0; i < 10; i++) {
    for (const s of sites) {
      const res = await s.http.post('/api/v1/replication/cycle', { headers: s.csrf });
      expect(res.status(), await res.text()).toBe(200);
    }
    if (i + 1 < rounds) continue;
    const digests = await Promise.all(
      sites.map(
        async (s) =>
          ((await (await s.http.get('/api/v1/replication/digest')).json()) as { digest: string }).digest,
      ),
    );
    if (new Set(digests).size === 1) return;
  }
  const status = await Promise.all(
    sites.map(async (s) => (await s.http.get('/api/v1/replication/status')).text()),
  );
  throw new Error(`the sites did not converge after 10 rounds:\n${status.join('\n')}`);
}

/** Signs in through the form. */
export async function signIn(page: Page, password = ADMIN_PASSWORD, username = 'admin'): Promise<void> {
  // The form itself, so nothing is typed into a screen that is still on its way out (after sign-out).
  const form = page.getByRole('form', { name: 'Sign in to Tributary' });
  await form.getByLabel(/username/i).fill(username);
  await form.getByLabel(/password/i).fill(password);
  await form.getByRole('button', { name: /sign in/i }).click();
  await expect(page.getByRole('button', { name: /sign out/i })).toBeVisible();
}

/** Saves what the user sees under e2e/screenshots/ (git-ignored) for people to look at. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dir = path.resolve(__dirname, '..', 'screenshots');
  mkdirSync(dir, { recursive: true });
  await page.screenshot({ path: path.join(dir, `${name}.png`), fullPage: true });
}

/** A name unique to this run, so tests never meet each other's data. */
export function unique(prefix: string): string {
  return `${prefix}-${Date.now().toString(36)}${Math.floor(Math.random() * 1e4).toString(36)}`;
}
