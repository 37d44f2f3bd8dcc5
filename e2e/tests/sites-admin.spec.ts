import { expect, test } from './fixtures';
import { screenshot, signIn, unique } from './helpers';

test('shows replication per peer with a lag chart, and administers users and groups', async ({
  page,
  signedIn,
  sites,
}) => {
  test.setTimeout(90_000);
  await signedIn('/sites');
  await expect(page.getByTestId('this-site')).toHaveText('lsu');
  const peers = page.getByTestId('peer-row');
  await expect(peers).toHaveCount(2);
  await expect(peers.first()).toContainText('tulane');
  await expect(peers.last()).toContainText('uno');
  await page.getByRole('button', { name: 'Run a cycle now' }).click();
  await expect(page.getByRole('button', { name: 'Run a cycle now' })).toBeEnabled();
  // Lag and backlog per peer over the last hours: one line per peer, each with a point per sample the
  // site keeps (GET /api/v1/replication/lag) plus the current reading, which the peer's row shows too.
  const lag = (await (await sites[0]!.http.get('/api/v1/replication/lag?hours=6')).json()) as {
    peers: { peer: string; samples: unknown[] }[];
  };
  for (const name of ['Lag per peer', 'Backlog per peer (changes to send)']) {
    const chart = page.getByRole('figure', { name });
    await expect(chart.locator('.recharts-legend-item-text')).toHaveText(['tulane', 'uno']);
    await expect(chart.locator('.recharts-line')).toHaveCount(2);
    // Recharts draws each line's points in a layer of their own, in the lines' order.
    const dots = chart.locator('.recharts-line-dots');
    await expect(dots).toHaveCount(2);
    for (const [i, peer] of ['tulane', 'uno'].entries()) {
      const kept = lag.peers.find((p) => p.peer === peer)?.samples.length ?? 0;
      expect(kept).toBeGreaterThan(0);
      const points = await dots.nth(i).locator('.recharts-line-dot').count();
      // A cycle may add a sample between the API's answer and the chart's.
      expect(points).toBeGreaterThanOrEqual(kept + 1);
      expect(points).toBeLessThanOrEqual(kept + 3);
      await expect(chart.getByRole('row', { name: new RegExp(`^${peer} ${points} `) })).toHaveCount(1);
    }
  }
  const now = await peers.first().getByRole('cell').nth(3).textContent();
  await expect(
    page.getByRole('figure', { name: 'Lag per peer' }).getByRole('row', { name: /^tulane/ }),
  ).toContainText(now!);
  await screenshot(page, '13-sites');

  const username = unique('maria').slice(0, 30);
  const group = unique('hydro').slice(0, 30);
  await page.getByRole('link', { name: 'Admin', exact: true }).click();
  const newUser = page.getByRole('group', { name: 'New user' });
  await newUser.getByLabel('Username').fill(username);
  await newUser.getByLabel('Display name').fill('Maria Example');
  await newUser.getByLabel('Password').fill('a long enough password');
  await newUser.getByRole('button', { name: 'Create user' }).click();
  await expect(page.getByRole('row', { name: new RegExp(username) })).toBeVisible();
  // A bad username is answered next to the form.
  await newUser.getByLabel('Username').fill('No Spaces Allowed');
  await newUser.getByLabel('Password').fill('a long enough password');
  await newUser.getByRole('button', { name: 'Create user' }).click();
  await expect(page.getByRole('alert').filter({ hasText: /username/ })).toBeVisible();

  await page.getByLabel('New group').fill(group);
  await page.getByRole('button', { name: 'Create group' }).click();
  const card = page.getByRole('article', { name: new RegExp(group) });
  await card.getByLabel('Add member').fill('admin');
  await card.getByRole('button', { name: 'Add' }).click();
  await expect(card).toContainText('admin (member)');
  await card.getByLabel('Add member').fill(username);
  await card.getByRole('button', { name: 'Add' }).click();
  await expect(card).toContainText(`${username} (member)`);
  await screenshot(page, '14-admin');

  // The active group in the header: the new group is offered after the session is read again.
  await page.reload();
  const switcher = page.getByRole('combobox', { name: 'Group' });
  await switcher.selectOption(group);
  await expect(switcher).toHaveValue(group);
  await page.reload();
  await expect(page.getByRole('combobox', { name: 'Group' })).toHaveValue(group);

  // The new user signs in, sees no admin screens, and changes their password on the account page.
  await page.getByRole('button', { name: /sign out/i }).click();
  await signIn(page, 'a long enough password', username);
  await expect(page.getByRole('link', { name: 'Admin', exact: true })).toHaveCount(0);
  await page.getByRole('link', { name: /Your account/ }).click();
  const form = page.getByRole('group', { name: 'Change your password' });
  await form.getByLabel('Current password').fill('a long enough password');
  await form.getByLabel(/New password \(at least/).fill('another long password');
  await form.getByLabel('New password again').fill('another long passwort');
  await expect(form.getByRole('alert')).toContainText('differ');
  await form.getByLabel('New password again').fill('another long password');
  await form.getByRole('button', { name: 'Change password' }).click();
  await expect(page.getByText('Your password has been changed.')).toBeVisible();
  await screenshot(page, '17-account');
  await page.getByRole('button', { name: /sign out/i }).click();
  await signIn(page, 'another long password', username);
});
