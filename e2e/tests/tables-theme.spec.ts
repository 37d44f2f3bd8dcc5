import { expect, test } from './fixtures';
import { createCollection, unique } from './helpers';

/**
 * The list tables by keyboard alone (issue 35): a column sorts from its header button (Tab to it,
 * Enter: ascending, again: descending, again: the page's order), and a column's width changes with
 * the arrow keys on the handle at its right edge, the page never scrolling sideways. Then the theme
 * switch: dark chosen in a light browser, kept over a reload, and back to the system's setting.
 */
test('sorts and resizes a list table by keyboard', async ({ page, signedIn, sites }) => {
  // Three users whose names sort one way and whose creation times sort the other.
  const stem = unique('tbl').slice(0, 20);
  const names = [`${stem}-c`, `${stem}-b`, `${stem}-a`];
  for (const username of names) {
    const res = await sites[0]!.http.post('/api/v1/users', {
      data: { username, password: 'a long enough password', displayName: username, isAdmin: false },
      headers: sites[0]!.csrf,
    });
    expect(res.status(), await res.text()).toBe(201);
  }
  await signedIn('/admin');
  const table = page
    .getByRole('table')
    .filter({ has: page.getByRole('columnheader', { name: /^Username/ }) });
  const ours = async () =>
    (await table.getByRole('row').filter({ hasText: stem }).allInnerTexts()).map((t) =>
      t.split('\t')[0]!.trim(),
    );
  await expect.poll(ours).toHaveLength(3);

  const header = table.getByRole('columnheader', { name: /^Username/ });
  const sort = header.getByRole('button', { name: /Username/ });
  await expect(header).toHaveAttribute('aria-sort', 'none');
  await sort.focus();
  await page.keyboard.press('Enter');
  await expect(header).toHaveAttribute('aria-sort', 'ascending');
  expect(await ours()).toEqual([...names].sort());
  await page.keyboard.press('Enter');
  await expect(header).toHaveAttribute('aria-sort', 'descending');
  expect(await ours()).toEqual([...names].sort().reverse());
  // Sorting by another column (creation time) by keyboard: the order they were made in.
  const created = table.getByRole('columnheader', { name: /^Created/ });
  await page.keyboard.press('Tab'); // the Username column's width handle
  await page.keyboard.press('Tab'); // Name's sort button
  await page.keyboard.press('Tab'); // Name's width handle
  await page.keyboard.press('Tab'); // Groups' width handle (Groups does not sort)
  await page.keyboard.press('Tab'); // Created's sort button
  await expect(created.getByRole('button')).toBeFocused();
  await page.keyboard.press('Enter');
  await expect(created).toHaveAttribute('aria-sort', 'ascending');
  await expect(header).toHaveAttribute('aria-sort', 'none');
  expect(await ours()).toEqual(names);

  // Resize the Name column by keyboard: wider by 16 px a press, 64 with Shift, Home gives it back.
  const handle = table.getByRole('separator', { name: 'Width of Name' });
  const nameHeader = table.getByRole('columnheader', { name: /^Name/ });
  await handle.focus();
  await page.keyboard.press('ArrowRight');
  const start = Number(await handle.getAttribute('aria-valuenow'));
  await page.keyboard.press('ArrowRight');
  await page.keyboard.press('Shift+ArrowRight');
  await expect(handle).toHaveAttribute('aria-valuenow', String(start + 16 + 64));
  const width = await nameHeader.evaluate((th) => th.getBoundingClientRect().width);
  expect(Math.abs(width - (start + 80))).toBeLessThanOrEqual(1);
  await page.keyboard.press('ArrowLeft');
  await page.keyboard.press('ArrowLeft');
  await expect(handle).toHaveAttribute('aria-valuenow', String(start + 48));
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  // Narrowed below its text, a cell ends in an ellipsis and keeps its whole text as its title.
  for (let i = 0; i < 12; i++) await page.keyboard.press('ArrowLeft');
  await expect(handle).toHaveAttribute('aria-valuenow', '48');
  const cell = table.getByRole('cell', { name: names[0] }).nth(1);
  await expect(cell).toHaveAttribute('title', names[0]!);
  await expect(cell).toHaveCSS('text-overflow', 'ellipsis');
  await page.keyboard.press('Home');
  await expect(nameHeader).not.toHaveAttribute('style', /width/);
});

