import net from 'node:net';
import type { ReceivedResponse } from './http';
import { apiError, TransportError } from './http-errors';

const KiB = 1024;
/** Reads that are not body bytes bound for the caller's buffer (the head, skipped bytes) go here. */
const SCRATCH_BYTES = 16 * KiB;
/** A status line and headers longer than this are refused (ours are a few hundred bytes). */
const MAX_HEAD_BYTES = 64 * KiB;
/** An error answer's body longer than this is cut (it is a JSON envelope of a few hundred bytes). */
const MAX_ERROR_BODY_BYTES = 64 * KiB;
/** Kept-alive connections kept for later requests; more are closed once their answer is read. */
const MAX_IDLE_CONNECTIONS = 8;

export interface IntoRequest {
  /** `GET` or `HEAD`: requests without a body. */
  method: 'GET' | 'HEAD';
  /** Path and query, e.g. `/api/v1/data?path=...`. */
  path: string;
  headers: Record<string, string>;
  signal?: AbortSignal;
}

export interface IntoOptions {
  /**
   * Body bytes to pass over before those that go into the target, decided once the answer's head
   * is here (a `200` answer to a range request carries the whole object).
   */
  skip?(response: ReceivedResponse): number;
  /** Called after each read with the number of bytes in place at the start of the target so far. */
  onProgress?(filled: number): void;
}

export interface IntoResult {
  response: ReceivedResponse;
  /** Bytes written at the start of the target. */
  filled: number;
}

/**
 * A GET over plain HTTP/1.1 whose body the kernel reads straight into the caller's buffer
 * (`net.Socket`'s `onread` with a buffer chosen per read): no piece is allocated, parsed into a
 * slice or copied, so a large body costs the receiving process little more than the system call.
 * `node:http` allocates a 64 KiB piece per read and the caller then copies it: at a few hundred
 * MiB/s that is most of the reading thread's CPU and keeps V8's collector busy (docs/buffer.md).
 *
 * Answers are read by their Content-Length (or chunked encoding, decoded through a small scratch
 * buffer, or until the connection closes); error answers (4xx, 5xx) become the API's `ApiError`.
 * Connections are kept alive and reused; a reused connection the server had closed meanwhile
 * fails before any byte of the answer, and the request is then sent once more on a new one (a GET
 * can be repeated).
 */
export class HttpIntoClient {
  private readonly idle: IntoConnection[] = [];

  constructor(
    private readonly host: string,
    private readonly port: number,
    /** The `Host` header: host and port as in the URL. */
    private readonly hostHeader: string,
  ) {}

  async get(request: IntoRequest, target: Uint8Array, options: IntoOptions = {}): Promise<IntoResult> {
    const head = requestHead(request, this.hostHeader);
    for (;;) {
      const reused = this.idle.pop();
      const connection = reused ?? new IntoConnection(this.host, this.port, (c) => this.keep(c));
      try {
        return await connection.run(head, request, target, options);
      } catch (err) {
        if (reused && err instanceof StaleConnectionError) continue;
        if (err instanceof StaleConnectionError) throw new TransportError(err.message, { cause: err });
        throw err;
      }
    }
  }

  /** Closes the idle connections (those in use close when their answer is read). */
  close(): void {
    for (const connection of this.idle.splice(0)) connection.destroy();
  }

  private keep(connection: IntoConnection): void {
    if (this.idle.length >= MAX_IDLE_CONNECTIONS) {
      connection.destroy();
      return;
    }
    this.idle.push(connection);
    connection.onGone = () => {
      const at = this.idle.indexOf(connection);
      if (at >= 0) this.idle.splice(at, 1);
    };
  }
}

function requestHead(request: IntoRequest, hostHeader: string): string {
  const lines = [`${request.method} ${request.path} HTTP/1.1`, `host: ${hostHeader}`];
  for (const [name, value] of Object.entries(request.headers)) lines.push(`${name}: ${value}`);
  // Names and values are ours (a token, a range), but a line break would split the request.
  if (lines.some((line) => /[\r\n\0]/.test(line)))
    throw new TypeError('a request header contains a line break');
  return `${lines.join('\r\n')}\r\n\r\n`;
}

/** The connection ended or failed before any byte of the answer arrived. */
class StaleConnectionError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StaleConnectionError';
  }
}

