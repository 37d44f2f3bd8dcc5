import { expect, test } from './fixtures';
import { createCollection, exchange, screenshot, unique, type SiteApi } from './helpers';

/**
 * A collection's Copies panel: a placement rule added with copies, sites and a condition is listed,
 * a condition that does not parse is refused in words, the rule is removed after confirmation, and
 * another site is subscribed to the collection.
 */
test('adds a placement rule in the Copies panel, sees it listed, removes it, and subscribes another site', async ({
  page,
  sites,
  signedIn,
}) => {
  test.setTimeout(120_000);
  const [lsu] = sites as [SiteApi, SiteApi, SiteApi];
  // Every site's registration reaches lsu, so all three are offered.
  await exchange(sites);
  const dir = `/projects/${unique('placed')}`;
  await createCollection(lsu, dir);

  await signedIn(`/browse${dir}`);
  const panel = page.getByRole('region', { name: 'Copies', exact: true });
  await expect(panel).toContainText('No placement rules');
  const form = panel.getByRole('group', { name: 'Add a rule' });
  await expect(form.getByRole('checkbox')).toHaveCount(3);
  await form.getByLabel('Number of copies').fill('2');
  await form.getByRole('checkbox', { name: /\(lsu\)/ }).check();
  await form.getByRole('checkbox', { name: /\(tulane\)/ }).check();
  await form.getByLabel('Only objects where (optional)').fill('kind = raw');
  await form.getByRole('button', { name: 'Add rule' }).click();

  const rows = panel.getByTestId('placement-rule');
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText('2 copies among lsu, tulane');
  await expect(rows.first()).toContainText('kind = raw');
  await expect(rows.first()).toContainText('this collection');
  const listed = (await (
    await lsu.http.get(`/api/v1/placement/rules?path=${encodeURIComponent(dir)}`)
  ).json()) as { items: { copies: number; sites: string[] | null }[] };
  expect(listed.items).toMatchObject([{ copies: 2, sites: ['lsu', 'tulane'] }]);

  // A condition that does not parse: the site's refusal, in words, next to the form.
  await form.getByLabel('Only objects where (optional)').fill('size >');
  await form.getByRole('button', { name: 'Add rule' }).click();
  await expect(panel.getByRole('alert')).toContainText('condition:');
  await expect(rows).toHaveCount(1);
  await screenshot(page, '20-copies-panel');

  // Removing asks first; cancelled, the rule stays; confirmed, it goes.
  await rows
    .first()
    .getByRole('button', { name: /Remove/ })
    .click();
  const ask = page.getByRole('alertdialog', { name: /2 copies among lsu, tulane/ });
  await ask.getByRole('button', { name: 'Cancel' }).click();
  await expect(ask).toHaveCount(0);
  await expect(rows).toHaveCount(1);
  await rows
    .first()
    .getByRole('button', { name: /Remove/ })
    .click();
  await ask.getByRole('button', { name: 'Remove' }).click();
  await expect(panel).toContainText('No placement rules');
  const after = (await (
    await lsu.http.get(`/api/v1/placement/rules?path=${encodeURIComponent(dir)}`)
  ).json()) as { total: number };
  expect(after.total).toBe(0);

  // Subscribing tulane to the collection: listed among the rules as a subscription, at the site too.
  const subscribe = panel.getByRole('group', { name: 'Subscribe a site' });
  await subscribe.getByLabel('Subscriber').selectOption('tulane');
  await subscribe.getByRole('button', { name: 'Subscribe' }).click();
  await expect(panel.getByRole('status')).toContainText(`tulane follows ${dir}`);
  await expect(rows).toHaveCount(1);
  await expect(rows.first()).toContainText('a copy at tulane (subscribed)');
  const subscriptions = (await (
    await lsu.http.get(`/api/v1/placement/subscriptions?path=${encodeURIComponent(dir)}`)
  ).json()) as { items: { path: string; site: string }[] };
  expect(subscriptions.items).toMatchObject([{ path: dir, site: 'tulane' }]);
});
