/**
 * Which rows of a long listing to render (fixed row height), and whether to fetch the next page.
 * Pure, so it is unit-tested; the table renders spacers above and below the window.
 */
export interface RowWindow {
  start: number;
  end: number;
  /** Height of the spacer above the first rendered row. */
  before: number;
  /** Height of the spacer below the last rendered row. */
  after: number;
  /** The window reaches rows that are not loaded yet. */
  needMore: boolean;
}

export function rowWindow(opts: {
  scrollTop: number;
  viewHeight: number;
  rowHeight: number;
  /** Rows in the whole listing (the API's `total`). */
  count: number;
  /** Rows loaded so far. */
  loaded: number;
  overscan?: number;
  /** Fetch ahead when the window comes this close to the loaded end. */
  prefetch?: number;
}): RowWindow {
  const { scrollTop, viewHeight, rowHeight, count, loaded } = opts;
  const overscan = opts.overscan ?? 10;
  const prefetch = opts.prefetch ?? 40;
  const first = Math.floor(Math.max(0, scrollTop) / rowHeight);
  const last = Math.ceil((Math.max(0, scrollTop) + Math.max(0, viewHeight)) / rowHeight);
  const start = Math.min(count, Math.max(0, first - overscan));
  const end = Math.min(count, Math.max(start, last + overscan));
  return {
    start,
    end,
    before: start * rowHeight,
    after: (count - end) * rowHeight,
    needMore: loaded < count && end + prefetch > loaded,
  };
}