interface Job {
  request: IntoRequest;
  target: Uint8Array;
  options: IntoOptions;
  resolve(result: IntoResult): void;
  reject(error: unknown): void;
  onAbort?: () => void;
  phase: 'head' | 'body' | 'error';
  /** Some byte of the answer has arrived. */
  answered: boolean;
  head: Buffer[];
  headBytes: number;
  response?: ReceivedResponse;
  status: number;
  keepAlive: boolean;
  /** Content-Length; undefined: chunked, or until the connection closes. */
  length: number | undefined;
  chunked?: ChunkedDecoder;
  /** Body bytes received (skipped, placed and beyond the target). */
  received: number;
  skip: number;
  /** Bytes in place at the start of the target. */
  filled: number;
  /** Bytes that go into the target: its length, or fewer when the body is shorter. */
  want: number;
  errorBody: Buffer[];
}

class IntoConnection {
  private readonly scratch = Buffer.allocUnsafe(SCRATCH_BYTES);
  /** What the next read goes into (set each time the socket asks for a buffer). */
  private given: 'scratch' | 'skip' | 'target' = 'scratch';
  private job: Job | undefined;
  private gone = false;
  /** Set while the connection waits in the idle list. */
  onGone: (() => void) | undefined;
  private readonly socket: net.Socket;

  constructor(
    host: string,
    port: number,
    private readonly keep: (connection: IntoConnection) => void,
  ) {
    this.socket = net.connect({
      host,
      port,
      noDelay: true,
      onread: { buffer: () => this.nextBuffer(), callback: (n) => this.onRead(n) },
    });
    this.socket.on('error', (err) => this.lost(err));
    this.socket.on('end', () => this.lost());
    this.socket.on('close', () => this.lost());
  }

  run(head: string, request: IntoRequest, target: Uint8Array, options: IntoOptions): Promise<IntoResult> {
    const { signal } = request;
    if (signal?.aborted) {
      this.keepOrDestroy(true);
      return Promise.reject(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    }
    if (this.gone) return Promise.reject(new StaleConnectionError('the connection was closed'));
    this.onGone = undefined;
    return new Promise<IntoResult>((resolve, reject) => {
      const job: Job = {
        request,
        target,
        options,
        resolve,
        reject,
        phase: 'head',
        answered: false,
        head: [],
        headBytes: 0,
        status: 0,
        keepAlive: false,
        length: undefined,
        received: 0,
        skip: 0,
        filled: 0,
        want: 0,
        errorBody: [],
      };
      if (signal) {
        job.onAbort = () => this.fail(signal.reason ?? new Error('aborted'));
        signal.addEventListener('abort', job.onAbort, { once: true });
      }
      this.job = job;
      this.socket.ref();
      this.socket.write(head);
    });
  }

  destroy(): void {
    this.gone = true;
    this.socket.destroy();
  }

  // ---- reading ----

  private nextBuffer(): Uint8Array {
    const job = this.job;
    if (job?.phase === 'body' && !job.chunked) {
      if (job.received < job.skip) {
        this.given = 'skip';
        return this.scratch.subarray(0, Math.min(this.scratch.length, job.skip - job.received));
      }
      if (job.filled < job.want) {
        this.given = 'target';
        return job.target.subarray(job.filled, job.want);
      }
    }
    this.given = 'scratch';
    return this.scratch;
  }

  /** Always true: reading never pauses (every read has somewhere to go). */
  private onRead(n: number): boolean {
    const job = this.job;
    if (!job) {
      // Nothing was asked: bytes on an idle connection mean it cannot be trusted.
      this.destroy();
      return true;
    }
    job.answered = true;
    try {
      if (this.given === 'target') {
        job.filled += n;
        job.received += n;
        job.options.onProgress?.(job.filled);
      } else if (this.given === 'skip') {
        job.received += n;
      } else if (job.phase === 'head') {
        this.readHead(job, Buffer.from(this.scratch.subarray(0, n)));
      } else {
        this.readBody(job, this.scratch.subarray(0, n));
      }
      if (this.job === job) this.settleIfDone(job);
    } catch (err) {
      this.fail(err);
    }
    return true;
  }

  private readHead(job: Job, bytes: Buffer): void {
    job.head.push(bytes);
    job.headBytes += bytes.length;
    const all = job.head.length === 1 ? bytes : Buffer.concat(job.head);
    const end = all.indexOf('\r\n\r\n');
    if (end < 0) {
      if (job.headBytes > MAX_HEAD_BYTES) throw new TransportError('the answer has no end of its head');
      if (job.head.length > 1) job.head = [all];
      return;
    }
    const rest = all.subarray(end + 4);
    const lines = all.subarray(0, end).toString('latin1').split('\r\n');
    const statusLine = /^HTTP\/1\.([01]) (\d{3})/.exec(lines[0] ?? '');
    if (!statusLine) throw new TransportError('not an HTTP/1.x answer');
    const status = Number(statusLine[2]);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      if (colon <= 0) throw new TransportError('a malformed header in the answer');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const before = headers.get(name);
      headers.set(name, before === undefined ? value : `${before}, ${value}`);
    }
    job.head = [];
    job.headBytes = 0;
    if (status < 200) {
      // An interim answer (103 Early Hints): the real one follows.
      if (rest.length > 0) this.readHead(job, Buffer.from(rest));
      return;
    }
    job.status = status;
    const connection = (headers.get('connection') ?? '').toLowerCase();
    job.keepAlive = statusLine[1] === '1' ? connection !== 'close' : connection === 'keep-alive';
    const encoding = (headers.get('transfer-encoding') ?? '').toLowerCase();
    const announced = headers.get('content-length');
    if (job.request.method === 'HEAD' || status === 204 || status === 304) job.length = 0;
    else if (encoding.includes('chunked')) job.chunked = new ChunkedDecoder();
    else if (announced !== undefined) {
      if (!/^\d+$/.test(announced)) throw new TransportError(`an invalid Content-Length: ${announced}`);
      job.length = Number(announced);
    } else job.keepAlive = false; // read until the connection closes
    job.response = { status, headers: { get: (name) => headers.get(name.toLowerCase()) ?? null } };
    if (status >= 400) {
      job.phase = 'error';
    } else {
      job.phase = 'body';
      job.skip = skipOf(job.options, job.response);
      job.want =
        job.length === undefined
          ? job.target.length
          : Math.min(job.target.length, Math.max(0, job.length - job.skip));
    }
    if (rest.length > 0) this.readBody(job, rest);
  }

