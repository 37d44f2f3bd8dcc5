import { expect, test } from './fixtures';
import { screenshot, unique } from './helpers';

test('creates a token, shows the secret once with a curl example, uses it over plain HTTP, revokes it', async ({
  page,
  signedIn,
}) => {
  const name = unique('script');
  await signedIn('/tokens');
  await expect(page.getByRole('heading', { name: 'API tokens' })).toBeVisible();

  const form = page.getByRole('group', { name: 'New token' });
  await form.getByLabel('Name').fill(name);
  await form.getByLabel('Scope').selectOption('read');
  await form.getByLabel(/Only this collection/).fill('/home/admin');
  await form.getByRole('button', { name: 'Create token' }).click();

  const secret = (await page.getByTestId('token-secret').textContent()) ?? '';
  expect(secret).toMatch(/^trib_/);
  await expect(page.getByTestId('curl-example')).toContainText(`Authorization: Bearer ${secret}`);
  await expect(page.getByTestId('curl-example')).toContainText(
    '/api/v1/namespace/children?path=%2Fhome%2Fadmin',
  );
  await screenshot(page, '08-token-created');

  // A plain HTTP request with the token, no cookie: Node's fetch.
  const origin = new URL(page.url()).origin;
  const res = await fetch(`${origin}/api/v1/namespace/children?path=%2Fhome%2Fadmin`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  expect(res.status).toBe(200);
  expect(((await res.json()) as { total: number }).total).toBeGreaterThanOrEqual(0);
  // Outside its collection it is refused.
  const outside = await fetch(`${origin}/api/v1/namespace/children?path=%2Fprojects`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  expect(outside.status).toBe(403);

  // The secret is not shown again; the list shows the last use.
  await page.getByRole('button', { name: 'Done' }).click();
  await expect(page.getByTestId('token-secret')).toHaveCount(0);
  await page.reload();
  const row = page.getByTestId('token-row').filter({ hasText: name });
  await expect(row).toContainText('read');
  await expect(row).toContainText('/home/admin');
  await expect(row.getByRole('cell').nth(5)).not.toHaveText('never');
  await screenshot(page, '09-tokens');

  await row.getByRole('button', { name: `Revoke ${name}` }).click();
  await page
    .getByRole('alertdialog', { name: `Revoke the token "${name}"?` })
    .getByRole('button', { name: 'Revoke' })
    .click();
  await expect(row).toContainText('revoked');
  const after = await fetch(`${origin}/api/v1/namespace/children?path=%2Fhome%2Fadmin`, {
    headers: { authorization: `Bearer ${secret}` },
  });
  expect(after.status).toBe(401);
});
