import { expect, test, type APIRequestContext } from '@playwright/test';
import { ADMIN_PASSWORD } from '../global-setup';
import { screenshot } from './helpers';

/** Signs in over the API and returns a token for setting up data. */
async function adminToken(request: APIRequestContext): Promise<string> {
  const login = await request.post('/api/v1/auth/login', {
    data: { username: 'admin', password: ADMIN_PASSWORD },
  });
  expect(login.status()).toBe(200);
  const { csrfToken } = (await login.json()) as { csrfToken: string };
  const token = await request.post('/api/v1/tokens', {
    data: { name: 'e2e', scope: 'write' },
    headers: { 'x-csrf-token': csrfToken },
  });
  expect(token.status()).toBe(201);
  return ((await token.json()) as { secret: string }).secret;
}

test('signs in, lists the home collection, opens a folder and signs out', async ({ page, request }) => {
  const secret = await adminToken(request);
  const auth = { authorization: `Bearer ${secret}` };
  const mkdir = await request.post('/api/v1/namespace/collections', {
    data: { path: '/home/admin/survey-2026', parents: true },
    headers: auth,
  });
  expect(mkdir.status()).toBe(201);
  const upload = await request.put('/api/v1/data?path=/home/admin/survey-2026/transect-01.csv', {
    data: Buffer.from('x,y\n1,2\n'),
    headers: { ...auth, 'content-type': 'text/csv' },
  });
  expect(upload.status()).toBe(201);

  await page.goto('/');
  await page.getByLabel(/username/i).fill('admin');
  await page.getByLabel(/password/i).fill('wrong password');
  await page.getByRole('button', { name: /sign in/i }).click();
  await expect(page.getByRole('alert')).toContainText(/wrong username or password/i);
  await screenshot(page, '01-sign-in');

  await page.getByLabel(/password/i).fill(ADMIN_PASSWORD);
  await page.getByRole('button', { name: /sign in/i }).click();
  await expect(page.getByRole('heading', { name: 'admin', level: 1 })).toBeVisible();
  await expect(page).toHaveURL(/\/browse\/home\/admin$/);

  await page.getByRole('link', { name: 'survey-2026' }).first().click();
  await expect(page.getByRole('heading', { name: 'survey-2026', level: 1 })).toBeVisible();
  await expect(page).toHaveURL(/\/browse\/home\/admin\/survey-2026$/);
  const row = page.getByRole('row', { name: /transect-01\.csv/ });
  await expect(row).toContainText('8 B');
  await expect(row).toContainText('lsu');

  // A shared link opens the same folder after a reload (the API serves the portal at any portal URL).
  await page.reload();
  await expect(page.getByRole('heading', { name: 'survey-2026', level: 1 })).toBeVisible();

  // Keyboard: rows are focusable, Enter on a collection opens it.
  await page.goto('/browse/home/admin');
  await page.getByRole('row', { name: /survey-2026/ }).focus();
  await page.keyboard.press('Enter');
  await expect(page.getByRole('heading', { name: 'survey-2026', level: 1 })).toBeVisible();

  await page.getByRole('button', { name: /sign out/i }).click();
  await expect(page.getByRole('button', { name: /sign in/i })).toBeVisible();
});
