import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ByteRangeSet, splitRange } from './byte-ranges';

describe('ByteRangeSet', () => {
  it('merges overlapping and adjacent ranges and keeps them sorted', () => {
    const set = new ByteRangeSet();
    set.add(10, 20);
    set.add(0, 5);
    set.add(30, 40);
    set.add(20, 25);
    set.add(4, 11);
    expect(set.ranges).toEqual([
      [0, 25],
      [30, 40],
    ]);
    expect(set.bytes).toBe(35);
    expect(set.end).toBe(40);
  });

  it('ignores empty ranges and refuses bad ones', () => {
    const set = new ByteRangeSet();
    set.add(3, 3);
    expect(set.isEmpty).toBe(true);
    expect(() => set.add(5, 4)).toThrow(RangeError);
    expect(() => set.add(-1, 4)).toThrow(RangeError);
    expect(() => set.add(0, 1.5)).toThrow(RangeError);
  });

  it('tells overlap apart from adjacency', () => {
    const set = new ByteRangeSet([[10, 20]]);
    expect(set.overlaps(0, 10)).toBe(false);
    expect(set.overlaps(20, 30)).toBe(false);
    expect(set.overlaps(19, 30)).toBe(true);
    expect(set.overlaps(0, 11)).toBe(true);
    expect(set.overlaps(15, 15)).toBe(false);
    expect(set.hasExactly(10, 20)).toBe(true);
    expect(set.hasExactly(10, 19)).toBe(false);
  });

  it('truncates', () => {
    const set = new ByteRangeSet([
      [0, 10],
      [20, 30],
    ]);
    set.truncate(25);
    expect(set.ranges).toEqual([
      [0, 10],
      [20, 25],
    ]);
    set.truncate(20);
    expect(set.ranges).toEqual([[0, 10]]);
    set.truncate(0);
    expect(set.isEmpty).toBe(true);
  });

  it('cuts a span into covered and uncovered segments', () => {
    const set = new ByteRangeSet([
      [5, 10],
      [15, 20],
    ]);
    expect(set.segments(0, 25)).toEqual([
      { start: 0, end: 5, covered: false },
      { start: 5, end: 10, covered: true },
      { start: 10, end: 15, covered: false },
      { start: 15, end: 20, covered: true },
      { start: 20, end: 25, covered: false },
    ]);
    expect(set.segments(7, 17)).toEqual([
      { start: 7, end: 10, covered: true },
      { start: 10, end: 15, covered: false },
      { start: 15, end: 17, covered: true },
    ]);
    expect(set.gaps(0, 12)).toEqual([
      [0, 5],
      [10, 12],
    ]);
    expect(set.segments(3, 3)).toEqual([]);
  });

  it('agrees with a bitmap for any sequence of adds and truncates', () => {
    const op = fc.oneof(
      fc.tuple(fc.constant('add' as const), fc.nat(64), fc.nat(16)),
      fc.tuple(fc.constant('truncate' as const), fc.nat(80), fc.constant(0)),
    );
    fc.assert(
      fc.property(fc.array(op, { maxLength: 30 }), fc.nat(80), fc.nat(16), (ops, qs, ql) => {
        const set = new ByteRangeSet();
        const bits = new Array<boolean>(100).fill(false);
        for (const [kind, a, b] of ops) {
          if (kind === 'add') {
            set.add(a, a + b);
            for (let i = a; i < a + b; i++) bits[i] = true;
          } else {
            set.truncate(a);
            for (let i = a; i < bits.length; i++) bits[i] = false;
          }
        }
        // Disjoint, sorted, non-adjacent.
        const ranges = set.ranges;
        for (let i = 1; i < ranges.length; i++) expect(ranges[i]![0]).toBeGreaterThan(ranges[i - 1]![1]);
        for (let i = 0; i < bits.length; i++) expect(ranges.some(([s, e]) => s <= i && i < e)).toBe(bits[i]);
        expect(set.bytes).toBe(bits.filter(Boolean).length);
        const segments = set.segments(qs, qs + ql);
        let at = qs;
        for (const seg of segments) {
          expect(seg.start).toBe(at);
          for (let i = seg.start; i < seg.end; i++) expect(bits[i]).toBe(seg.covered);
          at = seg.end;
        }
        expect(at).toBe(qs + ql);
        expect(set.overlaps(qs, qs + ql)).toBe(bits.slice(qs, qs + ql).some(Boolean));
      }),
    );
  });
});

describe('splitRange', () => {
  it('cuts into pieces of at most max bytes', () => {
    expect(splitRange(0, 10, 4)).toEqual([
      [0, 4],
      [4, 8],
      [8, 10],
    ]);
    expect(splitRange(5, 5, 4)).toEqual([]);
  });
});