test('resizes the browse listing’s columns by keyboard and keeps the widths over a reload', async ({
  page,
  signedIn,
  sites,
}) => {
  const lsu = sites[0]!;
  const dir = `/projects/${unique('widths')}`;
  await createCollection(lsu, dir);
  const name = `${'a-rather-long-file-name-'.repeat(3)}end.txt`;
  const put = await lsu.http.put(`/api/v1/data?path=${encodeURIComponent(`${dir}/${name}`)}`, {
    data: 'hello',
    headers: { ...lsu.csrf, 'content-type': 'text/plain' },
  });
  expect(put.status(), await put.text()).toBe(201);
  await signedIn(`/browse${dir}`);
  const table = page.locator('table.entries');
  await expect(table.getByRole('row', { name: new RegExp(name) })).toBeVisible();
  const handle = table.getByRole('separator', { name: 'Width of Name' });
  const header = table.getByRole('columnheader', { name: /^Name/ });
  await handle.focus();
  await page.keyboard.press('ArrowRight');
  const start = Number(await handle.getAttribute('aria-valuenow'));
  await page.keyboard.press('Shift+ArrowRight');
  await expect(handle).toHaveAttribute('aria-valuenow', String(start + 64));
  const width = await header.evaluate((th) => th.getBoundingClientRect().width);
  expect(Math.abs(width - (start + 64))).toBeLessThanOrEqual(1);
  // Much wider than the page gives it: the listing scrolls sideways in its box, the page does not.
  for (let i = 0; i < 12; i++) await page.keyboard.press('Shift+ArrowRight');
  await expect(handle).toHaveAttribute('aria-valuenow', String(start + 13 * 64));
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  const box = page.getByTestId('drop-zone');
  expect(await box.evaluate((el) => el.scrollWidth > el.clientWidth)).toBe(true);
  // Narrowed to the least: the name ends in an ellipsis, the page does not scroll sideways.
  for (let i = 0; i < 20; i++) await page.keyboard.press('Shift+ArrowLeft');
  await expect(handle).toHaveAttribute('aria-valuenow', '48');
  await expect(table.locator('td.col-name').first()).toHaveCSS('text-overflow', 'ellipsis');
  expect(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth)).toBe(true);
  // Kept in this browser: the same width after a reload.
  await page.reload();
  await expect(table.getByRole('separator', { name: 'Width of Name' })).toHaveAttribute(
    'aria-valuenow',
    '48',
  );
  // Home gives the column back to the browser, and that is kept too.
  await table.getByRole('separator', { name: 'Width of Name' }).focus();
  await page.keyboard.press('Home');
  await page.reload();
  await expect(table.getByRole('separator', { name: 'Width of Name' })).not.toHaveAttribute(
    'aria-valuenow',
    '48',
  );
  expect(await page.evaluate(() => localStorage.getItem('tributary.browse.columns'))).toBe('{}');
});

test('switches to the dark theme and back to the system’s setting', async ({ page, signedIn }) => {
  await page.emulateMedia({ colorScheme: 'light' });
  await signedIn('/trash');
  const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  const light = await background();
  const theme = page.getByRole('combobox', { name: 'Theme' });
  await expect(theme).toHaveValue('system');
  await theme.selectOption('dark');
  await expect(page.locator('html')).toHaveAttribute('data-theme', 'dark');
  const dark = await background();
  expect(dark).not.toBe(light);
  // Dark means a dark background: each channel well below the middle.
  expect(Math.max(...(dark.match(/\d+/g) ?? []).slice(0, 3).map(Number))).toBeLessThan(64);
  await page.reload();
  await expect(page.getByRole('combobox', { name: 'Theme' })).toHaveValue('dark');
  expect(await background()).toBe(dark);
  await page.getByRole('combobox', { name: 'Theme' }).selectOption('system');
  await expect(page.locator('html')).not.toHaveAttribute('data-theme', /.+/);
  expect(await background()).toBe(light);
  // Following the system: a dark system setting turns the page dark without the switch.
  await page.emulateMedia({ colorScheme: 'dark' });
  expect(await background()).toBe(dark);
});
