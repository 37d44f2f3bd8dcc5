/** A half-open byte range `[start, end)`. */
export type ByteRange = readonly [start: number, end: number];

/** A piece of `[start, end)`: `covered` when it lies in the set. */
export interface RangeSegment {
  start: number;
  end: number;
  covered: boolean;
}

/**
 * A set of byte offsets kept as sorted, disjoint, non-adjacent half-open ranges (adjacent or
 * overlapping ranges merge on `add`). Used for the ranges a partial upload session has received
 * (apps/api) and the dirty ranges of a file changed through the mount (apps/agent).
 */
export class ByteRangeSet {
  private items: [number, number][] = [];

  constructor(ranges: Iterable<ByteRange> = []) {
    for (const [start, end] of ranges) this.add(start, end);
  }

  /** The ranges, in order. */
  get ranges(): ByteRange[] {
    return this.items.map(([s, e]) => [s, e] as const);
  }

  get isEmpty(): boolean {
    return this.items.length === 0;
  }

  /** How many bytes the set holds. */
  get bytes(): number {
    return this.items.reduce((sum, [s, e]) => sum + (e - s), 0);
  }

  /** One past the last byte held (0 when empty). */
  get end(): number {
    return this.items.length === 0 ? 0 : this.items[this.items.length - 1]![1];
  }

  /**
   * Adds `[start, end)`, merging with what it touches. An empty range changes nothing. Finds its
   * place by binary search, so a file written in order (one range growing) costs O(log n) a write.
   */
  add(start: number, end: number): void {
    assertRange(start, end);
    if (start === end) return;
    const items = this.items;
    // First range that ends at or after `start` (it may touch or overlap the new one).
    let lo = 0;
    let hi = items.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (items[mid]![1] < start) lo = mid + 1;
      else hi = mid;
    }
    let last = lo;
    let s = start;
    let e = end;
    while (last < items.length && items[last]![0] <= e) {
      s = Math.min(s, items[last]![0]);
      e = Math.max(e, items[last]![1]);
      last++;
    }
    items.splice(lo, last - lo, [s, e]);
  }

  /** True when some byte of `[start, end)` is in the set (never for an empty range). */
  overlaps(start: number, end: number): boolean {
    assertRange(start, end);
    if (start === end) return false;
    return this.items.some(([s, e]) => s < end && start < e);
  }

  /** True when `[start, end)` is exactly one of the ranges. */
  hasExactly(start: number, end: number): boolean {
    return this.items.some(([s, e]) => s === start && e === end);
  }

  /** Drops every byte at or past `size`. */
  truncate(size: number): void {
    assertRange(0, size);
    this.items = this.items.filter(([s]) => s < size).map(([s, e]) => [s, Math.min(e, size)]);
  }

  clear(): void {
    this.items = [];
  }

  /** `[start, end)` cut into consecutive pieces, each wholly in the set or wholly outside it. */
  segments(start: number, end: number): RangeSegment[] {
    assertRange(start, end);
    const out: RangeSegment[] = [];
    let at = start;
    for (const [s, e] of this.items) {
      if (e <= at) continue;
      if (s >= end) break;
      if (s > at) out.push({ start: at, end: s, covered: false });
      const to = Math.min(e, end);
      out.push({ start: Math.max(s, at), end: to, covered: true });
      at = to;
    }
    if (at < end) out.push({ start: at, end, covered: false });
    return out;
  }

  /** The pieces of `[start, end)` not in the set. */
  gaps(start: number, end: number): ByteRange[] {
    return this.segments(start, end)
      .filter((s) => !s.covered)
      .map((s) => [s.start, s.end] as const);
  }
}

function assertRange(start: number, end: number): void {
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || start < 0 || end < start) {
    throw new RangeError(`not a byte range: [${start}, ${end})`);
  }
}

/** `[start, end)` cut into consecutive pieces of at most `max` bytes. */
export function splitRange(start: number, end: number, max: number): ByteRange[] {
  const out: ByteRange[] = [];
  for (let at = start; at < end; at += max) out.push([at, Math.min(end, at + max)]);
  return out;
}
