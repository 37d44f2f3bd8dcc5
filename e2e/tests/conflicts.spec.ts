import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { createCollection, exchange, screenshot, unique, type SiteApi } from './helpers';

/**
 * The same file renamed at two sites within one replication cycle (the cycle is an hour long; the
 * test runs cycles itself): the conflict is seen and decided in the browser at one site, and the
 * decision is visible in the browser at the other.
 */
test('a rename conflict between two sites, decided in the browser at one, visible at the other', async ({
  page,
  sites,
  signedIn,
  pageAt,
}) => {
  test.setTimeout(180_000);
  const [lsu, tulane] = sites as [SiteApi, SiteApi, SiteApi];
  const dir = `/projects/${unique('rename')}`;
  await createCollection(lsu, dir);
  const put = await lsu.http.put(`/api/v1/data?path=${encodeURIComponent(`${dir}/a.txt`)}`, {
    data: Buffer.from('first version\n'),
    headers: { ...lsu.csrf, 'content-type': 'application/octet-stream' },
  });
  expect(put.status()).toBe(201);
  await exchange(sites);
  expect(
    (await tulane.http.get(`/api/v1/namespace/stat?path=${encodeURIComponent(`${dir}/a.txt`)}`)).status(),
  ).toBe(200);

  // Both renames happen before any exchange: one at lsu, one at tulane, each in its own browser.
  await signedIn(`/browse${dir}`);
  await renameInBrowser(page, 'a.txt', 'from-lsu.txt');
  const tulanePage = await pageAt(1, `/browse${dir}`);
  await renameInBrowser(tulanePage, 'a.txt', 'from-tulane.txt');

  await exchange(sites);

  // At lsu: the badge counts it, the list shows it, the detail shows both versions side by side.
  await page.reload();
  await expect(page.getByTestId('conflicts-badge')).toHaveText(/^[1-9]\d*$/);
  await page.getByRole('link', { name: /^Conflicts/ }).click();
  // At least this one (the other specs' conflicts share the federation).
  await expect(page.getByRole('list', { name: 'Open conflicts by kind' })).toContainText(
    /Changed at two sites: [1-9]/,
  );
  const row = page.getByTestId('conflict-row').filter({ hasText: dir });
  await expect(row).toHaveCount(1);
  await expect(row).toContainText('lsu vs tulane');
  await expect(row).toContainText(
    'renamed to from-lsu.txt at lsu while renamed to from-tulane.txt at tulane',
  );
  await screenshot(page, '10-conflicts');
  await row.getByRole('link').click();
  await expect(page).toHaveURL(/\/conflicts\/[0-9a-f]{32}$/);
  const conflictUrl = new URL(page.url()).pathname;
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(
    'Changed at two sites file from-tulane.txt',
  );
  await expect(page.getByTestId('conflict-story')).toHaveText(
    'Renamed to from-lsu.txt at lsu while renamed to from-tulane.txt at tulane.',
  );
  const diff = page.getByRole('table', { name: 'Versions side by side' });
  await expect(diff.getByRole('columnheader', { name: /Version from lsu/ })).toBeVisible();
  await expect(
    diff.getByRole('columnheader', { name: /Version from tulane.*provisional winner/ }),
  ).toBeVisible();
  const nameRow = diff.getByRole('row', { name: /^Name/ });
  await expect(nameRow).toContainText('from-lsu.txt');
  await expect(nameRow).toContainText('from-tulane.txt');
  await expect(page.getByText(/h \d+ min left/)).toBeVisible();
  // Internal columns are never shown, not even among the details that agree.
  await page.getByRole('button', { name: /Show the \d+ details that agree/ }).click();
  await expect(diff.getByRole('row', { name: /^Folder/ })).toContainText(dir);
  await expect(page.getByRole('main')).not.toContainText(/trash_id|updated_at|created_at|collection_id/);
  await screenshot(page, '11-conflict-detail');

  await page.getByRole('button', { name: 'Choose the version from lsu' }).click();
  await expect(page.getByTestId('conflict-decision')).toContainText('Decided: choose by admin at lsu');
  await expect(page.getByTestId('conflict-status')).toHaveText('decided');

  await exchange(sites);

  // At tulane: the same conflict is decided, and the file carries the chosen name.
  await tulanePage.goto(conflictUrl);
  await expect(tulanePage.getByTestId('conflict-status')).toHaveText('decided');
  await expect(tulanePage.getByTestId('conflict-decision')).toContainText('by admin at lsu');
  await screenshot(tulanePage, '12-conflict-decided-at-other-site');
  await tulanePage.goto(`/browse${dir}`);
  await expect(tulanePage.getByRole('row', { name: /from-lsu\.txt/ })).toBeVisible();
  await expect(tulanePage.getByRole('row', { name: /from-tulane\.txt/ })).toHaveCount(0);
});

