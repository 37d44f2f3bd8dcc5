import { afterEach, describe, expect, it, vi } from 'vitest';
import { MemoryBudget } from './memory-budget';

const KiB = 1024;

describe('MemoryBudget', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lends a buffer given back to the next taker of its size, a new one for another size', () => {
    const budget = new MemoryBudget(1024 * KiB);
    const a = budget.take(256 * KiB)!;
    expect(a).toHaveLength(256 * KiB);
    expect(budget.used).toBe(256 * KiB);
    budget.give(a);
    expect(budget.used).toBe(0);
    expect(budget.idle).toBe(256 * KiB);
    const other = budget.take(128 * KiB)!;
    expect(other).not.toBe(a);
    expect(budget.take(256 * KiB)).toBe(a);
    expect(budget.idle).toBe(0);
    expect(budget.used).toBe(384 * KiB);
  });

  it('never lends more than the limit, and lets idle buffers go when their memory is needed', () => {
    const budget = new MemoryBudget(512 * KiB);
    const a = budget.take(256 * KiB)!;
    const b = budget.take(256 * KiB)!;
    expect(budget.take(1)).toBeUndefined();
    budget.give(a);
    budget.give(b);
    expect(budget.idle).toBe(512 * KiB);
    // Idle buffers are not in the way: a different size gets its memory, and what is resident
    // stays within the limit.
    expect(budget.tryAcquire(300 * KiB)).toBe(true);
    expect(budget.used + budget.idle).toBeLessThanOrEqual(512 * KiB);
    expect(budget.idle).toBe(0);
    expect(budget.tryAcquire(300 * KiB)).toBe(false);
  });

  it('lets idle buffers go after idleMs without a taker', () => {
    vi.useFakeTimers();
    const budget = new MemoryBudget(1024 * KiB, 1000);
    budget.give(budget.take(64 * KiB)!);
    vi.advanceTimersByTime(500);
    budget.give(budget.take(32 * KiB)!);
    expect(budget.idle).toBe(96 * KiB);
    vi.advanceTimersByTime(600);
    expect(budget.idle).toBe(32 * KiB);
    vi.advanceTimersByTime(500);
    expect(budget.idle).toBe(0);
  });

  it('wakes those waiting for memory when a buffer is given back, and refuses a second give', async () => {
    const budget = new MemoryBudget(64 * KiB);
    const buf = budget.take(64 * KiB)!;
    const woken = budget.released();
    budget.give(buf);
    await woken;
    expect(budget.tryAcquire(64 * KiB)).toBe(true);
    budget.release(64 * KiB);
    expect(() => budget.release(1)).toThrow(/released twice/);
  });
});
