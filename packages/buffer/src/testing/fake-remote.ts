import type { RemoteFile } from '../remote-file';

export type RemoteCall =
  | { op: 'read'; offset: number; length: number }
  | { op: 'write'; offset: number; length: number }
  | { op: 'sync' }
  | { op: 'close' }
  | { op: 'abort' };

type FailRule = (call: RemoteCall) => Error | undefined;
/** Decides, after `filled` bytes of a streamed read arrived, whether the transfer breaks off. */
type StreamRule = (call: { offset: number; length: number }, filled: number) => Error | undefined;

export interface FakeRemoteOptions {
  /**
   * Offer `readInto` (the default): reads arrive in `pieceBytes` pieces, one per turn of the
   * event loop, so the buffer can serve requests before a whole window is here. False leaves
   * only `read`, whose bytes arrive all at once.
   */
  streaming?: boolean;
  /** Size of the pieces a streamed read arrives in (default 64 KiB). */
  pieceBytes?: number;
}

/**
 * An in-memory remote file that records every call, for unit tests of the buffer. Reads see
 * exactly what writes have been acknowledged; `delayMs` makes calls asynchronous like a network,
 * and streamed reads (`readInto`) deliver their bytes piece by piece.
 */
export class FakeRemoteFile implements RemoteFile {
  readonly calls: RemoteCall[] = [];
  content: Buffer;
  /** Bytes made durable by the last sync or close. */
  durable: Buffer = Buffer.alloc(0);
  closed = false;
  aborted = false;
  inFlight = 0;
  maxInFlight = 0;
  private rules: FailRule[] = [];
  private streamRules: StreamRule[] = [];
  /** While set, streamed reads stop delivering once this many bytes of a read have arrived. */
  private holdAt: number | undefined;
  private holdWaiters: (() => void)[] = [];
  /** Bytes delivered so far by streamed reads (all calls together). */
  streamedBytes = 0;
  readonly readInto: FakeRemoteFile['streamRead'] | undefined;
  private readonly pieceBytes: number;

  /** Known at open unless `unknownSize` is set, as a FUSE getattr would know it. */
  readonly size: number | undefined;

  constructor(
    initial: Buffer = Buffer.alloc(0),
    private readonly delayMs = 0,
    unknownSize = false,
    options: FakeRemoteOptions = {},
  ) {
    this.content = Buffer.from(initial);
    this.size = unknownSize ? undefined : initial.length;
    this.pieceBytes = options.pieceBytes ?? 64 * 1024;
    this.readInto = options.streaming === false ? undefined : this.streamRead.bind(this);
  }

  /** Makes streamed reads break off when `rule` says so (checked after each piece). */
  breakStreamWhen(rule: StreamRule): void {
    this.streamRules.push(rule);
  }

  /** Streamed reads stop once `bytes` of a read have arrived, until `release`. */
  holdAfter(bytes: number): void {
    this.holdAt = bytes;
  }

  release(): void {
    this.holdAt = undefined;
    const waiters = this.holdWaiters;
    this.holdWaiters = [];
    for (const wake of waiters) wake();
  }

  /** Makes the calls that match `rule` fail (the rule returns the error to throw). */
  failWhen(rule: FailRule): void {
    this.rules.push(rule);
  }

  reads(): { offset: number; length: number }[] {
    return this.calls.flatMap((c) => (c.op === 'read' ? [{ offset: c.offset, length: c.length }] : []));
  }

  writes(): { offset: number; length: number }[] {
    return this.calls.flatMap((c) => (c.op === 'write' ? [{ offset: c.offset, length: c.length }] : []));
  }

  private async enter(call: RemoteCall, signal?: AbortSignal): Promise<void> {
    this.calls.push(call);
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
      else await Promise.resolve();
      if (signal?.aborted) throw new Error('aborted');
      for (const rule of this.rules) {
        const err = rule(call);
        if (err) throw err;
      }
    } finally {
      this.inFlight--;
    }
  }

  async read(offset: number, length: number, signal?: AbortSignal): Promise<Uint8Array> {
    await this.enter({ op: 'read', offset, length }, signal);
    return Buffer.from(this.content.subarray(Math.min(offset, this.content.length), offset + length));
  }

  private async streamRead(
    offset: number,
    target: Uint8Array,
    onProgress: (filled: number) => void,
    signal?: AbortSignal,
  ): Promise<number> {
    const length = target.length;
    const call = { offset, length };
    await this.enter({ op: 'read', ...call }, signal);
    const bytes = Buffer.from(this.content.subarray(Math.min(offset, this.content.length), offset + length));
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      let filled = 0;
      while (filled < bytes.length) {
        while (this.holdAt !== undefined && filled >= this.holdAt)
          await new Promise<void>((resolve) => this.holdWaiters.push(resolve));
        await new Promise((resolve) => setImmediate(resolve));
        if (signal?.aborted) throw new Error('aborted');
        const n = Math.min(this.pieceBytes, bytes.length - filled);
        target.set(bytes.subarray(filled, filled + n), filled);
        filled += n;
        onProgress(filled);
        this.streamedBytes += n;
        for (const rule of this.streamRules) {
          const err = rule(call, filled);
          if (err) throw err;
        }
      }
      return filled;
    } finally {
      this.inFlight--;
    }
  }

  async write(offset: number, data: Uint8Array): Promise<void> {
    const copy = Buffer.from(data);
    await this.enter({ op: 'write', offset, length: data.length });
    const end = offset + copy.length;
    if (end > this.content.length) {
      const grown = Buffer.alloc(end);
      this.content.copy(grown);
      this.content = grown;
    }
    copy.copy(this.content, offset);
  }

  async sync(): Promise<void> {
    await this.enter({ op: 'sync' });
    this.durable = Buffer.from(this.content);
  }

  async close(): Promise<void> {
    await this.enter({ op: 'close' });
    this.durable = Buffer.from(this.content);
    this.closed = true;
  }

  abort(): Promise<void> {
    this.calls.push({ op: 'abort' });
    this.aborted = true;
    return Promise.resolve();
  }
}
