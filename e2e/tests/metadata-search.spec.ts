import { expect, test } from './fixtures';
import { exchange, screenshot, unique } from './helpers';

test('tags one file and a selection, then searches with completion, inline errors, facets and a saved search', async ({
  page,
  signedIn,
  sites,
}) => {
  test.setTimeout(120_000);
  const project = unique('coast');
  await signedIn('/');

  await page.getByRole('button', { name: 'New folder' }).click();
  await page.getByLabel('Folder name').fill(project);
  await page.getByRole('button', { name: 'Create', exact: true }).click();
  await page.getByRole('link', { name: project }).first().click();
  // Uploads go to the folder shown when the files are picked: wait until it is the new one.
  await expect(page.getByRole('heading', { name: project, level: 1 })).toBeVisible();
  await page.getByLabel('Files to upload').setInputFiles(
    ['a.fits', 'b.fits', 'c.csv'].map((name) => ({
      name,
      mimeType: 'application/octet-stream',
      buffer: Buffer.from(name),
    })),
  );
  await expect(page.getByRole('region', { name: 'Uploads' }).getByRole('status')).toContainText(
    '3 of 3 done',
  );

  // One file's metadata panel: add a triple, edit it.
  await page.getByRole('button', { name: 'a.fits', exact: true }).click();
  await expect(page).toHaveURL(/entry=a\.fits/);
  const details = page.getByRole('complementary', { name: 'Details of a.fits' });
  await expect(details.getByText('No metadata yet.')).toBeVisible();
  const add = details.getByRole('group', { name: 'Add a triple' });
  await add.getByLabel('Attribute').fill('instrument');
  await add.getByLabel('Value').fill('radar');
  await add.getByRole('button', { name: 'Add' }).click();
  await expect(details.getByTestId('triple')).toContainText('radar');
  await details.getByRole('button', { name: 'Edit instrument' }).click();
  await details.getByRole('group', { name: 'Edit instrument' }).getByLabel('Value').fill('lidar');
  await details.getByRole('button', { name: 'Save' }).click();
  await expect(details.getByTestId('triple')).toContainText('lidar');
  // A bad number is caught next to the field.
  await add.getByLabel('Attribute').fill('resolution');
  await add.getByLabel('Type').selectOption('number');
  await add.getByLabel('Value').fill('high');
  await expect(add.getByRole('alert')).toContainText('Not a number');
  await add.getByLabel('Value').fill('0.5');
  await add.getByLabel('Unit').fill('m');
  await add.getByRole('button', { name: 'Add' }).click();
  await expect(details.getByTestId('triple')).toHaveCount(2);
  await screenshot(page, '05-metadata-panel');

  // Bulk: tag the two FITS files at once.
  await page.getByRole('checkbox', { name: 'Select a.fits' }).check();
  await page.getByRole('checkbox', { name: 'Select b.fits' }).check();
  const bulk = page.getByRole('group', { name: 'Tag 2 selected' });
  await bulk.getByLabel('Attribute').fill('project');
  await bulk.getByLabel('Value').fill(project);
  await bulk.getByRole('button', { name: 'Tag selected' }).click();
  await expect(page.getByText('Tagged 2 entries')).toBeVisible();
  await page.getByRole('checkbox', { name: 'Select c.csv' }).check();
  await page.getByRole('checkbox', { name: 'Select a.fits' }).uncheck();
  await page.getByRole('checkbox', { name: 'Select b.fits' }).uncheck();
  const one = page.getByRole('group', { name: 'Tag 1 selected' });
  await one.getByLabel('Attribute').fill('project');
  await one.getByLabel('Value').fill(project);
  await one.getByRole('button', { name: 'Tag selected' }).click();
  await expect(page.getByText('Tagged 1 entry')).toBeVisible();
  await page.getByRole('checkbox', { name: 'Select b.fits' }).check();
  await page.getByRole('checkbox', { name: 'Select c.csv' }).uncheck();
  const kind = page.getByRole('group', { name: 'Tag 1 selected' });
  await kind.getByLabel('Attribute').fill('filetype');
  await kind.getByLabel('Value').fill('fits');
  await kind.getByRole('button', { name: 'Tag selected' }).click();
  await expect(page.getByText('Tagged 1 entry')).toBeVisible();

  // Search: completion of attributes and operators, an inline error, then results. The attribute
  // names come from the API (what exists), not only from what this browser has seen.
  await page.evaluate(() => localStorage.removeItem('tributary.attributes'));
  await page.goto('/search');
  const box = page.getByRole('combobox', { name: 'Query' });
  await box.fill('instr');
  await expect(page.getByRole('option', { name: 'instrument' })).toBeVisible();
  await box.fill('proj');
  await expect(page.getByRole('option', { name: 'project' })).toBeVisible();
  await box.press('Tab');
  await expect(box).toHaveValue('project ');
  await expect(page.getByRole('option', { name: 'between' })).toBeVisible();
  await box.pressSequentially('=');
  await box.press('Escape');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await expect(page.getByRole('alert')).toContainText(/expected a value.*at character 10/);
  await screenshot(page, '06-search-inline-error');
  await box.fill(`project = ${project}`);
  await box.press('Escape');
  await page.getByRole('button', { name: 'Search', exact: true }).click();
  await expect(page).toHaveURL(new RegExp(`/search\\?q=project`));
  await expect(page.getByTestId('search-result')).toHaveCount(3);
  await expect(page.getByText('3 results')).toBeVisible();

  // The facets as bars: per attribute one bar per value, labelled with the count the API gives for
  // it and as long as that count against the longest.
  const counted = await sites[0]!.http.post('/api/v1/metadata/query', {
    data: {
      q: `project = ${project}`,
      limit: 0,
      count: false,
      facets: ['project', 'filetype'],
      facetLimit: 10,
    },
    headers: sites[0]!.csrf,
  });
  expect(counted.status(), await counted.text()).toBe(200);
  const { facets } = (await counted.json()) as {
    facets: Record<string, { value: string | number; count: number }[]>;
  };
  expect(facets.filetype!.length).toBeGreaterThan(0);
  for (const [attribute, values] of Object.entries(facets)) {
    const chart = page.getByRole('group', { name: attribute }).getByTestId('facet-bars');
    await expect(chart.locator('.recharts-label-list text')).toHaveText(values.map((v) => String(v.count)));
    await expect(chart.locator('.recharts-cartesian-axis-tick-value')).toHaveText(
      values.map((v) => String(v.value)),
    );
    const widths = await chart
      .locator('.recharts-bar-rectangle path')
      .evaluateAll((bars) => bars.map((b) => (b as SVGGraphicsElement).getBBox().width));
    const top = Math.max(...values.map((v) => v.count));
    expect(widths.length).toBe(values.length);
    values.forEach((v, i) => expect(widths[i]! / Math.max(...widths)).toBeCloseTo(v.count / top, 2));
  }

  // Facets narrow down: filetype = fits leaves b.fits.
  const facet = page.getByRole('group', { name: 'filetype' });
  await facet.getByRole('button', { name: /Narrow to filetype = fits \(1\)/ }).click();
  await expect(box).toHaveValue(`project = ${project} and filetype = fits`);
  await expect(page.getByTestId('search-result')).toHaveCount(1);
  await expect(page.getByTestId('search-result')).toContainText('b.fits');
  await screenshot(page, '07-search-facets');

  // A search is a link: reload shows the same results. Save it, then run it from the list.
  await page.reload();
  await expect(page.getByTestId('search-result')).toHaveCount(1);
  await page.getByLabel('Save this search as').fill('fits in the project');
  await page.getByRole('button', { name: 'Save', exact: true }).click();
  // Saved by the API: listed once the request has answered, then still there on a fresh page.
  await expect(page.getByRole('button', { name: 'fits in the project', exact: true })).toBeVisible();
  await page.goto('/search');
  await page.getByRole('button', { name: 'fits in the project', exact: true }).click();
  await expect(page.getByTestId('search-result')).toHaveCount(1);

  // A result opens its folder with the file's details.
  await page.getByRole('link', { name: 'b.fits' }).click();
  await expect(page.getByRole('complementary', { name: 'Details of b.fits' })).toBeVisible();
});

