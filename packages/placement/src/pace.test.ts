import { describe, expect, it } from 'vitest';
import { Pacer } from './pace';
import { FakeClock } from './testing';

describe('Pacer', () => {
  it('lets a burst pass at once, then keeps to the rate', async () => {
    const clock = new FakeClock();
    const pacer = new Pacer({ bytesPerSecond: 1000, burstBytes: 1000, clock });
    await pacer.take(1000);
    expect(clock.now()).toBe(0);
    await pacer.take(500);
    expect(clock.now()).toBe(500);
    await pacer.take(2000);
    expect(clock.now()).toBe(2500);
  });

  it('shares the rate among concurrent takers', async () => {
    const clock = new FakeClock();
    const pacer = new Pacer({ bytesPerSecond: 100, burstBytes: 0, clock });
    // Each taker waits behind the others' debt: three seconds in all, not one in parallel.
    await Promise.all([1, 2, 3].map(() => pacer.take(100)));
    expect(clock.now()).toBe(3000);
  });

  it('does not limit at rate 0, and refills after an idle spell up to the burst', async () => {
    const clock = new FakeClock();
    const free = new Pacer({ bytesPerSecond: 0, clock });
    await free.take(1e12);
    expect(clock.now()).toBe(0);
    const pacer = new Pacer({ bytesPerSecond: 1000, burstBytes: 1000, clock });
    await pacer.take(1000);
    clock.advance(10_000);
    expect(pacer.delayFor(1000)).toBe(0);
    expect(pacer.delayFor(1500)).toBe(500);
  });
});
