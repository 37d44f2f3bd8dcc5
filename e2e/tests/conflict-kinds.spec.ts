import type { Page } from '@playwright/test';
import { expect, test } from './fixtures';
import { createCollection, exchange, screenshot, unique, type SiteApi } from './helpers';

/**
 * Each kind of conflict in people's words (issue 35): what happened in one sentence, the entry it is
 * about, the facts a person compares (internal columns never shown), every contender of a same-name
 * contest, and the list grouping conflicts about one file.
 */

async function put(site: SiteApi, path: string, text: string, overwrite = false): Promise<void> {
  const res = await site.http.put(
    `/api/v1/data?path=${encodeURIComponent(path)}${overwrite ? '&overwrite=true' : ''}`,
    {
      data: Buffer.from(text),
      headers: { ...site.csrf, 'content-type': 'application/octet-stream' },
    },
  );
  expect(res.status(), await res.text()).toBeLessThan(300);
}

/** Nothing on the page names an internal column of the catalog. */
async function expectNoInternalColumns(page: Page): Promise<void> {
  await expect(page.getByRole('main')).not.toContainText(
    /trash_id|updated_at|created_at|updated_by|collection_id|object_id|data_objects|metadata_triples/,
  );
}

test('a change made while another site moved the file to the trash', async ({ page, sites, signedIn }) => {
  test.setTimeout(120_000);
  const [lsu, , uno] = sites as [SiteApi, SiteApi, SiteApi];
  const dir = `/projects/${unique('del')}`;
  await createCollection(lsu, dir);
  await put(lsu, `${dir}/notes.txt`, 'first\n');
  await exchange(sites);
  const trashed = await uno.http.delete(`/api/v1/namespace?path=${encodeURIComponent(`${dir}/notes.txt`)}`, {
    headers: uno.csrf,
  });
  expect(trashed.status(), await trashed.text()).toBe(200);
  await put(lsu, `${dir}/notes.txt`, 'second version, longer\n', true);
  await exchange(sites);

  await signedIn(`/conflicts?kind=delete&path=${encodeURIComponent(dir)}`);
  const row = page.getByTestId('conflict-row');
  await expect(row).toHaveCount(1);
  await expect(row).toContainText('Changed and deleted');
  await expect(row).toContainText('given new contents (23 B) at lsu after it was moved to the trash at uno');
  await row.getByRole('link').click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('Changed and deleted file notes.txt');
  await expect(page.getByTestId('conflict-story')).toHaveText(
    'Given new contents (23 B) at lsu after it was moved to the trash at uno.',
  );
  const diff = page.getByRole('table', { name: 'Versions side by side' });
  await expect(diff.getByRole('row', { name: /^Size/ })).toContainText('23 B');
  await expect(diff.getByRole('row', { name: /^State/ })).toContainText('in the trash');
  await expect(diff.getByRole('row', { name: /^State/ })).toContainText('in place');
  await expectNoInternalColumns(page);
  await screenshot(page, '21-conflict-delete');
});

test('three files with one name created at once: every contender shown, with its bytes', async ({
  page,
  sites,
  signedIn,
}) => {
  test.setTimeout(120_000);
  const [lsu, tulane, uno] = sites as [SiteApi, SiteApi, SiteApi];
  const dir = `/projects/${unique('three')}`;
  await createCollection(lsu, dir);
  await exchange(sites);
  // Different sizes, so each contender can be told apart by its bytes.
  await put(lsu, `${dir}/run.tar.gz`, 'a'.repeat(100));
  await put(tulane, `${dir}/run.tar.gz`, 'b'.repeat(200));
  await put(uno, `${dir}/run.tar.gz`, 'c'.repeat(300));
  await exchange(sites);

  await signedIn(`/conflicts?kind=same-name&path=${encodeURIComponent(dir)}`);
  const rows = page.getByTestId('conflict-row');
  await expect(rows).toHaveCount(2);
  await expect(rows.first()).toContainText('lsu vs tulane vs uno');
  await rows.first().getByRole('link').click();
  await expect(page.getByRole('heading', { level: 1 })).toContainText('Same name created twice');
  await expect(page.getByTestId('conflict-story')).toHaveText(
    'Three files named run.tar.gz were created at once (at lsu, tulane and uno): the one from lsu keeps the name, the others were renamed run_1.tar.gz and run_2.tar.gz.',
  );
  const contenders = page.getByTestId('contender');
  await expect(contenders).toHaveCount(3);
  for (const [name, site, size] of [
    ['run.tar.gz', 'lsu', '100 B'],
    ['run_1.tar.gz', 'tulane', '200 B'],
    ['run_2.tar.gz', 'uno', '300 B'],
  ] as const) {
    const row = contenders.filter({ hasText: name }).filter({ hasText: site });
    await expect(row).toHaveCount(1);
    await expect(row).toContainText(size);
    await expect(row).toContainText('admin');
  }
  await expect(contenders.filter({ hasText: 'run.tar.gz' }).first()).toContainText('kept the name');
  // Each contender's bytes are a download away.
  const href = await page.getByRole('link', { name: 'Download run_2.tar.gz' }).getAttribute('href');
  const bytes = await page.request.get(href ?? '');
  expect(bytes.status()).toBe(200);
  expect((await bytes.body()).toString()).toBe('c'.repeat(300));
  await expectNoInternalColumns(page);
  await screenshot(page, '22-conflict-same-name-three');
});

