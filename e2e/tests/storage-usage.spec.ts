import { expect, test } from './fixtures';
import { screenshot, unique } from './helpers';

/**
 * Storage used in a collection (issue 35): opened under the listing, the bars per site and per child
 * folder carry what `GET /api/v1/usage` answers, as labels and as lengths.
 */
test('shows the storage a collection uses per site and per folder as bars', async ({
  page,
  signedIn,
  sites,
}) => {
  const [lsu] = sites as [(typeof sites)[0]];
  const root = `/home/admin/${unique('usage')}`;
  const put = async (path: string, bytes: number) => {
    const res = await lsu.http.put(`/api/v1/data?path=${encodeURIComponent(path)}`, {
      data: Buffer.alloc(bytes, 7),
      headers: { ...lsu.csrf, 'content-type': 'application/octet-stream' },
    });
    expect(res.status(), await res.text()).toBe(201);
  };
  for (const folder of ['raw', 'derived']) {
    const res = await lsu.http.post('/api/v1/namespace/collections', {
      data: { path: `${root}/${folder}`, parents: true },
      headers: lsu.csrf,
    });
    expect(res.status(), await res.text()).toBe(201);
  }
  await put(`${root}/raw/a.bin`, 600);
  await put(`${root}/raw/b.bin`, 300);
  await put(`${root}/derived/c.bin`, 200);
  await put(`${root}/readme.txt`, 50);

  const answer = await lsu.http.get(`/api/v1/usage?path=${encodeURIComponent(root)}&children=10`);
  expect(answer.status(), await answer.text()).toBe(200);
  const usage = (await answer.json()) as {
    objects: number;
    bytes: number;
    children: { name: string; bytes: number }[];
    sites: { site: string; bytes: number }[];
  };
  expect(usage).toMatchObject({ objects: 4, bytes: 1150 });
  expect(usage.children.map((c) => [c.name, c.bytes])).toEqual([
    ['raw', 900],
    ['derived', 200],
  ]);

  // The portal's way of writing sizes, for the sizes made here (under 10 KiB).
  const bytes = (n: number) => (n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KiB`);
  await signedIn(`/browse${root}`);
  const panel = page.locator('details.usage');
  await panel.getByText('Storage used').click();
  await expect(page.getByTestId('usage-total')).toHaveText(
    '4 files, 1.1 KiB in all; 1 file (50 B) directly in this folder.',
  );
  for (const [testId, rows] of [
    ['usage-sites', usage.sites.map((s) => ({ label: s.site, bytes: s.bytes }))],
    ['usage-children', usage.children.map((c) => ({ label: c.name, bytes: c.bytes }))],
  ] as const) {
    const chart = page.getByTestId(testId);
    await expect(chart.locator('.recharts-cartesian-axis-tick-value')).toHaveText(rows.map((r) => r.label));
    await expect(chart.locator('.recharts-label-list text')).toHaveText(rows.map((r) => bytes(r.bytes)));
    const widths = await chart
      .locator('.recharts-bar-rectangle path')
      .evaluateAll((bars) => bars.map((b) => (b as SVGGraphicsElement).getBBox().width));
    const top = Math.max(...rows.map((r) => r.bytes));
    rows.forEach((r, i) => expect(widths[i]! / Math.max(...widths)).toBeCloseTo(r.bytes / top, 2));
  }
  await screenshot(page, '25-storage-used');
});
