import type { Clock } from './clock';

/** A clock for tests: sleeping advances time at once (no real waiting). */
export class FakeClock implements Clock {
  constructor(private t = 0) {}
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    this.t += Math.max(0, ms);
    return Promise.resolve();
  }
}