  /** Body bytes read into the scratch buffer (with the head, chunked, an error's, past the target). */
  private readBody(job: Job, bytes: Uint8Array): void {
    if (job.chunked) {
      job.chunked.push(bytes, (data) => this.take(job, data));
      return;
    }
    this.take(job, bytes);
  }

  private take(job: Job, bytes: Uint8Array): void {
    if (job.length !== undefined && job.received + bytes.length > job.length)
      throw new TransportError('the body is longer than announced');
    if (job.phase === 'error') {
      if (job.received < MAX_ERROR_BODY_BYTES) job.errorBody.push(Buffer.from(bytes));
      job.received += bytes.length;
      return;
    }
    const placed = placeBody(bytes, job.received, job.skip, job.target, job.filled, job.want);
    job.received += bytes.length;
    if (placed > 0) {
      job.filled += placed;
      job.options.onProgress?.(job.filled);
    }
  }

  private settleIfDone(job: Job): void {
    const complete = job.chunked
      ? job.chunked.ended
      : job.length !== undefined && job.received === job.length;
    if (job.phase === 'error') {
      if (complete) this.finish(job, true);
      return;
    }
    if (job.phase !== 'body') return;
    if (complete) this.finish(job, true);
    // The caller's buffer is full and more would follow: stop here (the connection cannot serve
    // another request with the rest of this body unread).
    else if (job.filled >= job.want) this.finish(job, false);
  }

  private finish(job: Job, reusable: boolean): void {
    this.job = undefined;
    if (job.onAbort) job.request.signal?.removeEventListener('abort', job.onAbort);
    this.keepOrDestroy(reusable && job.keepAlive);
    if (job.phase === 'error') {
      job.reject(apiError(job.status, Buffer.concat(job.errorBody).toString('utf8')));
      return;
    }
    job.resolve({ response: job.response!, filled: job.filled });
  }

  private keepOrDestroy(reusable: boolean): void {
    if (reusable && !this.gone) {
      this.socket.unref();
      this.keep(this);
    } else this.destroy();
  }