test('a metadata value changed at two sites, and the same file renamed at both: grouped, each in its words', async ({
  page,
  sites,
  signedIn,
}) => {
  test.setTimeout(120_000);
  const [lsu, tulane] = sites as [SiteApi, SiteApi, SiteApi];
  const dir = `/projects/${unique('meta')}`;
  await createCollection(lsu, dir);
  await put(lsu, `${dir}/a.csv`, 'x,y\n1,2\n');
  const added = await lsu.http.post(`/api/v1/metadata?path=${encodeURIComponent(`${dir}/a.csv`)}`, {
    data: { triples: [{ attribute: 'temperature', value: 12, unit: 'K' }] },
    headers: lsu.csrf,
  });
  expect(added.status(), await added.text()).toBe(201);
  const [triple] = (await added.json()) as Array<{ id: string }>;
  await exchange(sites);
  for (const [site, value] of [
    [lsu, 13],
    [tulane, 14],
  ] as const) {
    const res = await site.http.patch(`/api/v1/metadata/triples/${triple!.id}`, {
      data: { value },
      headers: site.csrf,
    });
    expect(res.status(), await res.text()).toBe(200);
  }
  for (const [site, name] of [
    [lsu, 'a-lsu.csv'],
    [tulane, 'a-tulane.csv'],
  ] as const) {
    const res = await site.http.post('/api/v1/namespace/move', {
      data: { from: `${dir}/a.csv`, to: `${dir}/${name}` },
      headers: site.csrf,
    });
    expect(res.status(), await res.text()).toBe(200);
  }
  await exchange(sites);

  await signedIn(`/conflicts?kind=update&path=${encodeURIComponent(dir)}`);
  const rows = page.getByTestId('conflict-row');
  await expect(rows).toHaveCount(2);
  // One file, two conflicts: listed together, each saying what it is about.
  const fileRow = rows.filter({ hasText: 'file a-tulane.csv' });
  const valueRow = rows.filter({ hasText: 'attribute temperature of' });
  await expect(fileRow).toContainText('renamed to a-lsu.csv at lsu while renamed to a-tulane.csv at tulane');
  await expect(valueRow).toContainText('set to 13 K at lsu while set to 14 K at tulane');
  await expect(page.locator('[data-testid="conflict-row"].grouped')).toHaveCount(1);
  await screenshot(page, '23-conflicts-grouped');
  await valueRow.getByRole('link').click();
  await expect(page.getByRole('heading', { level: 1 })).toHaveText(
    `Changed at two sites attribute temperature of ${dir}/a-tulane.csv`,
  );
  const diff = page.getByRole('table', { name: 'Versions side by side' });
  const valueLine = diff.getByRole('row', { name: /^Value/ });
  await expect(valueLine).toContainText('13');
  await expect(valueLine).toContainText('14');
  // The attribute it is about is in the title, not hidden among the details that agree.
  await expect(diff.getByRole('row', { name: /^Attribute/ })).toHaveCount(0);
  await expect(page.getByRole('link', { name: `${dir}/a-tulane.csv` })).toBeVisible();
  await expectNoInternalColumns(page);
  await screenshot(page, '24-conflict-metadata');
});
