import { type Page, type PlacementRuleDto } from '@tributary/shared';
import { uniqueName } from '@tributary/testkit';
import { describe, expect, it } from 'vitest';
import { expectStatus } from '../test/test-site';
import { useTwoSites, type TwoSites } from '../test/two-sites';

const RULES = '/api/v1/placement/rules';

/**
 * A rule is a catalog row: set at one site it reaches the other, follows its collection through a
 * rename made at the other site, and its removal there reaches the first.
 */
describe('placement rules across sites', () => {
  let sites: TwoSites;
  const { exchange } = useTwoSites((s) => (sites = s));

  async function rulesAt(site: TwoSites['lsu'], path: string): Promise<PlacementRuleDto[]> {
    return expectStatus(await site.http.get<Page<PlacementRuleDto>>(RULES, { query: { path } }), 200).body
      .items;
  }

  it(
    'replicates a rule, which follows a rename of its collection and whose removal replicates',
    { timeout: 120_000 },
    async () => {
      const { lsu, tulane } = sites;
      const from = `/${uniqueName('placed')}`;
      const to = `/${uniqueName('renamed')}`;
      expectStatus(await lsu.http.post('/api/v1/namespace/collections', { path: from }), 201);
      // Once tulane's registration has reached lsu, both sites are usable there: two copies, one at each.
      await exchange();
      const rule = expectStatus(
        await lsu.http.post<PlacementRuleDto>(RULES, { path: from, copies: 2, sites: ['lsu', 'tulane'] }),
        201,
      ).body;
      await exchange();

      const there = await rulesAt(tulane, from);
      expect(there).toEqual([{ ...rule, inheritedFrom: null }]);
      expectStatus(await tulane.http.post('/api/v1/namespace/move', { from, to }), 200);
      await exchange();
      // A subcollection made after the rename, at the other site, inherits the rule.
      // (Made after it: a rename of a collection that has subcollections leaves their paths stale
      // at the other site, a fault of the catalog's path repair, not of rules.)
      expectStatus(await lsu.http.post('/api/v1/namespace/collections', { path: `${to}/inner` }), 201);
      await exchange();
      for (const site of [lsu, tulane]) {
        expect(
          (await rulesAt(site, to)).map((r) => [r.id, r.path]),
          site.id,
        ).toEqual([[rule.id, to]]);
        expect(
          (await rulesAt(site, `${to}/inner`)).map((r) => r.inheritedFrom),
          site.id,
        ).toEqual([to]);
      }

      expectStatus(await tulane.http.delete(`${RULES}/${rule.id}`), 204);
      await exchange();
      expect(await rulesAt(lsu, to)).toEqual([]);
      const rows = await lsu.query('SELECT 1 FROM placement_rules WHERE id = $1', [rule.id]);
      expect(rows.rowCount).toBe(0);
    },
  );
});
