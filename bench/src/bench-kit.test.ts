import { describe, expect, it } from 'vitest';
import { median, percentile } from './bench-kit';

describe('bench statistics', () => {
  it('percentile is the nearest rank', () => {
    const xs = [5, 1, 4, 2, 3, 10, 9, 8, 7, 6];
    expect(percentile(xs, 0.5)).toBe(5);
    expect(percentile(xs, 0.95)).toBe(10);
    expect(percentile(xs, 0.1)).toBe(1);
    expect(percentile(xs, 0)).toBe(1);
    expect(percentile([], 0.5)).toBeNaN();
  });

  it('median takes the middle, or the mean of the middle two', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNaN();
  });
});
