import type { RemoteFile } from '../remote-file';

export type RemoteCall =
  | { op: 'read'; offset: number; length: number }
  | { op: 'write'; offset: number; length: number }
  | { op: 'sync' }
  | { op: 'close' }
  | { op: 'abort' };

type FailRule = (call: RemoteCall) => Error | undefined;

/**
 * An in-memory remote file that records every call, for unit tests of the buffer. Reads see
 * exactly what writes have been acknowledged; `delayMs` makes calls asynchronous like a network.
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

  /** Known at open unless `unknownSize` is set, as a FUSE getattr would know it. */
  readonly size: number | undefined;

  constructor(
    initial: Buffer = Buffer.alloc(0),
    private readonly delayMs = 0,
    unknownSize = false,
  ) {
    this.content = Buffer.from(initial);
    this.size = unknownSize ? undefined : initial.length;
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

/** Deterministic pseudo-random bytes. */
export function patternBytes(length: number, seed = 1): Buffer {
  const out = Buffer.allocUnsafe(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}
