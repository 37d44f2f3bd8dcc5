import { MemoryBudget } from './memory-budget';
import type { RemoteFile } from './remote-file';
import { WaitList } from './wait-list';

const KiB = 1024;
const MiB = 1024 * KiB;
/** How much each next window or part grows while access stays sequential (128 KiB, 2 MiB, 32 MiB). */
const GROWTH = 16;

/**
 * `fixed` is the seed's advance buffer (PetaShare, section 4): one block of `bufferBytes`, filled
 * or sent synchronously inside the request that needs it. `adaptive` adds what the seed left as
 * future work: windows and parts that grow while access stays sequential and shrink when it turns
 * random, asynchronous read-ahead with several windows in flight, and write-behind.
 */
export type BufferMode = 'adaptive' | 'fixed';

export interface AdvanceBufferOptions {
  mode?: BufferMode;
  /** Fixed: the buffer size. Adaptive: the largest read-ahead window and write part. */
  bufferBytes?: number;
  /** Adaptive: the size windows and parts start at, and shrink back to on random access. */
  minBufferBytes?: number;
  /** Adaptive: how many read-ahead windows may be in flight beyond the one being served. */
  readAheadWindows?: number;
  /** Adaptive: write-behind bytes one file may hold (the part being filled, queued and in flight). */
  maxWriteBehindBytes?: number;
  /** Adaptive: write-behind parts sent at a time (in order; 1 waits for each acknowledgement). */
  writesInFlight?: number;
}

export type ResolvedBufferOptions = Required<AdvanceBufferOptions>;

/**
 * Defaults measured on loopback with 10 ms added: each API request costs about 15 ms of server time
 * besides the round trip, so windows and parts grow large (32 MiB) to make that a small share;
 * two windows ahead and two parts in flight hide the round trip.
 */
export const DEFAULT_BUFFER_OPTIONS: Omit<ResolvedBufferOptions, 'maxWriteBehindBytes'> = {
  mode: 'adaptive',
  bufferBytes: 32 * MiB,
  minBufferBytes: 128 * KiB,
  readAheadWindows: 2,
  writesInFlight: 2,
};

export function resolveBufferOptions(options: AdvanceBufferOptions = {}): ResolvedBufferOptions {
  const merged = { ...DEFAULT_BUFFER_OPTIONS, ...options };
  // By default: the part being filled plus those in flight.
  const o: ResolvedBufferOptions = {
    ...merged,
    maxWriteBehindBytes: options.maxWriteBehindBytes ?? (merged.writesInFlight + 1) * merged.bufferBytes,
  };
  if (!(o.bufferBytes > 0)) throw new RangeError('bufferBytes must be positive');
  o.minBufferBytes = Math.min(Math.max(1, o.minBufferBytes), o.bufferBytes);
  o.readAheadWindows = Math.max(1, Math.floor(o.readAheadWindows));
  o.writesInFlight = Math.max(1, Math.floor(o.writesInFlight));
  // A part can always be held while it fills, whatever the configured bound.
  o.maxWriteBehindBytes = Math.max(o.maxWriteBehindBytes, o.bufferBytes);
  return o;
}

/** What a file's buffer is doing right now (for tests, metrics and the benchmark). */
export interface BufferState {
  mode: 'idle' | 'read' | 'write';
  /** Adaptive: size of the next read-ahead window. */
  windowBytes: number;
  /** Adaptive: capacity of the next write part. */
  partBytes: number;
  /** Read-ahead windows held (fetched or in flight). */
  windows: number;
  /** Bytes of the budget this file holds. */
  heldBytes: number;
}

export class FileClosedError extends Error {
  constructor() {
    super('the file is closed');
    this.name = 'FileClosedError';
  }
}

