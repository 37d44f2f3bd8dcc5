/** Callers waiting for the next occurrence of something; `wakeAll` resolves every one of them. */
export class WaitList {
  private waiting: (() => void)[] = [];

  /** Resolves at the next `wakeAll`. */
  next(): Promise<void> {
    return new Promise((resolve) => this.waiting.push(resolve));
  }

  wakeAll(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const wake of waiting) wake();
  }
}
