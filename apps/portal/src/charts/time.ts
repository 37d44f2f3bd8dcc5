/** The time axis of the charts, pure so it is unit-tested. */

export const MINUTE = 60_000;
const STEPS = [MINUTE, 5 * MINUTE, 10 * MINUTE, 15 * MINUTE, 30 * MINUTE, 60 * MINUTE, 120 * MINUTE];

/** Round times between two, at most seven, a whole number of minutes or hours apart (the time axis). */
export function timeTicks(from: number, to: number): number[] {
  const step = STEPS.find((s) => (to - from) / s <= 6) ?? STEPS.at(-1)!;
  const ticks: number[] = [];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) ticks.push(t);
  return ticks;
}
