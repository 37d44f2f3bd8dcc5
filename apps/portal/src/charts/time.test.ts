import { describe, expect, it } from 'vitest';
import { MINUTE, timeTicks } from './time';

describe('timeTicks', () => {
  it('puts at most seven round times on the axis, minutes for a short span, hours for a long one', () => {
    const t0 = Date.UTC(2026, 10, 27, 10, 3);
    expect(timeTicks(t0, t0 + 20 * MINUTE)).toEqual(
      [5, 10, 15, 20].map((m) => Date.UTC(2026, 10, 27, 10, m)),
    );
    const six = timeTicks(t0, t0 + 6 * 60 * MINUTE);
    expect(six).toEqual([11, 12, 13, 14, 15, 16].map((h) => Date.UTC(2026, 10, 27, h)));
    for (const span of [1, 7, 45, 90, 300, 700]) {
      const ticks = timeTicks(t0, t0 + span * MINUTE);
      expect(ticks.length).toBeLessThanOrEqual(7);
      expect(ticks.every((t) => t >= t0 && t <= t0 + span * MINUTE)).toBe(true);
    }
  });
});
