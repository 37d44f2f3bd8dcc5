import { describe, expect, it } from 'vitest';
import { rowWindow } from './virtualRows';

describe('rowWindow', () => {
  it('renders the visible rows plus overscan, with spacers for the rest', () => {
    const w = rowWindow({
      scrollTop: 3600,
      viewHeight: 360,
      rowHeight: 36,
      count: 100_000,
      loaded: 400,
      overscan: 5,
    });
    expect(w).toMatchObject({
      start: 95,
      end: 115,
      before: 95 * 36,
      after: (100_000 - 115) * 36,
      needMore: false,
    });
  });

  it('asks for more when the window nears the loaded end', () => {
    expect(
      rowWindow({ scrollTop: 0, viewHeight: 600, rowHeight: 36, count: 1000, loaded: 40 }).needMore,
    ).toBe(true);
    expect(rowWindow({ scrollTop: 0, viewHeight: 600, rowHeight: 36, count: 40, loaded: 40 }).needMore).toBe(
      false,
    );
  });

  it('stays within the listing', () => {
    const w = rowWindow({ scrollTop: 1e9, viewHeight: 600, rowHeight: 36, count: 10, loaded: 10 });
    expect(w.end).toBe(10);
    expect(w.after).toBe(0);
    expect(rowWindow({ scrollTop: 0, viewHeight: 600, rowHeight: 36, count: 0, loaded: 0 })).toMatchObject({
      start: 0,
      end: 0,
    });
  });
});