interface Window {
  start: number;
  length: number;
  /** Bytes taken from the memory budget for this window (0 when fetched without a reservation). */
  reserved: number;
  controller: AbortController;
  /**
   * The window's bytes: `[0, filled)` have arrived. The remote file reads them straight into it
   * (`RemoteFile.readInto`). Keeping the pieces a response arrives in instead (one allocation each,
   * 16,384 per GiB, held until read) made V8 run full collections every few tens of milliseconds
   * (external memory pressure), and copying them out of `node:http`'s pieces cost as much CPU as
   * the transfer itself. A window's buffer is reused by the next window (see `spareWindows`), so a
   * sequential read allocates nothing once it runs.
   */
  buf: Buffer;
  /** Let go (dropped or read past): `filled` no longer changes, and `buf` may serve another window once all of it arrived. */
  released: boolean;
  filled: number;
  /** Every byte is here (`filled` is final: shorter than `length` only at the end of the file). */
  done: boolean;
  failure?: Error;
  /** Reads waiting for `need` bytes of this window. */
  waiters: { need: number; wake: () => void }[];
}

interface Part {
  start: number;
  buf: Buffer;
  length: number;
  reserved: number;
}

/**
 * One open file's advance buffer. Exactly one buffer is active at a time: read-ahead windows while
 * reading, a write part (and write-behind queue) while writing. A request outside the buffer, a
 * read while writing, a write while reading, flush, fsync and close synchronise and reset it; a
 * request larger than `bufferBytes` bypasses it.
 *
 * Operations on one file run one at a time, in arrival order (FUSE hands us about two reads in
 * flight; they are served from the same windows). Consistency: a write drops every read-ahead
 * window (also those in flight), and a read first waits until all buffered writes are
 * acknowledged, so no read returns bytes older than this client's own writes.
 */
export class BufferedFile {
  private readonly opts: ResolvedBufferOptions;
  private tail: Promise<unknown> = Promise.resolve();
  /** Operations queued or running; the fast paths below apply only when none are. */
  private pending = 0;
  private closed = false;
  private mode: 'idle' | 'read' | 'write' = 'idle';
  /** Written since the last successful sync. */
  private dirty = false;
  private held = 0;

  // Reading.
  private windows: Window[] = [];
  /**
   * Buffers of windows read past, with their memory still reserved (counted in `held`), for the
   * next windows of the same size. Released when the access stops being sequential, and at close.
   */
  private spareWindows: { buf: Buffer; reserved: number }[] = [];
  private windowBytes: number;
  private lastReadEnd = 0;
  private lastReadLength = 0;
  private sequentialReads = 0;
  /** End of file, once a short read has shown it. */
  private eof: number | undefined;

  // Writing.
  private part: Part | null = null;
  /**
   * An acknowledged full-size part kept (with its memory) for the next one while parts are still
   * in flight: a fresh 32 MiB buffer costs its page faults on first touch, about as much CPU as
   * copying the writes into it (measured: 8 parts of 32 MiB filled 4 KiB at a time took 330 to
   * 530 ms fresh against 145 ms reused). Released as soon as nothing is in flight.
   */
  private spare: Part | null = null;
  private partBytes: number;
  private readonly queue: Part[] = [];
  private writesInFlight = 0;
  private readonly progress = new WaitList();
  /** A background write that failed and has not been reported by flush, fsync or close yet. */
  private failure: Error | undefined;

  constructor(
    private readonly remote: RemoteFile,
    options: AdvanceBufferOptions = {},
    private readonly memory: MemoryBudget = new MemoryBudget(
      resolveBufferOptions(options).maxWriteBehindBytes * 2,
    ),
  ) {
    this.opts = resolveBufferOptions(options);
    this.eof = remote.size;
    this.windowBytes = this.adaptive ? this.opts.minBufferBytes : this.opts.bufferBytes;
    this.partBytes = this.windowBytes;
  }

  private get adaptive(): boolean {
    return this.opts.mode === 'adaptive';
  }

  get state(): BufferState {
    return {
      mode: this.mode,
      windowBytes: this.windowBytes,
      partBytes: this.partBytes,
      windows: this.windows.length,
      heldBytes: this.held,
    };
  }

  /** Reads up to `length` bytes at `offset` (fewer only at the end of the file), as a new buffer. */
  async read(offset: number, length: number): Promise<Uint8Array> {
    checkRange(offset, length);
    const out = Buffer.allocUnsafe(length);
    const n = await this.readInto(offset, out);
    return out.subarray(0, n);
  }

