import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CreatedTokenDto, EntryDetailDto } from '@tributary/shared';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM_ARGS } from '@tributary/testkit/chromium';
import { recordUpdateConflict, type SiteProcess, startSite, type TestUser } from '@tributary/testkit';
import { loadConfig } from '../config/config';
import { tribInProcess } from '../testing/cli-harness';
import { startUiServer, type UiServer } from './server';

/**
 * The local UI in Debian's Chromium (Playwright cannot download browsers here): the secret is
 * required, and the page shows mounts, transfers, conflicts and settings from the real agent
 * state and a real site.
 */
describe('local UI', () => {
  let site: SiteProcess;
  let alice: TestUser;
  let home: string;
  let work: string;
  let env: NodeJS.ProcessEnv;
  let ui: UiServer;
  let browser: Browser;
  let conflictId: string;

  beforeAll(async () => {
    site = await startSite({ env: { LOGIN_RATE_LIMIT: '1000' } });
    alice = await site.createUser();
    const token = (await alice.client.post<CreatedTokenDto>('/api/v1/tokens', { name: 'ui', scope: 'write' }))
      .body.secret;
    home = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-ui-home-'));
    work = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-ui-work-'));
    env = { TRIBUTARY_AGENT_HOME: home };
    const login = await tribInProcess(['login', '--site', site.url, '--token', token], { env, cwd: work });
    expect(login.code, login.stderr).toBe(0);
    // A real transfer for the transfers table, and an object to have a conflict about.
    await fs.writeFile(path.join(work, 'obs.csv'), 'a,b\n1,2\n');
    const put = await tribInProcess(['put', 'obs.csv', alice.user.homePath + '/'], { env, cwd: work });
    expect(put.code, put.stderr).toBe(0);
    const stat = await tribInProcess(['stat', '--json', 'obs.csv'], { env, cwd: work });
    conflictId = await recordUpdateConflict(site, stat.json<EntryDetailDto>().id);
    // A mount as the mount process describes itself (this process stands in for it, so it is alive).
    await fs.mkdir(path.join(home, 'mounts'), { recursive: true });
    const now = new Date().toISOString();
    await fs.writeFile(
      path.join(home, 'mounts', 'm1.json'),
      JSON.stringify({
        id: 'm1',
        pid: process.pid,
        mountpoint: '/mnt/federation',
        remote: '/projects',
        site: site.url,
        state: 'mounted',
        startedAt: now,
        updatedAt: now,
        stats: { bytesRead: 3 * 1024 * 1024, bytesWritten: 0, operations: 12, errors: 0 },
      }),
    );
    ui = await startUiServer({ env });
    browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: [...CHROMIUM_ARGS],
    });
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await ui?.close();
    await site?.close();
    if (home) await fs.rm(home, { recursive: true, force: true });
    if (work) await fs.rm(work, { recursive: true, force: true });
  });

  it('binds to 127.0.0.1 and keeps the secret in a 0600 file', async () => {
    expect(ui.origin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const secret = (await fs.readFile(path.join(home, 'ui-secret'), 'utf8')).trim();
    expect(secret).toMatch(/^[0-9a-f]{64}$/);
    expect((await fs.stat(path.join(home, 'ui-secret'))).mode & 0o777).toBe(0o600);
    expect(ui.url).toBe(`${ui.origin}/?secret=${secret}`);
  });

  it('refuses a missing or wrong secret, a foreign Host and a foreign Origin', async () => {
    const page = await browser.newPage();
    try {
      const none = await page.goto(`${ui.origin}/`);
      expect(none?.status()).toBe(401);
      expect(await page.textContent('body')).toContain('trib ui');
      const wrong = await page.goto(`${ui.origin}/?secret=${'0'.repeat(64)}`);
      expect(wrong?.status()).toBe(401);
      const api = await page.goto(`${ui.origin}/api/state`);
      expect(api?.status()).toBe(401);
    } finally {
      await page.close();
    }
    // Requests made outside a browser, to send headers a page cannot.
    const secret = new URL(ui.url).searchParams.get('secret')!;
    const cookie = `trib_ui=${secret}`;
    const http = await import('node:http');
    const raw = (headers: Record<string, string>, method = 'GET', pathname = '/api/state', body?: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port: ui.port, path: pathname, method, headers },
          (res) => {
            res.resume();
            resolve(res.statusCode ?? 0);
          },
        );
        req.on('error', reject);
        req.end(body);
      });
    expect(await raw({ cookie, host: `127.0.0.1:${ui.port}` })).toBe(200);
    expect(await raw({ cookie, host: `evil.example:${ui.port}` })).toBe(421);
    expect(
      await raw(
        {
          cookie,
          host: `127.0.0.1:${ui.port}`,
          origin: 'http://evil.example',
          'content-type': 'application/json',
        },
        'PUT',
        '/api/settings',
        '{"parallel":2}',
      ),
    ).toBe(403);
    expect((await loadConfig(env)).settings.parallel).toBe(16);
  });

  it('shows mounts, transfers, conflicts and settings, decides a conflict and saves a setting', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    try {
      await page.goto(ui.url);
      // The secret was traded for an HttpOnly cookie and dropped from the address bar.
      expect(page.url()).toBe(`${ui.origin}/`);
      const cookies = await context.cookies();
      expect(cookies.find((c) => c.name === 'trib_ui')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });

      await expect.poll(() => page.textContent('#site')).toContain(alice.username);
      const mounts = page.locator('#mounts');
      await expect.poll(() => mounts.textContent()).toContain('/mnt/federation');
      expect(await mounts.textContent()).toContain('mounted');
      expect(await mounts.textContent()).toContain('3.0 MiB');

      const transfers = page.locator('#transfers');
      await expect.poll(() => transfers.textContent()).toContain('obs.csv');
      expect(await transfers.textContent()).toContain('done');
      expect(await transfers.locator('progress').first().getAttribute('value')).not.toBeNull();

      const conflicts = page.locator('#conflicts');
      await expect.poll(() => conflicts.textContent(), { timeout: 15_000 }).toContain('obs.csv');
      expect(await conflicts.textContent()).toContain('tulane');
      await conflicts.getByRole('button', { name: 'Choose tulane' }).click();
      await expect
        .poll(() => conflicts.textContent(), { timeout: 15_000 })
        .toContain('No conflicts need you');
      const decided = await alice.client.get<{ status: string; decision: { action: string } | null }>(
        `/api/v1/conflicts/${conflictId}`,
      );
      expect(decided.body).toMatchObject({ status: 'decided', decision: { action: 'choose' } });

      const form = page.locator('#settings');
      await expect.poll(() => form.locator('input[name=parallel]').inputValue()).toBe('16');
      expect(await form.locator('select[name=site]').inputValue()).toBe('lsu');
      await form.locator('input[name=bufferMiB]').fill('64');
      await form.locator('input[name=cacheTtlSeconds]').fill('30');
      await form.getByRole('button', { name: 'Save' }).click();
      await expect.poll(() => page.textContent('#settings-status')).toBe('Saved.');
      const saved = await loadConfig(env);
      expect(saved.settings).toMatchObject({ bufferMiB: 64, cacheTtlSeconds: 30, parallel: 16 });

      // A value out of range is refused with the reason, and nothing is saved.
      await form
        .locator('input[name=parallel]')
        .evaluate((el: { removeAttribute(name: string): void }) => el.removeAttribute('max'));
      await form.locator('input[name=parallel]').fill('500');
      await form.getByRole('button', { name: 'Save' }).click();
      await expect.poll(() => page.textContent('#settings-status')).toContain('not valid');
      expect((await loadConfig(env)).settings.parallel).toBe(16);
    } finally {
      await context.close();
    }
  });
});
