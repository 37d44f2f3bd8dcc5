import { performance } from 'node:perf_hooks';
import { TransportError } from './http-errors';

/**
 * How long a request to the site may go unanswered (`ApiConnectionOptions.timeouts`). Without
 * them a request waits as long as the transport does (a site that is paused, or a network that
 * drops packets, holds it forever).
 */
export interface RequestTimeouts {
  /**
   * Metadata requests (`timeout: 'metadata'`: a stat, a listing, opening an upload session): the
   * whole answer within this time. Also how long the site may stay silent while it works on a
   * request that takes long by nature (`timeout: 'commit'`, see TimeoutKind). Milliseconds.
   */
  metadataMs: number;
  /**
   * Data transfers (`timeout: 'data'`): the longest time without progress (body bytes sent or
   * received), never the total, so a large transfer that keeps moving is never cut. Milliseconds.
   */
  dataMs: number;
}

/**
 * Which timeout a request gets:
 * - `metadata`: its whole answer within `metadataMs`.
 * - `data`: no progress for `dataMs` (bytes moving either way). Once an upload's body is handed
 *   over, what remains is the site's work on it: waited for as with `commit`.
 * - `commit`: work the site does before it answers, which may take long (completing an upload
 *   composes and hashes the whole object): waited for as long as the site shows signs of life (an
 *   answer to any request, or to a health check the connection sends meanwhile), and failed once
 *   it has been silent for `metadataMs`.
 * - `none`: no timeout.
 */
export type TimeoutKind = 'metadata' | 'data' | 'commit' | 'none';

/** The site did not answer in time: no answer (or no progress) within the configured timeout. */
export class RequestTimeoutError extends TransportError {
  readonly code = 'ETIMEDOUT';

  constructor(
    message: string,
    readonly kind: Exclude<TimeoutKind, 'none'>,
    readonly timeoutMs: number,
  ) {
    super(message);
    this.name = 'RequestTimeoutError';
  }
}

/**
 * Refused without being sent: the site did not answer a moment ago and has not answered since
 * (`ApiConnection.setUnreachable`). `cause` is the failure that began the outage.
 */
export class SiteUnreachableError extends TransportError {
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'SiteUnreachableError';
  }
}

/** What a request's clock needs from its connection. */
export interface SiteLiveness {
  /** When the site last answered anything (monotonic ms). */
  lastHeard(): number;
  /**
   * Asks the site for a sign of life (a health check), unless one is on its way or it spoke within
   * the last `quietMs`.
   */
  checkLife(quietMs: number): void;
  /**
   * A request ran out of time; it had waited since `since` (monotonic ms) without hearing from the
   * site. The connection treats the site as silent only if nothing else was heard since either.
   */
  timedOut(error: RequestTimeoutError, since: number): void;
}

/** Milliseconds on a monotonic clock. */
export const now = (): number => performance.now();

const seconds = (ms: number): string => `${Math.round(ms / 100) / 10} s`;

/**
 * The clock of one request: aborts `signal` with a RequestTimeoutError when the request has run
 * out of time (see TimeoutKind). `sent` and `received` report progress; `bodySent` switches an
 * upload to waiting for the site's answer; `done` stops the clock.
 */
export class RequestClock {
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private readonly started = now();
  private last = this.started;
  private timer: NodeJS.Timeout | undefined;
  private phase: 'metadata' | 'data' | 'commit';
  private finished = false;

  constructor(
    kind: Exclude<TimeoutKind, 'none'>,
    private readonly timeouts: RequestTimeouts,
    /** What the request is, for the error message (`GET /api/v1/...`). */
    private readonly what: string,
    /** The site as the connection knows it. */
    private readonly site: SiteLiveness,
    parent?: AbortSignal,
  ) {
    this.phase = kind;
    this.signal = parent ? AbortSignal.any([parent, this.controller.signal]) : this.controller.signal;
    this.arm();
  }

  /** Bytes of the body went out. */
  sent(): void {
    this.last = now();
  }

  /** Bytes of the answer arrived. */
  received(): void {
    this.last = now();
  }

  /** The whole body went out: what remains is the site's work and its answer. */
  bodySent(): void {
    if (this.phase !== 'data' || this.finished) return;
    this.last = now();
    this.phase = 'commit';
    clearTimeout(this.timer);
    this.arm();
  }

  done(): void {
    this.finished = true;
    clearTimeout(this.timer);
  }

  /** Time left before the request fails (negative: out of time). */
  private left(): number {
    const t = now();
    switch (this.phase) {
      case 'metadata':
        return this.timeouts.metadataMs - (t - this.started);
      case 'data':
        return this.timeouts.dataMs - (t - this.last);
      case 'commit':
        return this.timeouts.metadataMs - (t - Math.max(this.last, this.site.lastHeard()));
    }
  }

  private arm(): void {
    const left = this.left();
    if (left <= 0) {
      this.expire();
      return;
    }
    // While the site works on a commit, ask it for a sign of life a few times per timeout (at
    // most every second), so a live site always has time to answer one.
    const every = Math.min(1000, this.timeouts.metadataMs / 4);
    const wait = this.phase === 'commit' ? Math.min(left, every) : left;
    this.timer = setTimeout(
      () => {
        if (this.finished) return;
        if (this.phase === 'commit' && this.left() > 0) this.site.checkLife(every);
        this.arm();
      },
      Math.max(1, Math.ceil(wait)),
    );
    this.timer.unref();
  }

  private expire(): void {
    if (this.finished) return;
    this.finished = true;
    let message: string;
    let limit: number;
    // Since when this request has waited for a sign of progress (for a commit: of life).
    const since =
      this.phase === 'metadata'
        ? this.started
        : this.phase === 'data'
          ? this.last
          : Math.max(this.last, this.site.lastHeard());
    if (this.phase === 'data') {
      limit = this.timeouts.dataMs;
      message = `the site made no progress on ${this.what} for ${seconds(limit)} (data timeout)`;
    } else if (this.phase === 'commit') {
      limit = this.timeouts.metadataMs;
      message = `the site has not answered ${this.what} nor anything else for ${seconds(limit)} (metadata timeout)`;
    } else {
      limit = this.timeouts.metadataMs;
      message = `the site did not answer ${this.what} within ${seconds(limit)} (metadata timeout)`;
    }
    const error = new RequestTimeoutError(message, this.phase, limit);
    this.site.timedOut(error, since);
    this.controller.abort(error);
  }
}

/** The slices an upload body is handed to the transport in: each one taken is progress. */
export const BODY_SLICE_BYTES = 1024 * 1024;

/**
 * The bytes as a stream of slices (views, not copies), taken one at a time by the transport:
 * `onSlice` hears each slice taken and `onEnd` the end, so a stalled upload shows as no progress.
 */
export function slicedBody(
  bytes: Uint8Array,
  onSlice: () => void,
  onEnd: () => void,
): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (at >= bytes.length) {
          controller.close();
          onEnd();
          return;
        }
        onSlice();
        const end = Math.min(bytes.length, at + BODY_SLICE_BYTES);
        controller.enqueue(bytes.subarray(at, end));
        at = end;
      },
    },
    // Nothing queued ahead: a slice is taken only when the transport wants more.
    { highWaterMark: 0 },
  );
}