  /**
   * Reads up to `target.length` bytes at `offset` into `target` (fewer only at the end of the
   * file); resolves with the number of bytes read. The buffer's own memory never leaves it.
   */
  readInto(offset: number, target: Uint8Array): Promise<number> {
    const length = target.length;
    checkRange(offset, length);
    const served = this.serveLoaded(offset, target);
    if (served !== undefined) return Promise.resolve(served);
    return this.serial(async () => {
      if (this.mode === 'write') await this.synchroniseWrites(true);
      this.mode = 'read';
      if (length === 0) return 0;
      return this.adaptive ? this.readAdaptive(offset, target) : this.readFixed(offset, target);
    });
  }

  /**
   * Writes `data` at `offset`. Adaptive mode acknowledges at once (write-behind); a failure of the
   * background send is thrown by the next flush, fsync or close (and by every read or write until
   * then). Fixed mode sends synchronously when the buffer is full, as the seed did.
   */
  write(offset: number, data: Uint8Array): Promise<void> {
    checkRange(offset, data.length);
    if (this.appendToPart(offset, data)) return Promise.resolve();
    return this.serial(async () => {
      if (this.failure) throw this.failure;
      if (this.mode === 'read') this.dropWindows();
      this.mode = 'write';
      if (data.length === 0) return;
      this.dirty = true;
      if (this.eof !== undefined) this.eof = Math.max(this.eof, offset + data.length);
      if (this.adaptive) await this.writeAdaptive(offset, data);
      else await this.writeFixed(offset, data);
    });
  }

  /** Sends buffered writes and waits for them; resets the buffer. Throws a pending write failure. */
  flush(): Promise<void> {
    return this.serial(() => this.synchroniseAndReport());
  }

  /** flush, then makes the written bytes durable on the server. */
  fsync(): Promise<void> {
    return this.serial(async () => {
      await this.synchroniseAndReport();
      if (this.dirty) {
        await this.remote.sync();
        this.dirty = false;
      }
    });
  }

  /**
   * Sends everything, closes the remote file (committing what was written) and releases the
   * buffer's memory. When a write failed, the remote file is aborted instead of committed and the
   * failure is thrown. A second close does nothing.
   */
  close(): Promise<void> {
    return this.serial(async () => {
      // Closing twice must not commit twice.
      if (this.closed) return;
      this.closed = true;
      try {
        await this.synchroniseAndReport();
      } catch (err) {
        await this.remote.abort?.().catch(() => undefined);
        throw err;
      } finally {
        this.dropWindows();
        this.releasePart();
      }
      await this.remote.close();
      this.dirty = false;
    }, true);
  }

  // ---- fast paths ----
  // A 4 KiB sequential reader or writer makes 256 calls per MiB. When nothing is queued and the
  // request is served by memory alone, it is served at once, without the serialisation chain:
  // the outcome is the same as if it had gone through it.

  private serveLoaded(offset: number, target: Uint8Array): number | undefined {
    const length = target.length;
    if (!this.adaptive || this.pending > 0 || this.closed || this.mode !== 'read' || length === 0)
      return undefined;
    const end = offset + length;
    let window: Window | undefined;
    for (const w of this.windows) {
      if (offset >= w.start && end <= w.start + w.length) {
        window = w;
        break;
      }
    }
    // Served as soon as the bytes it needs have arrived, even if the rest of the window has not.
    if (!window || end > window.start + window.filled) return undefined;
    this.sequentialReads++;
    this.lastReadEnd = Math.max(this.lastReadEnd, end);
    this.lastReadLength = length;
    // Copied before any window is let go (and its buffer possibly reused).
    const n = this.copyOut(window, offset - window.start, end - window.start, target, 0);
    this.dropConsumedWindows(this.lastReadEnd - 2 * length);
    this.readAhead(this.lastReadEnd, this.lastReadEnd);
    return n;
  }

