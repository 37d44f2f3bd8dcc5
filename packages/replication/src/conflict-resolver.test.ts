import { describe, expect, it } from 'vitest';
import {
  compareVersions,
  conflictId,
  LatestTimestampWins,
  type DetectedConflict,
  type HeldVersion,
} from './conflict-resolver';
import type { Change } from './types';

function change(stamp: number, op: Change['o'] = 'U'): Change {
  return {
    t: 'users',
    o: op,
    k: '42',
    d: { id: 42, display_name: `at ${stamp}` },
    s: stamp,
    b: 1,
    bs: 'lsu',
  };
}

function conflict(
  incoming: { site: string; stamp: number; op?: Change['o'] },
  held: Partial<HeldVersion>,
): DetectedConflict {
  return {
    kind: 'update',
    table: 'users',
    key: '42',
    incoming: { site: incoming.site, change: change(incoming.stamp, incoming.op) },
    held: { stamp: null, site: null, deleted: false, row: null, ...held },
  };
}

describe('compareVersions', () => {
  it('orders by stamp first', () => {
    expect(compareVersions({ stamp: 2, site: 'a' }, { stamp: 1, site: 'z' })).toBe(1);
    expect(compareVersions({ stamp: 1, site: 'z' }, { stamp: 2, site: 'a' })).toBe(-1);
  });

  it('breaks a stamp tie by the greater site id', () => {
    expect(compareVersions({ stamp: 5, site: 'uno' }, { stamp: 5, site: 'lsu' })).toBe(1);
    expect(compareVersions({ stamp: 5, site: 'lsu' }, { stamp: 5, site: 'uno' })).toBe(-1);
    expect(compareVersions({ stamp: 5, site: 'tulane' }, { stamp: 5, site: 'tulane' })).toBe(0);
  });

  it('is antisymmetric', () => {
    const versions = [
      { stamp: 1, site: 'lsu' },
      { stamp: 1, site: 'uno' },
      { stamp: 2, site: 'lsu' },
      { stamp: null, site: null },
      { stamp: null, site: 'lsu' },
      { stamp: 1_700_000_000_000_001, site: 'tulane' },
    ];
    for (const a of versions) {
      for (const b of versions) {
        expect(Math.sign(compareVersions(a, b)) + Math.sign(compareVersions(b, a))).toBe(0);
      }
    }
  });

  it('sorts a list into a total order', () => {
    const sorted = [
      { stamp: 3, site: 'lsu' },
      { stamp: 1, site: 'uno' },
      { stamp: null, site: null },
      { stamp: 3, site: 'tulane' },
      { stamp: 1, site: 'lsu' },
    ].sort(compareVersions);
    expect(sorted).toEqual([
      { stamp: null, site: null },
      { stamp: 1, site: 'lsu' },
      { stamp: 1, site: 'uno' },
      { stamp: 3, site: 'lsu' },
      { stamp: 3, site: 'tulane' },
    ]);
  });

  it('a missing version (no stamp) is earlier than any stamped one', () => {
    expect(compareVersions({ stamp: null, site: 'zzz' }, { stamp: 0, site: 'a' })).toBe(-1);
    expect(compareVersions({ stamp: 0, site: null }, { stamp: null, site: 'a' })).toBe(1);
  });

  it('orders realistic microsecond stamps differing by one', () => {
    const t = 1_763_000_000_123_456;
    expect(compareVersions({ stamp: t + 1, site: 'a' }, { stamp: t, site: 'b' })).toBe(1);
  });
});