async function renameInBrowser(page: Page, from: string, to: string): Promise<void> {
  await page.getByRole('button', { name: `Rename ${from}` }).click();
  await page.getByLabel(`New name for ${from}`).fill(to);
  await page.getByLabel(`New name for ${from}`).press('Enter');
  await expect(page.getByRole('row', { name: new RegExp(to.replace('.', '\\.')) })).toBeVisible();
}

/**
 * The same names created at two sites in one cycle: both files are kept and the later one renamed
 * `name_1` everywhere. At lsu one conflict is settled with a name of the user's choosing, the other in
 * bulk (keep the provisional outcome); tulane ends with the same names.
 */
test('same-name uploads at two sites: one renamed by decision, one kept in bulk, the same at both', async ({
  page,
  sites,
  signedIn,
  pageAt,
}) => {
  test.setTimeout(180_000);
  const [lsu, tulane] = sites as [SiteApi, SiteApi, SiteApi];
  const dir = `/projects/${unique('same')}`;
  await createCollection(lsu, dir);
  await exchange(sites);
  for (const [site, text] of [
    [lsu, 'from lsu'],
    [tulane, 'from tulane'],
  ] as const) {
    for (const name of ['x.csv', 'y.csv']) {
      const put = await site.http.put(`/api/v1/data?path=${encodeURIComponent(`${dir}/${name}`)}`, {
        data: Buffer.from(`${text}\n`),
        headers: { ...site.csrf, 'content-type': 'application/octet-stream' },
      });
      expect(put.status(), await put.text()).toBe(201);
    }
  }
  await exchange(sites);

  await signedIn(`/conflicts?kind=same-name&path=${encodeURIComponent(dir)}`);
  const rows = page.getByTestId('conflict-row');
  await expect(rows).toHaveCount(2);
  await rows
    .filter({ hasText: `${dir}/x` })
    .getByRole('link')
    .click();
  await expect(page.getByRole('heading', { level: 1 })).toContainText('Same name created twice');
  await expect(page.getByTestId('contender')).toHaveCount(2);
  await page.getByLabel('Rename the renamed one to').fill('x-tulane.csv');
  await page.getByRole('button', { name: 'Rename', exact: true }).click();
  await expect(page.getByTestId('conflict-status')).toHaveText('decided');

  await page.goto(`/conflicts?kind=same-name&path=${encodeURIComponent(dir)}`);
  await expect(rows).toHaveCount(1);
  await rows.first().getByRole('checkbox').check();
  await page.getByRole('button', { name: 'Keep provisional winners' }).click();
  await expect(page.getByText('Decided 1.')).toBeVisible();
  await expect(page.getByText('No conflicts here.')).toBeVisible();

  await exchange(sites);
  const tulanePage = await pageAt(1, `/browse${dir}`);
  for (const name of ['x.csv', 'x-tulane.csv', 'y.csv', 'y_1.csv']) {
    await expect(tulanePage.getByRole('button', { name, exact: true })).toBeVisible();
  }
  await expect(tulanePage.getByText('4 entries')).toBeVisible();
  await tulanePage.goto(`/conflicts?status=closed&kind=same-name&path=${encodeURIComponent(dir)}`);
  await expect(tulanePage.getByTestId('conflict-row')).toHaveCount(2);
});
