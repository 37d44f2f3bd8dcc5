import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { expect, test } from './fixtures';
import { createCollection, screenshot, unique } from './helpers';

test('a collection of 5,000 entries opens at once and scrolls to its end, rendering only a window of rows', async ({
  page,
  sites,
  signedIn,
}) => {
  test.setTimeout(120_000);
  const api = sites[0]!;
  const dir = `/home/admin/${unique('many')}`;
  await createCollection(api, dir);
  const count = 5000;
  const batch = await api.http.post(`/api/v1/data/batch?path=${encodeURIComponent(dir)}`, {
    headers: api.csrf,
    multipart: Object.fromEntries(
      Array.from({ length: count }, (_, i) => [
        `f${i}`,
        {
          name: `obj-${String(i).padStart(5, '0')}.dat`,
          mimeType: 'application/octet-stream',
          buffer: Buffer.from(String(i)),
        },
      ]),
    ),
    timeout: 90_000,
  });
  expect(batch.status(), await batch.text()).toBe(201);

  await signedIn(`/browse${dir}`);
  await expect(page.getByText('5,000 entries')).toBeVisible();
  const rendered = await page.locator('tr.row').count();
  expect(rendered).toBeLessThan(100);
  await expect(page.getByRole('table')).toHaveAttribute('aria-rowcount', '5001');

  // Jump to the end: the last page is asked for by offset, not the pages in between; the last entry appears.
  const listed: string[] = [];
  page.on('request', (r) => {
    if (r.url().includes('/api/v1/namespace/children')) listed.push(r.url());
  });
  const scroller = page.getByTestId('drop-zone');
  for (let i = 0; i < 60; i++) {
    await scroller.evaluate((el) => el.scrollTo(0, el.scrollHeight));
    if (await page.getByRole('row', { name: /obj-04999\.dat/ }).isVisible()) break;
    await page.waitForTimeout(250);
  }
  await expect(page.getByRole('row', { name: /obj-04999\.dat/ })).toBeVisible();
  expect(await page.locator('tr.row').count()).toBeLessThan(100);
  expect(
    listed.some((u) => /[?&]offset=4500(&|$)/.test(u)),
    listed.join('\n'),
  ).toBe(true);
  // No page in between was asked for. (A first page or another collection may be listed again
  // meanwhile: listings go stale after 5 s, and on a loaded machine the scrolling takes longer.)
  const pagesBetween = listed.filter((u) => {
    const offset = Number(new URL(u).searchParams.get('offset') ?? 0);
    return offset > 0 && offset < 4500;
  });
  expect(pagesBetween, listed.join('\n')).toEqual([]);
  await screenshot(page, '15-browse-5000-entries-scrolled');

  // Keyboard: sorted afresh by size, End on the first row moves focus to the last entry once its page arrives.
  await page.getByRole('button', { name: /^Size/ }).click();
  await expect(page).toHaveURL(/sort=size/);
  const first = page.getByRole('row', { name: /obj-00000\.dat/ });
  await first.focus();
  await page.keyboard.press('End');
  await expect(page.getByRole('row', { name: /obj-04999\.dat/ })).toBeFocused();
});

test('files dropped on the table upload with per-file progress; a slow upload can be cancelled and retried', async ({
  page,
  signedIn,
}) => {
  test.setTimeout(120_000);
  const dir = unique('drop');
  await signedIn('/');
  await page.getByRole('button', { name: 'New folder' }).click();
  await page.getByLabel('Folder name').fill(dir);
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  await page.getByRole('link', { name: dir }).first().click();
  await expect(page.getByText('This collection is empty')).toBeVisible();

  // Drop two files (as the operating system's file manager would) onto the listing.
  const dataTransfer = await page.evaluateHandle(() => {
    const dt = new DataTransfer();
    dt.items.add(new File(['alpha'], 'dropped-1.txt', { type: 'text/plain' }));
    dt.items.add(new File(['beta!'], 'dropped-2.txt', { type: 'text/plain' }));
    return dt;
  });
  await page.getByTestId('drop-zone').dispatchEvent('dragover', { dataTransfer });
  await page.getByTestId('drop-zone').dispatchEvent('drop', { dataTransfer });
  const uploads = page.getByRole('region', { name: 'Uploads' });
  await expect(uploads.getByRole('status')).toContainText('2 of 2 done');
  await expect(page.getByRole('row', { name: /dropped-1\.txt/ })).toBeVisible();
  await expect(page.getByRole('row', { name: /dropped-2\.txt/ })).toBeVisible();
  await uploads.getByRole('button', { name: 'Clear finished' }).click();

  // Throttle the upload so progress is visible on the way, then cancel and retry.
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Network.enable');
  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: 20,
    downloadThroughput: -1,
    uploadThroughput: 256 * 1024,
  });
  await page
    .getByLabel('Files to upload')
    .setInputFiles([
      { name: 'slow.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(3 * 1024 * 1024, 1) },
    ]);
  const item = uploads.getByTestId('upload-item').filter({ hasText: 'slow.bin' });
  const bar = item.getByRole('progressbar', { name: 'Progress of slow.bin' });
  await expect
    .poll(async () => Number(await bar.getAttribute('value')), { timeout: 20_000 })
    .toBeGreaterThan(0);
  await screenshot(page, '16-upload-in-progress');
  await item.getByRole('button', { name: 'Cancel slow.bin' }).click();
  await expect(item).toContainText('cancelled');
  await expect(page.getByRole('row', { name: /slow\.bin/ })).toHaveCount(0);

  await cdp.send('Network.emulateNetworkConditions', {
    offline: false,
    latency: 0,
    downloadThroughput: -1,
    uploadThroughput: -1,
  });
  await item.getByRole('button', { name: 'Retry slow.bin' }).click();
  await expect(item).toContainText('done', { timeout: 30_000 });
  await expect(page.getByRole('row', { name: /slow\.bin/ })).toContainText('3 MiB');
});

test('a folder picked with the folder chooser uploads with its subfolders', async ({ page, signedIn }) => {
  const local = mkdtempSync(path.join(tmpdir(), 'tributary-e2e-folder-'));
  const root = path.join(local, 'campaign');
  mkdirSync(path.join(root, 'day1'), { recursive: true });
  writeFileSync(path.join(root, 'readme.txt'), 'about the campaign\n');
  writeFileSync(path.join(root, 'day1', 'log.csv'), 't,v\n0,1\n');
  const dir = unique('folder');
  try {
    await signedIn('/');
    await page.getByRole('button', { name: 'New folder' }).click();
    await page.getByLabel('Folder name').fill(dir);
    await page.getByRole('button', { name: 'Create', exact: true }).click();
    await page.getByRole('link', { name: dir }).first().click();
    // Uploads go to the folder shown when the files are picked: wait until it is the new one.
    await expect(page.getByRole('heading', { name: dir, level: 1 })).toBeVisible();
    await page.getByLabel('Folder to upload').setInputFiles(root);
    await expect(page.getByRole('region', { name: 'Uploads' }).getByRole('status')).toContainText(
      '2 of 2 done',
    );
    await page.getByRole('link', { name: 'campaign' }).first().click();
    await expect(page.getByRole('button', { name: 'readme.txt', exact: true })).toBeVisible();
    await page.getByRole('link', { name: 'day1' }).first().click();
    await expect(page.getByRole('button', { name: 'log.csv', exact: true })).toBeVisible();
  } finally {
    rmSync(local, { recursive: true, force: true });
  }
});