test('a saved search follows its owner to another site, and a rename there comes back', async ({
  sites,
  pageAt,
}) => {
  test.setTimeout(120_000);
  const [lsu] = sites;
  const name = unique('fits-anywhere');
  const query = 'filetype = fits and size > 1000';
  const created = await lsu!.http.post('/api/v1/saved-searches', {
    data: { name, query, scope: '/projects' },
    headers: lsu!.csrf,
  });
  expect(created.status(), await created.text()).toBe(201);
  await exchange(sites);

  // At tulane, in the browser: listed, and it runs with its query and scope.
  const page = await pageAt(1, '/search');
  await page.getByRole('button', { name, exact: true }).click();
  await expect(page.getByRole('combobox', { name: 'Query' })).toHaveValue(query);
  await expect(page).toHaveURL(/scope=%2Fprojects/);
  await page.getByRole('button', { name: `Rename saved search ${name}` }).click();
  await page.getByLabel(`New name for ${name}`).fill(`${name}-renamed`);
  await page.getByLabel(`New name for ${name}`).press('Enter');
  await expect(page.getByRole('button', { name: `${name}-renamed`, exact: true })).toBeVisible();
  await screenshot(page, '18-saved-search-at-another-site');

  await exchange(sites);
  const atLsu = await lsu!.http.get('/api/v1/saved-searches');
  const names = ((await atLsu.json()) as { items: Array<{ name: string }> }).items.map((s) => s.name);
  expect(names).toContain(`${name}-renamed`);
  expect(names).not.toContain(name);
});
