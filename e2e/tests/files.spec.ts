import { expect, test } from './fixtures';
import { exchange, screenshot, unique } from './helpers';

test('creates folders, uploads with progress, renames, moves by drag and drop, deletes and restores', async ({
  page,
  signedIn,
}) => {
  test.setTimeout(120_000);
  const project = unique('survey');
  await signedIn('/');
  await expect(page).toHaveURL(/\/browse\/home\/admin$/);

  // Create a folder, then one inside it.
  await page.getByRole('button', { name: 'New folder' }).click();
  await page.getByLabel('Folder name').fill(project);
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  await page.getByRole('link', { name: project }).first().click();
  await expect(page.getByRole('heading', { name: project, level: 1 })).toBeVisible();
  await page.getByRole('button', { name: 'New folder' }).click();
  await page.getByLabel('Folder name').fill('archive');
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  await expect(page.getByRole('row', { name: /archive/ })).toBeVisible();

  // Upload three files at once: one large enough to report progress on the way.
  const big = Buffer.alloc(8 * 1024 * 1024, 7);
  await page.getByLabel('Files to upload').setInputFiles([
    { name: 'transect-01.csv', mimeType: 'text/csv', buffer: Buffer.from('x,y\n1,2\n') },
    { name: 'transect-02.csv', mimeType: 'text/csv', buffer: Buffer.from('x,y\n3,4\n5,6\n') },
    { name: 'scan.raw', mimeType: 'application/octet-stream', buffer: big },
  ]);
  const uploads = page.getByRole('region', { name: 'Uploads' });
  await expect(uploads.getByRole('status')).toContainText('3 of 3 done', { timeout: 60_000 });
  await expect(uploads.getByRole('progressbar', { name: 'Overall upload progress' })).toHaveAttribute(
    'value',
    '100',
  );
  await expect(uploads.getByRole('progressbar', { name: 'Progress of scan.raw' })).toHaveAttribute(
    'value',
    '100',
  );
  await expect(page.getByRole('row', { name: /scan\.raw/ })).toContainText('8 MiB');
  await screenshot(page, '02-browse-after-upload');

  // The same name again: a clear message next to the file, and Replace.
  await page
    .getByLabel('Files to upload')
    .setInputFiles([{ name: 'transect-01.csv', mimeType: 'text/csv', buffer: Buffer.from('x,y\n9,9\n') }]);
  const clash = uploads.getByTestId('upload-item').last();
  await expect(clash.getByRole('alert')).toContainText(/already exists/);
  await screenshot(page, '03-upload-name-clash');
  await clash.getByRole('button', { name: /Replace the existing transect-01\.csv/ }).click();
  await expect(clash).toContainText('done');
  await expect(page.getByRole('row', { name: /transect-01\.csv/ })).toContainText('8 B');

  // Rename in place.
  await page.getByRole('button', { name: 'Rename transect-02.csv' }).click();
  await page.getByLabel('New name for transect-02.csv').fill('transect-02-clean.csv');
  await page.getByLabel('New name for transect-02.csv').press('Enter');
  await expect(page.getByRole('row', { name: /transect-02-clean\.csv/ })).toBeVisible();

  // Sorting by size puts the big file last (collections stay first), and the URL says so.
  await page.getByRole('button', { name: /^Size/ }).click();
  await expect(page).toHaveURL(/sort=size/);
  await expect(page.getByRole('row').last()).toContainText('scan.raw');

  // Drag a file onto the folder row: it moves there.
  await page
    .getByRole('row', { name: /transect-02-clean\.csv/ })
    .dragTo(page.getByRole('row', { name: /archive/ }));
  await expect(page.getByRole('row', { name: /transect-02-clean\.csv/ })).toHaveCount(0);
  await page.getByRole('link', { name: 'archive' }).first().click();
  await expect(page.getByRole('row', { name: /transect-02-clean\.csv/ })).toBeVisible();
  await page.goBack();

  // Delete with the keyboard (Delete asks first, in a dialog: Escape says no, then yes), then
  // restore from the trash.
  await page.getByRole('row', { name: /transect-01\.csv/ }).focus();
  await page.keyboard.press('Delete');
  const ask = page.getByRole('alertdialog', { name: 'Move "transect-01.csv" to the trash?' });
  await expect(ask.getByRole('button', { name: 'Cancel' })).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(ask).toHaveCount(0);
  await expect(page.getByRole('row', { name: /transect-01\.csv/ })).toBeFocused();
  await page.keyboard.press('Delete');
  await ask.getByRole('button', { name: 'Move to trash' }).click();
  await expect(page.getByRole('row', { name: /transect-01\.csv/ })).toHaveCount(0);
  await page.getByRole('link', { name: 'Trash' }).click();
  const trashed = page.getByTestId('trash-row').filter({ hasText: `${project}/transect-01.csv` });
  await expect(trashed).toContainText('admin');
  await expect(trashed).toContainText('lsu');
  await screenshot(page, '04-trash');
  await trashed.getByRole('button', { name: /Restore/ }).click();
  await expect(trashed).toHaveCount(0);
  await page.goBack();
  await expect(page.getByRole('row', { name: /transect-01\.csv/ })).toBeVisible();

  // Download: a plain link the browser fetches with its own progress.
  const [download] = await Promise.all([
    page.waitForEvent('download'),
    page.getByRole('link', { name: 'Download transect-01.csv' }).click(),
  ]);
  expect(download.suggestedFilename()).toBe('transect-01.csv');
});

