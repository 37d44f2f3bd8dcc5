import { systemClock, type Clock } from './clock';

export interface PacerOptions {
  /** Bytes per second; 0 (or less) means no limit. */
  bytesPerSecond: number;
  /** Bytes that may pass at once after an idle spell. Default: one second's worth (at least 64 KiB). */
  burstBytes?: number;
  clock?: Clock;
}

/**
 * A token bucket for bytes per second, shared by everything that moves bytes under one budget (the
 * mover's copies, the scrub's hashing). `take(n)` spends n bytes at once and waits out any debt, so
 * a chunk larger than the bucket passes at the rate (never stuck) and concurrent takers queue
 * behind each other's debt: together they keep to the rate.
 */
export class Pacer {
  private rate: number;
  private burst: number;
  private tokens: number;
  private last: number;
  private readonly clock: Clock;

  constructor(options: PacerOptions) {
    this.clock = options.clock ?? systemClock;
    this.rate = Math.max(0, options.bytesPerSecond);
    this.burst = options.burstBytes ?? Math.max(64 * 1024, this.rate);
    this.tokens = this.burst;
    this.last = this.clock.now();
  }

  /** Whether the pacer limits anything. */
  get limited(): boolean {
    return this.rate > 0;
  }

  get bytesPerSecond(): number {
    return this.rate;
  }

  /** Changes the rate (0: no limit); bytes already spent keep their debt. */
  setRate(bytesPerSecond: number, burstBytes?: number): void {
    this.refill();
    this.rate = Math.max(0, bytesPerSecond);
    this.burst = burstBytes ?? Math.max(64 * 1024, this.rate);
    this.tokens = Math.min(this.tokens, this.burst);
  }

  /** How long a take of `bytes` now would wait, in ms (0 when it would pass at once). */
  delayFor(bytes: number): number {
    if (this.rate <= 0) return 0;
    this.refill();
    const after = this.tokens - bytes;
    return after >= 0 ? 0 : Math.ceil((-after / this.rate) * 1000);
  }

  /** Spends `bytes` and resolves when the budget allows them to have passed. */
  async take(bytes: number, signal?: AbortSignal): Promise<void> {
    if (this.rate <= 0 || bytes <= 0) return;
    this.refill();
    this.tokens -= bytes;
    if (this.tokens >= 0) return;
    const wait = Math.ceil((-this.tokens / this.rate) * 1000);
    await this.clock.sleep(wait, signal);
  }

  private refill(): void {
    const now = this.clock.now();
    const elapsed = Math.max(0, now - this.last);
    this.last = now;
    if (this.rate > 0) this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.rate) / 1000);
  }
}
