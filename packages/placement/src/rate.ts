/**
 * Bytes per second over a sliding window (the last minute by default), in one-second buckets, so
 * the figure is cheap to keep and to read.
 */
export class RateWindow {
  private readonly buckets: number[];
  private readonly stamps: number[];

  constructor(
    private readonly now: () => number,
    private readonly windowSeconds = 60,
  ) {
    this.buckets = new Array<number>(windowSeconds).fill(0);
    this.stamps = new Array<number>(windowSeconds).fill(-1);
  }

  add(bytes: number): void {
    const second = Math.floor(this.now() / 1000);
    const i = second % this.windowSeconds;
    if (this.stamps[i] !== second) {
      this.stamps[i] = second;
      this.buckets[i] = 0;
    }
    this.buckets[i]! += bytes;
  }

  /** Bytes per second over the window (the current, partial second included). */
  perSecond(): number {
    const second = Math.floor(this.now() / 1000);
    let total = 0;
    for (let i = 0; i < this.windowSeconds; i++) {
      const stamp = this.stamps[i]!;
      if (stamp >= 0 && second - stamp < this.windowSeconds) total += this.buckets[i]!;
    }
    return total / this.windowSeconds;
  }
}