  private appendToPart(offset: number, data: Uint8Array): boolean {
    const part = this.part;
    if (!this.adaptive || this.pending > 0 || this.closed || this.mode !== 'write' || this.failure)
      return false;
    if (!part || offset !== part.start + part.length || data.length === 0) return false;
    if (part.length + data.length > part.buf.length) return false;
    this.dirty = true;
    if (this.eof !== undefined) this.eof = Math.max(this.eof, offset + data.length);
    part.buf.set(data, part.length);
    part.length += data.length;
    if (part.length === part.buf.length) {
      this.enqueuePart();
      this.partBytes = Math.min(this.partBytes * GROWTH, this.opts.bufferBytes);
    }
    return true;
  }

  // ---- serialisation ----

  private serial<T>(op: () => Promise<T>, closing = false): Promise<T> {
    this.pending++;
    const run = this.tail
      .then(() => {
        if (this.closed && !closing) throw new FileClosedError();
        return op();
      })
      .finally(() => this.pending--);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async synchroniseAndReport(): Promise<void> {
    await this.synchroniseWrites(false);
    this.dropWindows();
    this.mode = 'idle';
    if (this.failure) {
      const failure = this.failure;
      this.failure = undefined;
      throw failure;
    }
  }

  /** Sends the write buffer and waits until every queued part is acknowledged. */
  private async synchroniseWrites(throwFailure: boolean): Promise<void> {
    if (this.adaptive) {
      this.enqueuePart();
      await this.drain();
    } else {
      await this.sendFixedBuffer();
    }
    this.mode = 'idle';
    if (throwFailure && this.failure) throw this.failure;
  }

  // ---- reading, fixed (the seed) ----

  /** The seed's prefetch buffer, kept as one window. */
  private async readFixed(offset: number, target: Uint8Array): Promise<number> {
    const length = target.length;
    if (length > this.opts.bufferBytes) {
      this.dropWindows();
      return copyInto(target, await this.remote.read(offset, length));
    }
    // The seed fills its buffer whole before serving from it.
    const current = this.windows[0];
    if (current) {
      try {
        await this.arrival(current, current.length);
      } catch (err) {
        this.dropWindows();
        throw err;
      }
      const end = current.start + current.filled;
      const atEof = current.filled < current.length;
      if (offset >= current.start && (offset + length <= end || (atEof && offset <= end))) {
        return this.copyOut(
          current,
          offset - current.start,
          Math.min(end, offset + length) - current.start,
          target,
          0,
        );
      }
    }
    // Outside the buffer: fetch a buffer-sized block starting at the request (into the same memory).
    this.dropWindows(true);
    const window = this.issueWindow(offset, this.opts.bufferBytes, length);
    try {
      await this.arrival(window, window.length);
    } catch (err) {
      this.dropWindows();
      throw err;
    }
    return this.copyOut(window, 0, Math.min(length, window.filled), target, 0);
  }

  // ---- reading, adaptive ----

  private async readAdaptive(offset: number, target: Uint8Array): Promise<number> {
    const length = target.length;
    const end = offset + length;
    if (length > this.opts.bufferBytes) {
      // Larger than any window: the request itself is already a large transfer.
      this.dropWindows();
      this.lastReadEnd = end;
      return copyInto(target, await this.remote.read(offset, length));
    }
    if (this.eof !== undefined && offset >= this.eof) {
      this.lastReadEnd = offset;
      return 0;
    }
    const first = this.windows[0];
    const inBuffer = first !== undefined && offset >= first.start && offset < this.windowsEnd();
    let windowsFrom = offset;
    if (!inBuffer) {
      this.dropWindows();
      // FUSE keeps about two reads in flight and they may arrive swapped, so "sequential" allows
      // a small gap either way; a stream that starts just past the last read starts at its end.
      const slack = 2 * Math.max(length, this.lastReadLength, this.opts.minBufferBytes);
      if (offset > this.lastReadEnd && offset - this.lastReadEnd <= slack) windowsFrom = this.lastReadEnd;
      if (Math.abs(offset - this.lastReadEnd) > slack) {
        // Random access: shrink, and fetch just the request (as unbuffered would).
        this.windowBytes = this.opts.minBufferBytes;
        this.partBytes = this.opts.minBufferBytes;
        this.sequentialReads = 0;
        const data = await this.remote.read(offset, length);
        if (data.length < length) this.eof = offset + data.length;
        this.lastReadEnd = offset + data.length;
        this.lastReadLength = length;
        return copyInto(target, data);
      }
    }
    this.sequentialReads++;
    this.readAhead(windowsFrom, end);
    let n: number;
    try {
      n = await this.copyFromWindows(offset, target);
    } catch (err) {
      this.dropWindows();
      throw err;
    }
    this.lastReadEnd = Math.max(this.lastReadEnd, offset + n);
    this.lastReadLength = length;
    // Keep the last couple of requests' worth behind the position for a swapped request.
    this.dropConsumedWindows(this.lastReadEnd - 2 * length);
    // Keep the pipeline full for the next request while the caller uses this one.
    this.readAhead(this.lastReadEnd, this.lastReadEnd);
    return n;
  }

  private windowsEnd(): number {
    const last = this.windows[this.windows.length - 1];
    return last ? last.start + last.length : 0;
  }

  /**
   * Issues windows so that `[offset, end)` is covered and, once the access has proved sequential,
   * several windows beyond it are in flight: at most `readAheadWindows` beyond the one being read
   * (a burst of requests would delay the one the reader needs next; windows grow instead).
   */
  private readAhead(offset: number, end: number): void {
    const depth = this.sequentialReads >= 2 ? this.opts.readAheadWindows : 1;
    const target = Math.max(end, offset + this.windowBytes * depth);
    let next = this.windows.length > 0 ? this.windowsEnd() : offset;
    let ahead = 0;
    for (const w of this.windows) if (w.start + w.length > offset) ahead++;
    while (next < target && (this.eof === undefined || next < this.eof) && (next < end || ahead <= depth)) {
      const window = this.issueWindow(next, this.windowBytes, next < end ? end - next : undefined);
      if (!window) break;
      next += window.length;
      ahead++;
      // Sequential so far: each next window is larger, up to the configured size.
      if (this.sequentialReads >= 2)
        this.windowBytes = Math.min(this.windowBytes * GROWTH, this.opts.bufferBytes);
    }
  }

  /**
   * Starts fetching a window. Without free memory, a window the request needs is fetched anyway at
   * the request's size and without a reservation; pure read-ahead is skipped.
   */
  private issueWindow(start: number, size: number, requiredBytes: number): Window;
  private issueWindow(start: number, size: number, requiredBytes?: number): Window | undefined;
  private issueWindow(start: number, size: number, requiredBytes?: number): Window | undefined {
    let length = size;
    let reserved = 0;
    let buf: Buffer;
    const spareAt = this.spareWindows.findIndex((spare) => spare.buf.length === size);
    if (spareAt >= 0) {
      // Its memory is still reserved (and counted in `held`).
      const spare = this.spareWindows.splice(spareAt, 1)[0]!;
      buf = spare.buf;
      reserved = spare.reserved;
      this.held -= reserved;
    } else {
      const taken = this.memory.take(size);
      if (taken) {
        reserved = size;
        buf = taken;
      } else if (requiredBytes === undefined) {
        return undefined;
      } else {
        length = Math.min(size, requiredBytes);
        buf = Buffer.allocUnsafe(length);
      }
    }
    const controller = new AbortController();
    const window: Window = {
      start,
      length,
      reserved,
      controller,
      buf,
      released: false,
      filled: 0,
      done: false,
      waiters: [],
    };
    let fetched: Promise<number>;
    if (this.remote.readInto) {
      // Read straight into the window's buffer: served from the bytes that have arrived while the
      // rest still travels. A window let go before all of it arrived is aborted (below), and its
      // buffer is reused only once every byte is in, so nothing writes into a buffer in other use.
      fetched = this.remote.readInto(
        start,
        buf.subarray(0, length),
        (filled) => {
          if (window.released) return;
          window.filled = filled;
          this.arrived(window);
        },
        controller.signal,
      );
    } else {
      fetched = this.remote.read(start, length, controller.signal).then((data) => {
        if (!window.released) {
          const n = Math.min(data.length, window.length);
          window.buf.set(n < data.length ? data.subarray(0, n) : data, 0);
          window.filled = n;
        }
        return data.length;
      });
    }
    // Read-ahead nobody waits for may fail or be aborted; that is not an error of the file.
    fetched.then(
      (n) => {
        if (!window.released) {
          window.filled = Math.min(n, length);
          if (n < length) this.eof = Math.min(this.eof ?? Infinity, start + n);
        }
        window.done = true;
        this.arrived(window);
      },
      (error: unknown) => {
        window.failure = error instanceof Error ? error : new Error(String(error));
        window.done = true;
        this.arrived(window);
      },
    );
    this.held += reserved;
    this.windows.push(window);
    return window;
  }

  /** More of a window has arrived (or all of it, or it failed): wakes the reads it satisfies. */
  private arrived(window: Window): void {
    if (window.waiters.length === 0) return;
    const waiting = window.waiters;
    window.waiters = [];
    for (const waiter of waiting) {
      if (window.done || waiter.need <= window.filled) waiter.wake();
      else window.waiters.push(waiter);
    }
  }

  /**
   * Resolves once the window's first `need` bytes have arrived (or the window ended short at the
   * end of the file); rejects if fetching it failed.
   */
  private arrival(window: Window, need: number): Promise<void> {
    if (window.failure) return Promise.reject(window.failure);
    if (window.done || window.filled >= need) return Promise.resolve();
    return new Promise((resolve, reject) => {
      window.waiters.push({
        need,
        wake: () => (window.failure ? reject(window.failure) : resolve()),
      });
    });
  }

  /**
   * Copies `[from, to)` of a window's bytes that have arrived (offsets relative to its start) into
   * `target` at `at`; returns the number copied.
   */
  private copyOut(window: Window, from: number, to: number, target: Uint8Array, at: number): number {
    to = Math.min(to, window.filled);
    if (to <= from) return 0;
    // Buffer#copy takes the range itself: no view is made per call (a 4 KiB reader makes 256 per MiB).
    return window.buf.copy(target, at, from, to);
  }

  private async copyFromWindows(offset: number, target: Uint8Array): Promise<number> {
    const end = offset + target.length;
    let filled = 0;
    for (const window of this.windows) {
      const windowEnd = window.start + window.length;
      if (windowEnd <= offset) continue;
      if (window.start >= end) break;
      const to = Math.min(end, windowEnd) - window.start;
      await this.arrival(window, to);
      // After the wait: the window may have been let go meanwhile (a read behind it moved on).
      if (window.released) throw new Error('a read-ahead window was let go while a read waited for it');
      filled += this.copyOut(window, Math.max(offset, window.start) - window.start, to, target, filled);
      if (window.done && window.filled < window.length) break; // end of file
    }
    return filled;
  }

  /** Releases windows wholly before `position` (and any past the end of the file). */
  private dropConsumedWindows(position: number): void {
    while (this.windows.length > 0) {
      const window = this.windows[0]!;
      const beyondEof = this.eof !== undefined && window.start >= this.eof;
      if (window.start + window.length > position && !beyondEof) break;
      this.windows.shift();
      this.releaseWindow(window);
    }
  }

  /**
   * Lets every window go (aborting those in flight) and the spare buffers with them; with `reuse`
   * (the seed's buffer moving on), a window that arrived whole is kept as a spare instead.
   */
  private dropWindows(reuse = false): void {
    // releaseWindow aborts those still arriving.
    for (const window of this.windows) this.releaseWindow(window, reuse);
    this.windows = [];
    if (!reuse) this.releaseSpareWindows();
  }

  /**
   * Lets a window go. Read past in a sequential read (`keep`), its buffer waits for the next window
   * of its size (at most as many as may be in flight); otherwise its memory goes back.
   */
  private releaseWindow(window: Window, keep = true): void {
    window.released = true;
    // Still arriving: stop it (nothing more is read into its buffer once the read settles).
    if (!window.done && window.filled < window.length) window.controller.abort();
    if (window.reserved === 0) return;
    // Whole (its fetch may not have settled yet, but nothing more is copied in) or ended, and of
    // the size the next windows will have (windows grow: smaller spares would never serve again).
    const arrived = window.done || window.filled === window.length;
    if (keep && arrived && window.buf.length === this.windowBytes) {
      this.releaseSpareWindows(this.windowBytes);
      // No more buffers than a full pipeline (the window read, those ahead) and one spare: more
      // would hold memory the budget then refuses to read-ahead (which is then skipped).
      if (this.windows.length + this.spareWindows.length <= this.opts.readAheadWindows + 1) {
        this.spareWindows.push({ buf: window.buf, reserved: window.reserved });
        window.reserved = 0;
        return;
      }
    }
    this.held -= window.reserved;
    // Every byte is in: nothing writes into the buffer any more, so another file may use it.
    if (arrived) this.memory.give(window.buf);
    else this.memory.release(window.reserved);
    window.reserved = 0;
  }

  /** Gives back the spare buffers' memory (all, or those not of `exceptSize`). */
  private releaseSpareWindows(exceptSize?: number): void {
    const kept: { buf: Buffer; reserved: number }[] = [];
    for (const spare of this.spareWindows) {
      if (spare.buf.length === exceptSize) {
        kept.push(spare);
        continue;
      }
      this.held -= spare.reserved;
      this.memory.give(spare.buf);
    }
    this.spareWindows = kept;
  }

  // ---- writing, fixed (the seed) ----

  private fixedBuffer: Part | null = null;

  private async writeFixed(offset: number, data: Uint8Array): Promise<void> {
    if (data.length > this.opts.bufferBytes) {
      await this.sendFixedBuffer();
      await this.remote.write(offset, data);
      return;
    }
    const buffer = this.fixedBuffer;
    if (
      buffer &&
      (offset !== buffer.start + buffer.length || buffer.length + data.length > buffer.buf.length)
    ) {
      // Not contiguous, or no room: send what the buffer holds first.
      await this.sendFixedBuffer();
    }
    if (!this.fixedBuffer) {
      const size = this.opts.bufferBytes;
      const buf = this.memory.take(size);
      if (!buf) {
        await this.remote.write(offset, data);
        return;
      }
      this.held += size;
      this.fixedBuffer = { start: offset, buf, length: 0, reserved: size };
    }
    const target = this.fixedBuffer;
    target.buf.set(data, target.length);
    target.length += data.length;
  }

  private async sendFixedBuffer(): Promise<void> {
    const buffer = this.fixedBuffer;
    if (!buffer) return;
    this.fixedBuffer = null;
    let sent = false;
    try {
      if (buffer.length > 0) await this.remote.write(buffer.start, buffer.buf.subarray(0, buffer.length));
      sent = true;
    } finally {
      this.releaseBytes(buffer, sent);
    }
  }

  // ---- writing, adaptive (write-behind) ----

  private async writeAdaptive(offset: number, data: Uint8Array): Promise<void> {
    if (this.part && offset !== this.part.start + this.part.length) {
      // Not contiguous: what the part holds goes out (in order), and the next parts start small.
      this.enqueuePart();
      this.partBytes = this.opts.minBufferBytes;
    }
    if (data.length > this.opts.bufferBytes) {
      this.enqueuePart();
      await this.drain();
      if (this.failure) throw this.failure;
      await this.remote.write(offset, data);
      return;
    }
    let position = 0;
    while (position < data.length) {
      if (!this.part && !(await this.startPart(offset + position))) {
        // No memory anywhere: write through, after what is queued so the order holds.
        await this.drain();
        if (this.failure) throw this.failure;
        await this.remote.write(offset + position, data.subarray(position));
        return;
      }
      const part = this.part!;
      const n = Math.min(part.buf.length - part.length, data.length - position);
      part.buf.set(data.subarray(position, position + n), part.length);
      part.length += n;
      position += n;
      if (part.length === part.buf.length) {
        this.enqueuePart();
        this.partBytes = Math.min(this.partBytes * GROWTH, this.opts.bufferBytes);
      }
    }
  }

  /** Allocates the next part, waiting for this file's own queue to drain when memory is short. */
  private async startPart(start: number): Promise<boolean> {
    const size = this.partBytes;
    for (;;) {
      if (this.failure) throw this.failure;
      const spare = this.spare;
      if (spare && spare.buf.length === size) {
        // Its memory is still reserved (and counted in `held`).
        this.spare = null;
        this.part = { start, buf: spare.buf, length: 0, reserved: spare.reserved };
        return true;
      }
      const buf = this.held + size <= this.opts.maxWriteBehindBytes ? this.memory.take(size) : undefined;
      if (buf) {
        this.held += size;
        this.part = { start, buf, length: 0, reserved: size };
        return true;
      }
      if (this.queue.length === 0 && this.writesInFlight === 0) return false;
      await this.progress.next();
    }
  }

  private enqueuePart(): void {
    const part = this.part;
    if (!part) return;
    this.part = null;
    if (part.length === 0) {
      this.releaseBytes(part);
      return;
    }
    this.queue.push(part);
    this.pump();
  }

  private releasePart(): void {
    if (this.part) this.releaseBytes(this.part);
    this.part = null;
    this.releaseSpare();
    this.releaseBytes(this.fixedBuffer);
    this.fixedBuffer = null;
  }

  private releaseSpare(): void {
    this.releaseBytes(this.spare);
    this.spare = null;
  }

  /**
   * Gives a part's buffer back to the budget for reuse, or with `reusable` false (a write of it
   * failed: the transport may still hold it) only its memory.
   */
  private releaseBytes(part: Part | null, reusable = true): void {
    if (!part || part.reserved === 0) return;
    this.held -= part.reserved;
    if (reusable && part.buf.length === part.reserved) this.memory.give(part.buf);
    else this.memory.release(part.reserved);
    part.reserved = 0;
  }

  /**
   * Sends queued parts in order, up to `writesInFlight` at a time: the next part travels while the
   * previous one is being stored, which hides the round trip (the API orders a session's chunks).
   */
  private pump(): void {
    while (this.writesInFlight < this.opts.writesInFlight && this.queue.length > 0 && !this.failure) {
      const part = this.queue.shift()!;
      this.writesInFlight++;
      let sent = false;
      this.remote
        .write(part.start, part.buf.subarray(0, part.length))
        .then(() => (sent = true))
        .catch((err: unknown) => {
          this.failure ??= err instanceof Error ? err : new Error(String(err));
        })
        .finally(() => {
          this.writesInFlight--;
          // A sent buffer may be reused (RemoteFile.write keeps no reference once it settles);
          // only one, only of the largest size, and only while more parts are on their way.
          if (
            sent &&
            !this.spare &&
            part.buf.length === this.opts.bufferBytes &&
            (this.writesInFlight > 0 || this.queue.length > 0)
          )
            this.spare = part;
          else this.releaseBytes(part, sent);
          // After a failure the rest would land out of order; drop it (the failure is reported).
          if (this.failure) for (const rest of this.queue.splice(0)) this.releaseBytes(rest);
          this.pump();
          if (this.writesInFlight === 0 || this.failure) this.releaseSpare();
          this.progress.wakeAll();
        })
        .catch(() => undefined);
    }
  }

  private async drain(): Promise<void> {
    while (this.writesInFlight > 0 || this.queue.length > 0) await this.progress.next();
  }
}

/** Copies `data` (at most `target.length` bytes of it) to the start of `target`; returns the count. */
function copyInto(target: Uint8Array, data: Uint8Array): number {
  const n = Math.min(target.length, data.length);
  target.set(n < data.length ? data.subarray(0, n) : data, 0);
  return n;
}

function checkRange(offset: number, length: number): void {
  if (!Number.isSafeInteger(offset) || offset < 0) throw new RangeError(`invalid offset ${offset}`);
  if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`invalid length ${length}`);
}

/**
 * Opens buffered files that share one memory limit. Each file is independent; the limit bounds
 * what all of them hold together (read-ahead windows and write-behind parts).
 */
export class AdvanceBufferPool {
  readonly memory: MemoryBudget;

  constructor(private readonly options: AdvanceBufferOptions & { memoryLimitBytes?: number } = {}) {
    this.memory = new MemoryBudget(options.memoryLimitBytes ?? 256 * MiB);
  }

  open(remote: RemoteFile, overrides: AdvanceBufferOptions = {}): BufferedFile {
    const { memoryLimitBytes: _limit, ...defaults } = this.options;
    return new BufferedFile(remote, { ...defaults, ...overrides }, this.memory);
  }
}
