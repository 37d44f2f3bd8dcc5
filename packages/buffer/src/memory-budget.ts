/**
 * Bytes of buffer memory shared by many open files. Read-ahead only takes what is free (it can
 * always fall back to fetching just the request); write-behind waits for its own parts to drain
 * or writes through, so no file ever waits on another file's memory and nothing deadlocks.
 */
export class MemoryBudget {
  private usedBytes = 0;
  private waiters: (() => void)[] = [];

  constructor(readonly limitBytes: number) {
    if (!(limitBytes > 0)) throw new RangeError('the memory limit must be positive');
  }

  get used(): number {
    return this.usedBytes;
  }

  get free(): number {
    return this.limitBytes - this.usedBytes;
  }

  /** Takes `bytes` if they are free; never waits. */
  tryAcquire(bytes: number): boolean {
    if (bytes > this.free) return false;
    this.usedBytes += bytes;
    return true;
  }

  release(bytes: number): void {
    this.usedBytes -= bytes;
    if (this.usedBytes < 0) throw new Error('buffer memory released twice');
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  /** Resolves at the next release (by any file). */
  released(): Promise<void> {
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}