describe('LatestTimestampWins', () => {
  const resolver = new LatestTimestampWins();

  it('the incoming version wins when it is later', () => {
    const r = resolver.resolve(conflict({ site: 'tulane', stamp: 200 }, { stamp: 100, site: 'lsu' }));
    expect(r.winner).toBe('incoming');
    expect(r.reason).toMatch(/incoming version is later/);
  });

  it('the held version stays when it is later', () => {
    const r = resolver.resolve(conflict({ site: 'tulane', stamp: 100 }, { stamp: 200, site: 'lsu' }));
    expect(r.winner).toBe('held');
    expect(r.reason).toMatch(/held here is later/);
  });

  it('equal stamps go to the greater site id, whichever side it is on', () => {
    expect(resolver.resolve(conflict({ site: 'uno', stamp: 100 }, { stamp: 100, site: 'lsu' })).winner).toBe(
      'incoming',
    );
    expect(resolver.resolve(conflict({ site: 'lsu', stamp: 100 }, { stamp: 100, site: 'uno' })).winner).toBe(
      'held',
    );
  });

  it('decides identically at both sites: exactly one of the two versions wins', () => {
    const pairs: Array<[{ site: string; stamp: number }, { site: string; stamp: number }]> = [
      [
        { site: 'lsu', stamp: 10 },
        { site: 'tulane', stamp: 11 },
      ],
      [
        { site: 'lsu', stamp: 11 },
        { site: 'tulane', stamp: 10 },
      ],
      [
        { site: 'lsu', stamp: 10 },
        { site: 'tulane', stamp: 10 },
      ],
    ];
    for (const [a, b] of pairs) {
      // Site A holds a and receives b; site B holds b and receives a.
      const atA = resolver.resolve(conflict(b, { stamp: a.stamp, site: a.site }));
      const atB = resolver.resolve(conflict(a, { stamp: b.stamp, site: b.site }));
      const survivorAtA = atA.winner === 'incoming' ? b : a;
      const survivorAtB = atB.winner === 'incoming' ? a : b;
      expect(survivorAtA).toEqual(survivorAtB);
    }
  });

  it('a later update beats an earlier delete held here, and an earlier one loses to it', () => {
    const heldDeleted = { stamp: 100, site: 'lsu', deleted: true, row: null };
    expect(resolver.resolve(conflict({ site: 'tulane', stamp: 101 }, heldDeleted)).winner).toBe('incoming');
    expect(resolver.resolve(conflict({ site: 'tulane', stamp: 99 }, heldDeleted)).winner).toBe('held');
  });

  it('an incoming delete wins or loses by its stamp like any change', () => {
    const held = { stamp: 100, site: 'lsu', deleted: false, row: { id: 42 } };
    expect(resolver.resolve(conflict({ site: 'tulane', stamp: 101, op: 'D' }, held)).winner).toBe('incoming');
    expect(resolver.resolve(conflict({ site: 'tulane', stamp: 99, op: 'D' }, held)).winner).toBe('held');
  });

  it('a row with no version here (orphan) loses to nothing: the incoming version wins', () => {
    const r = resolver.resolve({
      ...conflict({ site: 'tulane', stamp: 1 }, { stamp: null, site: null }),
      kind: 'orphan',
    });
    expect(r.winner).toBe('incoming');
  });
});

describe('conflictId', () => {
  const a = { stamp: 1_763_000_000_000_001, site: 'lsu' };
  const b = { stamp: 1_763_000_000_000_002, site: 'tulane' };

  it('is the same whichever side is incoming', () => {
    expect(conflictId('users', '42', a, b)).toBe(conflictId('users', '42', b, a));
  });

  it('is symmetric for a stamp tie broken by site', () => {
    const x = { stamp: 7, site: 'lsu' };
    const y = { stamp: 7, site: 'uno' };
    expect(conflictId('users', '42', x, y)).toBe(conflictId('users', '42', y, x));
  });

  it('is a 32-character hex string', () => {
    expect(conflictId('users', '42', a, b)).toMatch(/^[0-9a-f]{32}$/);
  });

  it('differs for different versions, records or tables', () => {
    const base = conflictId('users', '42', a, b);
    const ids = [
      conflictId('users', '42', a, { ...b, stamp: b.stamp + 1 }),
      conflictId('users', '42', a, { ...b, site: 'uno' }),
      conflictId('users', '42', { ...a, stamp: a.stamp - 1 }, b),
      conflictId('users', '43', a, b),
      conflictId('project_groups', '42', a, b),
      conflictId('users', '42', a, { stamp: null, site: null }),
    ];
    for (const id of ids) expect(id).not.toBe(base);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('handles a missing held version', () => {
    const none = { stamp: null, site: null };
    expect(conflictId('users', '42', none, a)).toBe(conflictId('users', '42', a, none));
  });
});