test('purge is offered once every site has applied the delete', async ({ page, sites, signedIn }) => {
  test.setTimeout(120_000);
  const [lsu] = sites;
  const name = `${unique('old')}.dat`;
  const put = await lsu!.http.put(`/api/v1/data?path=${encodeURIComponent(`/home/admin/${name}`)}`, {
    data: Buffer.from('obsolete'),
    headers: { ...lsu!.csrf, 'content-type': 'application/octet-stream' },
  });
  expect(put.status()).toBe(201);
  await signedIn('/browse/home/admin');
  await page.getByRole('row', { name: new RegExp(name.replace('.', '\\.')) }).focus();
  await page.keyboard.press('Delete');
  await page.getByRole('alertdialog').getByRole('button', { name: 'Move to trash' }).click();
  await page.getByRole('link', { name: 'Trash' }).click();
  const row = page.getByTestId('trash-row').filter({ hasText: name });
  await expect(row.getByRole('button', { name: /Purge/ })).toBeDisabled();
  await expect(row).toContainText('purge after every site has it');

  await exchange(sites);
  await page.reload();
  await expect(row.getByRole('button', { name: /Purge/ })).toBeEnabled();
  await row.getByRole('button', { name: /Purge/ }).click();
  const purge = page.getByRole('alertdialog', { name: /for good\?/ });
  await expect(purge).toContainText('This cannot be undone.');
  await purge.getByRole('button', { name: 'Purge' }).click();
  await expect(row).toHaveCount(0);
});

test('a symbolic link is listed with its target and no download; details show mode and file time', async ({
  page,
  sites,
  signedIn,
}) => {
  const [lsu] = sites;
  const dir = `/home/admin/${unique('links')}`;
  const post = async (url: string, data: object, method: 'post' | 'patch' = 'post') => {
    const res = await lsu!.http[method](url, { data, headers: lsu!.csrf });
    expect(res.ok(), await res.text()).toBe(true);
  };
  await post('/api/v1/namespace/collections', { path: dir });
  const put = await lsu!.http.put(`/api/v1/data?path=${encodeURIComponent(`${dir}/run.sh`)}`, {
    data: Buffer.from('#!/bin/sh\n'),
    headers: {
      ...lsu!.csrf,
      'content-type': 'application/octet-stream',
      'x-tributary-mode': '750',
      'x-tributary-mtime': '2001-02-03T04:05:06Z',
    },
  });
  expect(put.status()).toBe(201);
  await post('/api/v1/namespace/symlinks', { path: `${dir}/latest`, target: '../elsewhere/run.sh' });

  await signedIn(`/browse${dir}`);
  const link = page.getByRole('row', { name: /latest/ });
  await expect(link).toContainText('→ ../elsewhere/run.sh');
  await expect(link.getByRole('link', { name: /Download/ })).toHaveCount(0);
  await expect(page.getByRole('link', { name: 'Download run.sh' })).toBeVisible();

  await link.getByRole('button', { name: 'latest', exact: true }).click();
  const details = page.locator('.details');
  await expect(details).toContainText('Link to');
  await expect(details).toContainText('../elsewhere/run.sh');
  await expect(details).toContainText('lrwxrwxrwx (0777)');
  await expect(details.getByRole('link', { name: 'Download' })).toHaveCount(0);

  await page.getByRole('button', { name: 'run.sh', exact: true }).click();
  await expect(details).toContainText('-rwxr-x--- (0750)');
  await expect(details).toContainText('2001');
  await screenshot(page, '19-symlink-and-attributes');
});
