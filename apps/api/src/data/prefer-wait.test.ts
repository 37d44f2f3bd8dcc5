import { describe, expect, it } from 'vitest';
import { preferredWaitMs } from './data.controller';

describe('Prefer: wait (a download staged from a compound resource’s archive)', () => {
  it('reads wait=<seconds> among other preferences, at most 600 s', () => {
    expect(preferredWaitMs(undefined)).toBe(0);
    expect(preferredWaitMs('')).toBe(0);
    expect(preferredWaitMs('wait=30')).toBe(30_000);
    expect(preferredWaitMs('respond-async, wait=5')).toBe(5_000);
    expect(preferredWaitMs('return=minimal; wait="12"')).toBe(12_000);
    expect(preferredWaitMs('WAIT = 7')).toBe(7_000);
    expect(preferredWaitMs('wait=100000')).toBe(600_000);
    expect(preferredWaitMs('await=9')).toBe(0);
    expect(preferredWaitMs('wait=soon')).toBe(0);
  });
});
