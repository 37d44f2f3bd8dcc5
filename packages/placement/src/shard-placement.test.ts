import { describe, expect, it } from 'vitest';
import { erasureDomains, shardTargets } from './shard-placement';
import { rankSites, type PlacementSite } from './wanted';

const sites: PlacementSite[] = ['a', 'b', 'c', 'd', 'e', 'f'].map((id, i) => ({
  id,
  idRangeStart: BigInt(i + 1) << 48n,
  idRangeEnd: (BigInt(i + 2) << 48n) - 1n,
}));

describe('shardTargets', () => {
  it('puts shard i at the i-th ranked site, the home site first', () => {
    const id = (3n << 48n) + 5n; // created at c
    const targets = shardTargets(id, { k: 4, m: 2, domain: 'site', sites: null }, sites)!;
    expect(targets.map((t) => t.index)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(targets[0]!.site).toBe('c');
    expect(new Set(targets.map((t) => t.site)).size).toBe(6);
    expect(targets.map((t) => t.site)).toEqual(rankSites(id, ['a', 'b', 'c', 'd', 'e', 'f'], 'c'));
  });

  it('is null when there are fewer sites than shards', () => {
    expect(shardTargets(1n, { k: 4, m: 2, domain: 'site', sites: ['a', 'b', 'c'] }, sites)).toBeNull();
    expect(
      shardTargets(1n, { k: 2, m: 1, domain: 'site', sites: ['a', 'b', 'zz', 'c'] }, sites),
    ).toHaveLength(3);
  });

  it('spreads shards over sites before two share a site in the resource domain', () => {
    const resources = ['a', 'b', 'c'].flatMap((site) =>
      [1, 2].map((n) => ({ id: `${site}${n}`, siteId: site })),
    );
    const targets = shardTargets(
      7n,
      { k: 4, m: 2, domain: 'resource', sites: ['a', 'b', 'c'] },
      sites,
      resources,
    )!;
    expect(targets).toHaveLength(6);
    expect(new Set(targets.map((t) => t.resourceId)).size).toBe(6);
    expect(new Set(targets.slice(0, 3).map((t) => t.site)).size).toBe(3);
    expect(
      shardTargets(7n, { k: 4, m: 3, domain: 'resource', sites: ['a', 'b', 'c'] }, sites, resources),
    ).toBeNull();
  });

  it('counts the domains a rule can use', () => {
    const resources = [
      { id: '1', siteId: 'a' },
      { id: '2', siteId: 'a' },
      { id: '3', siteId: 'b' },
    ];
    expect(erasureDomains({ domain: 'site', sites: null }, ['a', 'b'], resources)).toBe(2);
    expect(erasureDomains({ domain: 'resource', sites: null }, ['a', 'b'], resources)).toBe(3);
    expect(erasureDomains({ domain: 'resource', sites: ['b', 'x'] }, ['a', 'b'], resources)).toBe(1);
  });
});
