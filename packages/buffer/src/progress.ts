export interface TransferProgress {
  phase: 'hash' | 'transfer';
  /** Bytes done in this phase. */
  bytes: number;
  total: number;
  /** Recent throughput (bytes per second over the last few seconds). */
  bytesPerSecond: number;
}

export interface TransferRetry {
  reason: 'transient' | 'checksum' | 'offset';
  attempt: number;
  error: unknown;
}

/** Counts bytes and derives a bandwidth over a sliding window, for progress bars. */
export class ProgressMeter {
  private bytes = 0;
  private readonly samples: { at: number; bytes: number }[] = [];

  constructor(
    private readonly phase: TransferProgress['phase'],
    private readonly total: number,
    private readonly listener?: (progress: TransferProgress) => void,
    private readonly windowMs = 3000,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.samples.push({ at: now(), bytes: 0 });
  }

  get done(): number {
    return this.bytes;
  }

  /** Sets the count (e.g. the offset a resumed upload starts at) without counting it as speed. */
  reset(bytes: number): void {
    this.bytes = bytes;
    this.samples.length = 0;
    this.samples.push({ at: this.now(), bytes });
    this.emit();
  }

  add(bytes: number): void {
    this.bytes += bytes;
    const at = this.now();
    this.samples.push({ at, bytes: this.bytes });
    while (this.samples.length > 2 && at - this.samples[0]!.at > this.windowMs) this.samples.shift();
    this.emit();
  }

  bytesPerSecond(): number {
    const first = this.samples[0]!;
    const last = this.samples[this.samples.length - 1]!;
    const seconds = (last.at - first.at) / 1000;
    return seconds > 0 ? (last.bytes - first.bytes) / seconds : 0;
  }

  private emit(): void {
    this.listener?.({
      phase: this.phase,
      bytes: this.bytes,
      total: this.total,
      bytesPerSecond: this.bytesPerSecond(),
    });
  }
}
