import { WaitList } from './wait-list';

/**
 * Bytes of buffer memory shared by many open files. Read-ahead only takes what is free (it can
 * always fall back to fetching just the request); write-behind waits for its own parts to drain
 * or writes through, so no file ever waits on another file's memory and nothing deadlocks.
 *
 * Buffers given back whole (`give`) are kept idle for a while and lent again by `take` for the
 * same size: a fresh 32 MiB buffer costs its page faults on first touch and, as external memory,
 * pushes V8 towards a full collection; a file read or written after another one reuses the
 * first one's buffers instead. Idle buffers never stand in anyone's way: `tryAcquire` lets them
 * go when it needs their memory, and they are let go after `idleMs` without a taker.
 */
export class MemoryBudget {
  private usedBytes = 0;
  private idleBytes = 0;
  /** Given back and not lent again yet, oldest first. */
  private idleBuffers: { buf: Buffer; since: number }[] = [];
  private idleTimer: NodeJS.Timeout | undefined;
  private readonly releases = new WaitList();

  constructor(
    readonly limitBytes: number,
    readonly idleMs = 5000,
  ) {
    if (!(limitBytes > 0)) throw new RangeError('the memory limit must be positive');
  }

  /** Bytes taken (by `tryAcquire` and `take`) and not given back. */
  get used(): number {
    return this.usedBytes;
  }

  /** Bytes of idle buffers kept for reuse (within the limit, and given up whenever it is needed). */
  get idle(): number {
    return this.idleBytes;
  }

  get free(): number {
    return this.limitBytes - this.usedBytes;
  }

  /** Takes `bytes` if they are free (letting idle buffers go if need be); never waits. */
  tryAcquire(bytes: number): boolean {
    if (bytes > this.free) return false;
    while (this.idleBuffers.length > 0 && this.usedBytes + this.idleBytes + bytes > this.limitBytes)
      this.dropOldestIdle();
    this.usedBytes += bytes;
    return true;
  }

  release(bytes: number): void {
    this.unuse(bytes);
    this.releases.wakeAll();
  }

  /**
   * A buffer of exactly `bytes` with its memory taken: an idle one of that size if there is one,
   * else a new one if the memory is free; undefined otherwise (never waits). Its contents are
   * whatever they were. Hand it back with `give` (or its bytes with `release`).
   */
  take(bytes: number): Buffer | undefined {
    const at = this.idleBuffers.findIndex((idle) => idle.buf.length === bytes);
    if (at >= 0) {
      const { buf } = this.idleBuffers.splice(at, 1)[0]!;
      this.idleBytes -= bytes;
      this.usedBytes += bytes;
      return buf;
    }
    return this.tryAcquire(bytes) ? Buffer.allocUnsafeSlow(bytes) : undefined;
  }

  /**
   * Gives back a buffer from `take` and its memory. The caller must not touch it again (nor may
   * anything still be writing into it): the next `take` of its size lends it out.
   */
  give(buf: Buffer): void {
    this.unuse(buf.length);
    this.idleBuffers.push({ buf, since: Date.now() });
    this.idleBytes += buf.length;
    this.scheduleTrim();
    this.releases.wakeAll();
  }

  /** Resolves at the next release (by any file). */
  released(): Promise<void> {
    return this.releases.next();
  }

  private unuse(bytes: number): void {
    this.usedBytes -= bytes;
    if (this.usedBytes < 0) throw new Error('buffer memory released twice');
  }

  /** Lets the oldest idle buffer go (to the garbage collector). */
  private dropOldestIdle(): void {
    this.idleBytes -= this.idleBuffers.shift()!.buf.length;
  }

  /** Lets idle buffers go once they have waited `idleMs` for a taker. */
  private scheduleTrim(): void {
    if (this.idleTimer || this.idleBuffers.length === 0) return;
    const oldest = this.idleBuffers[0]!.since;
    this.idleTimer = setTimeout(
      () => {
        this.idleTimer = undefined;
        const cutoff = Date.now() - this.idleMs;
        while (this.idleBuffers.length > 0 && this.idleBuffers[0]!.since <= cutoff) this.dropOldestIdle();
        this.scheduleTrim();
      },
      Math.max(0, oldest + this.idleMs - Date.now()),
    );
    // Idle buffers never keep the process alive.
    this.idleTimer.unref();
  }
}
