import { describe, expect, it } from 'vitest';
import { pageRequest, pagesFor, rowAt, wantPages } from './listingPages';
import { rowWindow } from './virtualRows';

describe('pagesFor', () => {
  it('the first screen needs only page 0', () => {
    expect(pagesFor(0, 40, 100_000)).toEqual([0]);
  });

  it('near a page boundary it asks for the next page ahead of time', () => {
    expect(pagesFor(420, 460, 100_000)).toEqual([0, 1]);
    expect(pagesFor(520, 560, 100_000)).toEqual([0, 1]);
    expect(pagesFor(520, 560, 100_000, 500, 30)).toEqual([0, 1]);
  });

  it('jumping to the end of 100,000 rows asks for the last page (and page 0), not the 199 in between', () => {
    const win = rowWindow({
      scrollTop: 100_000 * 36 - 600,
      viewHeight: 600,
      rowHeight: 36,
      count: 100_000,
      loaded: 500,
    });
    expect(pagesFor(win.start, win.end, 100_000)).toEqual([0, 199]);
  });

  it('a scrollbar drag to 70% asks for the page(s) there', () => {
    const win = rowWindow({
      scrollTop: 0.7 * 100_000 * 36,
      viewHeight: 720,
      rowHeight: 36,
      count: 100_000,
      loaded: 500,
    });
    expect(win.start).toBeGreaterThan(69_000);
    expect(pagesFor(win.start, win.end, 100_000)).toEqual([0, 139, 140]);
  });

  it('stays within the listing', () => {
    expect(pagesFor(0, 0, 0)).toEqual([0]);
    expect(pagesFor(990, 1200, 1000)).toEqual([0, 1]);
    expect(pagesFor(5000, 5100, 1000)).toEqual([0, 1]);
  });
});

describe('pageRequest', () => {
  it('page 0 from the start; a page after a loaded one by its cursor; a page after a gap by offset', () => {
    expect(pageRequest(0, undefined)).toEqual({});
    expect(pageRequest(3, { nextCursor: 'abc' })).toEqual({ cursor: 'abc' });
    expect(pageRequest(140, undefined)).toEqual({ offset: 70_000 });
    // The page before was the last one (no cursor): ask by offset, which answers an empty page.
    expect(pageRequest(2, {})).toEqual({ offset: 1000 });
    expect(pageRequest(2, undefined, 100)).toEqual({ offset: 200 });
  });
});

describe('rowAt and wantPages', () => {
  it('finds rows in sparse pages', () => {
    const pages = new Map<number, string[]>([
      [0, ['a', 'b']],
      [5, ['k', 'l']],
    ]);
    expect(rowAt(pages, 1, 2)).toBe('b');
    expect(rowAt(pages, 10, 2)).toBe('k');
    expect(rowAt(pages, 11, 2)).toBe('l');
    expect(rowAt(pages, 4, 2)).toBeUndefined();
  });

  it('adds only new pages, keeping the array when nothing changes', () => {
    const current = [0, 3];
    expect(wantPages(current, [0, 3])).toBe(current);
    expect(wantPages(current, [2, 3])).toEqual([0, 2, 3]);
  });
});
