import { describe, expect, it } from 'vitest';
import { homeSite, rankSites, rendezvousKey, wantedSites, type PlacementSite } from './wanted';

const SITES: PlacementSite[] = [
  { id: 'lsu', idRangeStart: 1n, idRangeEnd: 1000n },
  { id: 'tulane', idRangeStart: 1001n, idRangeEnd: 2000n },
  { id: 'uno', idRangeStart: 2001n, idRangeEnd: 3000n },
  { id: 'xavier', idRangeStart: 3001n, idRangeEnd: 4000n },
];

describe('wantedSites', () => {
  it('finds the home site by id range (inclusive ends)', () => {
    expect(homeSite(1n, SITES)).toBe('lsu');
    expect(homeSite(1000n, SITES)).toBe('lsu');
    expect(homeSite(1001n, SITES)).toBe('tulane');
    expect(homeSite(9999n, SITES)).toBeUndefined();
  });

  it('ranks the home site first, then by md5(object:site) ascending', () => {
    const ranked = rankSites(1500n, ['lsu', 'uno', 'tulane', 'xavier'], 'tulane');
    expect(ranked[0]).toBe('tulane');
    const rest = ranked.slice(1);
    const keys = rest.map((s) => rendezvousKey(1500n, s));
    expect([...keys].sort()).toEqual(keys);
    // The key is md5 of "<id>:<site>" in hex, as SQL computes it.
    expect(rendezvousKey(42n, 'lsu')).toBe('8572eb2082b06832113b3a68ecc2873f');
  });

  it('takes the first `copies` candidates of each rule and unites them', () => {
    const id = 2500n; // home: uno
    const all = rankSites(
      id,
      SITES.map((s) => s.id),
      'uno',
    );
    expect(wantedSites(id, [{ copies: 1, sites: null }], SITES)).toEqual(['uno']);
    expect(wantedSites(id, [{ copies: 2, sites: null }], SITES)).toEqual(all.slice(0, 2));
    // A rule limited to sites without the home site ranks them by hash only.
    const outside = ['lsu', 'xavier'];
    const first = rankSites(id, outside, 'uno')[0]!;
    const union = wantedSites(
      id,
      [
        { copies: 1, sites: null },
        { copies: 1, sites: outside },
      ],
      SITES,
    );
    expect(new Set(union)).toEqual(new Set(['uno', first]));
    expect(union[0]).toBe('uno');
  });

  it('ignores unknown sites, caps at the candidates, and is empty without rules', () => {
    expect(wantedSites(5n, [{ copies: 3, sites: ['tulane', 'nowhere'] }], SITES)).toEqual(['tulane']);
    expect(wantedSites(5n, [{ copies: 9, sites: null }], SITES)).toHaveLength(4);
    expect(wantedSites(5n, [], SITES)).toEqual([]);
  });

  it('is the same whatever the order of rules and sites', () => {
    for (let id = 1n; id < 4000n; id += 97n) {
      const rules = [
        { copies: 2, sites: null },
        { copies: 1, sites: ['xavier', 'lsu'] },
      ];
      const a = wantedSites(id, rules, SITES);
      const b = wantedSites(id, [...rules].reverse(), [...SITES].reverse());
      expect(b).toEqual(a);
    }
  });
});