  // ---- failures ----

  /** The socket ended, closed or failed. */
  private lost(error?: Error): void {
    const wasGone = this.gone;
    this.gone = true;
    if (!wasGone) this.onGone?.();
    const job = this.job;
    if (!job) return;
    // A body read until the connection closes (a success's or an error's) ends here.
    if (!error && job.phase !== 'head' && !job.chunked && job.length === undefined) {
      this.finish(job, false);
      return;
    }
    if (!job.answered) {
      this.fail(
        new StaleConnectionError(`no answer from the API: ${error?.message ?? 'the connection closed'}`),
      );
      return;
    }
    const announced = job.length === undefined ? '' : ` of ${job.length}`;
    this.fail(
      new TransportError(
        job.phase === 'head'
          ? `the connection closed before the answer's head ended`
          : `the body ended after ${job.received}${announced} bytes: the connection closed`,
        { cause: error },
      ),
    );
  }

  /** Ends the request with `error` as it is (the parser's TransportError, the caller's own error). */
  private fail(error: unknown): void {
    const job = this.job;
    if (!job) return;
    this.job = undefined;
    if (job.onAbort) job.request.signal?.removeEventListener('abort', job.onAbort);
    this.destroy();
    const { signal } = job.request;
    const failure: unknown = signal?.aborted ? (signal.reason ?? error) : error;
    job.reject(failure instanceof Error ? failure : new Error(String(failure)));
  }
}

/** The body bytes to pass over before the target, as `options.skip` decides for this answer. */
export function skipOf(options: IntoOptions, response: ReceivedResponse): number {
  return Math.max(0, Math.floor(options.skip?.(response) ?? 0));
}

/**
 * Places body bytes that arrived after `received` earlier ones into `target` at `filled`: past
 * the first `skip` bytes of the body, and no further than `want` bytes of the target. Returns the
 * number placed.
 */
export function placeBody(
  bytes: Uint8Array,
  received: number,
  skip: number,
  target: Uint8Array,
  filled: number,
  want: number,
): number {
  const from = Math.min(bytes.length, Math.max(0, skip - received));
  const n = Math.min(bytes.length - from, want - filled);
  if (n <= 0) return 0;
  target.set(bytes.subarray(from, from + n), filled);
  return n;
}

/**
 * Decodes `Transfer-Encoding: chunked` as it arrives (RFC 9112, section 7.1): size lines,
 * data, the CRLF after each chunk, and trailers after the last. Extensions are ignored.
 */
export class ChunkedDecoder {
  private state: 'size' | 'data' | 'data-end' | 'trailer' = 'size';
  private line = '';
  private remaining = 0;
  ended = false;

  push(bytes: Uint8Array, onData: (data: Uint8Array) => void): void {
    let at = 0;
    while (at < bytes.length && !this.ended) {
      if (this.state === 'data') {
        const n = Math.min(this.remaining, bytes.length - at);
        onData(bytes.subarray(at, at + n));
        at += n;
        this.remaining -= n;
        if (this.remaining === 0) this.state = 'data-end';
        continue;
      }
      // A line: the size line, the CRLF after data, or a trailer line.
      const newline = bytes.indexOf(0x0a, at);
      const end = newline < 0 ? bytes.length : newline;
      this.line += Buffer.from(bytes.subarray(at, end)).toString('latin1');
      if (this.line.length > 4 * KiB) throw new TransportError('a chunked body with a line too long');
      at = newline < 0 ? bytes.length : newline + 1;
      if (newline < 0) break;
      const line = this.line.replace(/\r$/, '');
      this.line = '';
      if (this.state === 'data-end') {
        if (line !== '') throw new TransportError('a chunked body without CRLF after a chunk');
        this.state = 'size';
      } else if (this.state === 'size') {
        const size = /^([0-9a-fA-F]+)[ \t]*(;.*)?$/.exec(line);
        if (!size) throw new TransportError('a chunked body with a malformed size line');
        this.remaining = parseInt(size[1]!, 16);
        this.state = this.remaining === 0 ? 'trailer' : 'data';
      } else if (line === '') {
        this.ended = true;
      }
    }
    if (at < bytes.length) throw new TransportError('bytes after the end of a chunked body');
  }
}
