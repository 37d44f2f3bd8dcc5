/**
 * A long listing as fixed-size pages fetched on demand, so any position (the end, or wherever the
 * scrollbar is dragged) opens with one request instead of every page before it. Pure, so it is
 * unit-tested; `useListing.ts` holds the pages in react-query.
 */

/** Entries per request (the API allows up to 1000). */
export const PAGE_SIZE = 500;

/**
 * The pages that hold rows `start .. end - 1`, widened by `margin` rows either side (so the next page
 * arrives before it scrolls into view), within a listing of `count` rows. Page 0 is always included:
 * it carries the total and anchors the cursor chain.
 */
export function pagesFor(
  start: number,
  end: number,
  count: number,
  pageSize = PAGE_SIZE,
  margin = 100,
): number[] {
  const pages = new Set<number>([0]);
  if (count > 0) {
    const from = Math.max(0, Math.min(start, count) - margin);
    const to = Math.min(count, Math.max(end, start) + margin); // exclusive
    for (let p = Math.floor(from / pageSize); p * pageSize < to; p++) pages.add(p);
  }
  return [...pages].sort((a, b) => a - b);
}

/** How to ask for page `index`: by the cursor the page before it ended with when that one is at hand, else by offset. */
export function pageRequest(
  index: number,
  previous: { nextCursor?: string } | undefined,
  pageSize = PAGE_SIZE,
): { cursor?: string; offset?: number } {
  if (index === 0) return {};
  if (previous?.nextCursor !== undefined) return { cursor: previous.nextCursor };
  return { offset: index * pageSize };
}

/** Row `index` if its page is loaded. */
export function rowAt<T>(
  pages: ReadonlyMap<number, readonly T[]>,
  index: number,
  pageSize = PAGE_SIZE,
): T | undefined {
  return pages.get(Math.floor(index / pageSize))?.[index % pageSize];
}

/** Adds `more` to the wanted pages; the same array when nothing is new (so React state does not churn). */
export function wantPages(current: readonly number[], more: readonly number[]): readonly number[] {
  const missing = more.filter((p) => !current.includes(p));
  return missing.length === 0 ? current : [...current, ...missing].sort((a, b) => a - b);
}
