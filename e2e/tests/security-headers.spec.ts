import { expect, test, type Page } from '@playwright/test';
import { ADMIN_PASSWORD } from '../global-setup';

/** Messages the browser logs when the Content-Security-Policy blocks something on the page. */
function cspViolations(page: Page): string[] {
  const seen: string[] = [];
  page.on('console', (msg) => {
    if (/Content Security Policy/i.test(msg.text())) seen.push(msg.text());
  });
  return seen;
}

test('the portal and the API docs run under the site Content-Security-Policy with nothing blocked', async ({
  page,
}) => {
  const violations = cspViolations(page);
  const res = await page.goto('/');
  expect(res?.headers()['content-security-policy']).toContain("frame-ancestors 'none'");
  await page.getByLabel(/username/i).fill('admin');
  await page.getByLabel(/password/i).fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: /sign in/i }).click();
  await expect(page.getByRole('link', { name: /home/i }).first()).toBeVisible();
  await page.goto('/search');
  await page.goto('/api/docs');
  await expect(page.locator('.swagger-ui').first()).toBeVisible();
  // The docs' styles applied: the operations are laid out, not raw text.
  await expect(page.locator('.opblock').first()).toBeVisible();
  expect(violations).toEqual([]);
});
