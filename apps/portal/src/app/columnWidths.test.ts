import { describe, expect, it } from 'vitest';
import { MAX_COLUMN_WIDTH, MIN_COLUMN_WIDTH } from './ColumnResizer';
import { readColumnWidths } from './columnWidths';

const stored = (value: string | null) => ({ getItem: () => value });

describe('readColumnWidths', () => {
  it('keeps numeric widths within bounds and drops the rest', () => {
    expect(
      readColumnWidths(
        stored(JSON.stringify({ name: 300, size: 5, owner: 99999, site: 'wide', x: null })),
        'k',
      ),
    ).toEqual({ name: 300, size: MIN_COLUMN_WIDTH, owner: MAX_COLUMN_WIDTH });
  });

  it('reads nothing from nothing, a list or text that is not JSON', () => {
    expect(readColumnWidths(stored(null), 'k')).toEqual({});
    expect(readColumnWidths(stored('[1,2]'), 'k')).toEqual({});
    expect(readColumnWidths(stored('{oops'), 'k')).toEqual({});
  });
});
