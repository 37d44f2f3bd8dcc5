import http from 'node:http';
import https from 'node:https';
import { ApiError } from '@tributary/shared';
import { apiError, TransportError, wrapTransport } from './http-errors';
import { HttpIntoClient, placeBody, skipOf, type IntoOptions, type IntoResult } from './http-into';
import {
  now,
  RequestClock,
  RequestTimeoutError,
  SiteUnreachableError,
  slicedBody,
  type RequestTimeouts,
  type SiteLiveness,
  type TimeoutKind,
} from './timeouts';
import type { UploadSessionObserver } from './upload-session';

export { TransportError } from './http-errors';

/** Where the API is and how to authenticate; `fetch` can be replaced (tests, proxies). */
export interface ApiConnectionOptions {
  baseUrl: string;
  /** An API token (`trib_...`), sent as `Authorization: Bearer`. */
  token: string;
  /**
   * Replaces the transport for every request (tests, proxies). Without it, bodies received piece
   * by piece (`receive`, `bytes`) travel over `node:http` and everything else over `fetch`.
   */
  fetch?: typeof fetch;
  /** Called once for each HTTP request sent (counting, tracing). */
  onRequest?(request: ApiRequest): void;
  /**
   * Timeouts for every request (see TimeoutKind for which one applies). Without them a request
   * waits as long as the transport lets it.
   */
  timeouts?: RequestTimeouts;
  /** Hears about the upload sessions opened and ended through this connection (crash recovery). */
  uploadSessions?: UploadSessionObserver;
}

/** The answer a body is received from: its status and headers. */
export interface ReceivedResponse {
  status: number;
  headers: { get(name: string): string | null };
}

export interface ApiRequest {
  method: string;
  /** Path and query, e.g. `/api/v1/data?path=...`. */
  url: string;
  headers?: Record<string, string>;
  body?: Uint8Array | string;
  /**
   * Sends a Uint8Array body as it is: fetch (undici) otherwise copies a byte body before sending
   * it (a fresh allocation of its size, which also drives garbage collection). The caller must
   * leave the bytes unchanged until the request settles. With timeouts (`ApiConnectionOptions.timeouts`)
   * every byte body is sent this way, in slices whose progress the data timeout watches.
   */
  bodyInPlace?: boolean;
  signal?: AbortSignal;
  /**
   * Which of `ApiConnectionOptions.timeouts` applies (see TimeoutKind). Default: `data` for a body
   * of bytes and for `receive`, `receiveInto` and `bytes`; otherwise `metadata`.
   */
  timeout?: TimeoutKind;
  /** Sent even while the connection refuses requests after an outage (`setUnreachable`): health checks. */
  probe?: boolean;
}

/** The timeout a request gets when it names none. */
function kindOf(request: ApiRequest, streaming: boolean): TimeoutKind {
  if (request.timeout) return request.timeout;
  if (streaming) return 'data';
  return request.body instanceof Uint8Array && request.body.length > 0 ? 'data' : 'metadata';
}

/** A request's clock, or none (no timeouts configured, or `timeout: 'none'`). */
interface Clock {
  signal: AbortSignal | undefined;
  sent(): void;
  received(): void;
  bodySent(): void;
  done(): void;
}

const noClock = (signal: AbortSignal | undefined): Clock => ({
  signal,
  sent: () => undefined,
  received: () => undefined,
  bodySent: () => undefined,
  done: () => undefined,
});

/** A thin layer over fetch for the transfer engine: auth, error envelopes, transport failures. */
export class ApiConnection {
  private readonly fetchImpl: typeof fetch;
  /** Keep-alive connections for `receive` over node:http(s). */
  private agent: http.Agent | undefined;
  /** Keep-alive connections for `receiveInto` over plain HTTP. */
  private into: HttpIntoClient | undefined;
  /** When the site last answered anything (monotonic ms; the creation time before its first answer). */
  private heardAt = now();
  /** A health check sent to see whether the site is alive while it works on a commit. */
  private lifeCheck: Promise<void> | undefined;
  /** Set while the site is known not to answer: requests fail at once (see setUnreachable). */
  private outage: Error | undefined;
  private readonly site: SiteLiveness = {
    lastHeard: () => this.heardAt,
    checkLife: (quietMs) => this.checkLife(quietMs),
    // A request ran out of time and nothing else was heard from the site meanwhile: it is silent,
    // and the next requests need not wait as long. (A slow answer while others arrive is not that.)
    timedOut: (error, since) => {
      if (this.heardAt <= since) this.outage ??= error;
    },
  };

  constructor(readonly options: ApiConnectionOptions) {
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** When the site last answered anything through this connection (monotonic ms, `performance.now()`). */
  get lastHeard(): number {
    return this.heardAt;
  }

  /**
   * While the site is known not to answer (`cause`: the failure that showed it), requests other
   * than probes (`ApiRequest.probe`) fail at once with SiteUnreachableError instead of each waiting
   * for its own timeout; `undefined` ends that. A request that runs out of time while nothing at
   * all is heard from the site sets it by itself, and any answer from the site (to a request in
   * flight, or to a probe) ends it.
   */
  setUnreachable(cause: Error | undefined): void {
    this.outage = cause;
  }

  /** The failure that began the current outage (see setUnreachable), if the site is not answering. */
  get unreachable(): Error | undefined {
    return this.outage;
  }

  /** Sends the request; throws ApiError for an error status, TransportError without an answer. */
  async send(request: ApiRequest): Promise<Response> {
    const clock = this.clock(request, false);
    try {
      return await this.fetchWith(request, clock);
    } finally {
      clock.done();
    }
  }

  /** Starts a request's clock; throws SiteUnreachableError during an outage. */
  private clock(request: ApiRequest, streaming: boolean): Clock {
    if (this.outage && !request.probe) {
      throw new SiteUnreachableError(
        `not sent: the site did not answer a moment ago (${this.outage.message})`,
        this.outage,
      );
    }
    const kind = kindOf(request, streaming);
    const timeouts = this.options.timeouts;
    if (!timeouts || kind === 'none') return noClock(request.signal);
    return new RequestClock(
      kind,
      timeouts,
      `${request.method} ${request.url.split('?')[0]}`,
      this.site,
      request.signal,
    );
  }

  private heard(clock: Clock): void {
    this.heardAt = now();
    this.outage = undefined;
    clock.received();
  }

  /** Asks the site for a sign of life: one health check at a time, only if nothing was heard for `quietMs`. */
  private checkLife(quietMs: number): void {
    if (this.lifeCheck || now() - this.heardAt < quietMs) return;
    // Any answer counts (a 503 too): `heard` is recorded as it arrives.
    this.lifeCheck = this.send({ method: 'GET', url: '/api/health', timeout: 'metadata', probe: true })
      .then((res) => res.body?.cancel())
      .catch(() => undefined)
      .finally(() => (this.lifeCheck = undefined));
  }

  /** The fetch of `send`, `json` and `receive`, under the request's clock (the caller stops it). */
  private async fetchWith(request: ApiRequest, clock: Clock): Promise<Response> {
    this.options.onRequest?.(request);
    let res: Response;
    const headers: Record<string, string> = {
      authorization: `Bearer ${this.options.token}`,
      ...request.headers,
    };
    let body = request.body as RequestInit['body'];
    const timed = clock.signal !== request.signal;
    if (request.body instanceof Uint8Array && request.body.length > 0 && (request.bodyInPlace || timed)) {
      // A stream of views is sent without a copy; with its length given, it is not sent chunked,
      // and undici refuses to send a body of another length. Under a clock, each slice taken is
      // progress and the last one ends the upload's data phase.
      body = timed
        ? slicedBody(
            request.body,
            () => clock.sent(),
            () => clock.bodySent(),
          )
        : inPlace(request.body);
      headers['content-length'] = String(request.body.length);
    } else if (request.body !== undefined) {
      clock.bodySent();
    }
    const signal = clock.signal;
    try {
      res = await this.fetchImpl(`${this.options.baseUrl}${request.url}`, {
        method: request.method,
        headers,
        body,
        signal,
        // The API never redirects. With a body, following a redirect makes fetch (undici) clone
        // the request first, which copies every byte of the body once more (a tee of its stream):
        // no window and no redirects let it send the request as it is. A stream body needs
        // `duplex: 'half'`.
        ...(request.body !== undefined
          ? { redirect: 'error' as const, window: null, ...(body !== request.body ? { duplex: 'half' } : {}) }
          : {}),
      });
    } catch (err) {
      throw wrapTransport(err, signal);
    }
    this.heard(clock);
    // 202: the object is being staged from an archive (docs/storage.md); its JSON is no body.
    if ((!res.ok && res.status !== 304) || res.status === 202) {
      let text: string;
      try {
        text = await res.text();
      } catch (err) {
        // Out of time while the error's body arrived: that is the failure, not the status.
        if (signal?.aborted) throw wrapTransport(err, signal);
        text = '';
      }
      throw apiError(res.status, text);
    }
    return res;
  }

  async json<T>(request: ApiRequest): Promise<T> {
    const clock = this.clock(request, false);
    try {
      const res = await this.fetchWith(request, clock);
      try {
        return (await res.json()) as T;
      } catch (err) {
        throw wrapTransport(err, clock.signal);
      }
    } finally {
      clock.done();
    }
  }

  /**
   * Sends the request and hands the body to `onChunk` piece by piece as it arrives; `onChunk`
   * returning false stops reading (the rest of the body is cancelled). Transport failures while
   * the body arrives are TransportError; so is a body shorter or longer than its Content-Length.
   */
  async receive(
    request: ApiRequest,
    onChunk: (chunk: Uint8Array, response: ReceivedResponse) => boolean | void,
  ): Promise<ReceivedResponse> {
    const clock = this.clock(request, true);
    try {
      if (!this.options.fetch) return await this.receiveOverHttp(request, onChunk, clock);
      return await this.receiveOverFetch(request, onChunk, clock);
    } finally {
      clock.done();
    }
  }

  private async receiveOverFetch(
    request: ApiRequest,
    onChunk: (chunk: Uint8Array, response: ReceivedResponse) => boolean | void,
    clock: Clock,
  ): Promise<ReceivedResponse> {
    const response = await this.fetchWith(request, clock);
    if (!response.body) return response;
    const announced = Number(response.headers.get('content-length') ?? NaN);
    const known = Number.isSafeInteger(announced) && announced >= 0;
    let received = 0;
    let stopped = false;
    // Thrown by onChunk: the caller's own error, not the transport's.
    let failed: { error: unknown } | undefined;
    try {
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        this.heard(clock);
        received += chunk.length;
        if (known && received > announced) throw new TransportError('the body is longer than announced');
        try {
          stopped = onChunk(chunk, response) === false;
        } catch (error) {
          failed = { error };
        }
        // Leaving the loop cancels the rest of the body.
        if (failed || stopped) break;
      }
    } catch (err) {
      if (err instanceof TransportError) throw err;
      throw wrapTransport(err, clock.signal);
    }
    if (failed) throw failed.error;
    if (known && !stopped && received !== announced)
      throw new TransportError(`the body ended after ${received} of ${announced} bytes`);
    return response;
  }

  /**
   * Sends a GET (or HEAD) and reads its body into `target`: over plain HTTP (and without an
   * injected `fetch`) the kernel writes the body straight into it (`HttpIntoClient`), otherwise
   * the pieces `receive` hands over are copied in. At most `target.length` body bytes, after the
   * `skip` the answer's head decides; `onProgress` reports the bytes in place so far. Errors as
   * `receive`: ApiError for an error status, TransportError for no answer or a body cut short.
   * Once the promise settles nothing more is written into `target`.
   */
  async receiveInto(
    request: ApiRequest & { method: 'GET' | 'HEAD' },
    target: Uint8Array,
    options: IntoOptions = {},
  ): Promise<IntoResult> {
    const url = new URL(`${this.options.baseUrl}${request.url}`);
    if (this.options.fetch || url.protocol !== 'http:' || request.body !== undefined) {
      let skip: number | undefined;
      let received = 0;
      let filled = 0;
      const response = await this.receive(request, (chunk, res) => {
        skip ??= skipOf(options, res);
        const placed = placeBody(chunk, received, skip, target, filled, target.length);
        received += chunk.length;
        if (placed > 0) {
          filled += placed;
          options.onProgress?.(filled);
        }
        return filled < target.length;
      });
      return { response, filled };
    }
    const clock = this.clock(request, true);
    this.options.onRequest?.(request);
    this.into ??= new HttpIntoClient(url.hostname.replace(/^\[|\]$/g, ''), Number(url.port || 80), url.host);
    try {
      const result = await this.into.get(
        {
          method: request.method,
          path: `${url.pathname}${url.search}`,
          headers: { authorization: `Bearer ${this.options.token}`, ...request.headers },
          signal: clock.signal,
        },
        target,
        {
          ...options,
          onProgress: (filled) => {
            this.heard(clock);
            options.onProgress?.(filled);
          },
        },
      );
      this.heard(clock);
      return result;
    } catch (err) {
      // An error status is an answer too.
      if (err instanceof ApiError) this.heard(clock);
      throw err;
    } finally {
      clock.done();
    }
  }

  /**
   * The whole body as bytes (transport failures while reading it are TransportError). Read chunk by
   * chunk into one buffer of the announced length: `arrayBuffer()` is about half as fast on large
   * bodies (measured: 240 against 500 MiB/s for 32 MiB ranges on loopback).
   */
  async bytes(request: ApiRequest): Promise<{ response: ReceivedResponse; body: Uint8Array }> {
    let body: Buffer | undefined;
    let parts: Uint8Array[] | undefined;
    let filled = 0;
    const response = await this.receive(request, (chunk, res) => {
      if (!body && !parts) {
        const announced = Number(res.headers.get('content-length') ?? NaN);
        if (Number.isSafeInteger(announced) && announced >= 0) body = Buffer.allocUnsafe(announced);
        else parts = [];
      }
      if (body) body.set(chunk, filled);
      else parts!.push(chunk);
      filled += chunk.length;
    });
    return { response, body: body ?? Buffer.concat(parts ?? []) };
  }

  /**
   * `receive` over node:http(s). For large bodies it costs about a third less CPU than fetch
   * (whose web streams wrap every piece), which the mount and the advance buffer spend on every
   * read-ahead window. The same contract: ApiError for an error status, TransportError for a body
   * cut short, longer or shorter than announced; `onChunk` returning false ends it early.
   */
  private receiveOverHttp(
    request: ApiRequest,
    onChunk: (chunk: Uint8Array, response: ReceivedResponse) => boolean | void,
    clock: Clock,
  ): Promise<ReceivedResponse> {
    this.options.onRequest?.(request);
    const { signal } = clock;
    return new Promise<ReceivedResponse>((resolve, reject) => {
      let settled = false;
      // Out of time (or cancelled) at any stage: settled at once, whatever the socket does next.
      const onAbort = (): void => done(signal?.reason ?? new Error('aborted'));
      signal?.addEventListener('abort', onAbort, { once: true });
      const done = (error: unknown, response?: ReceivedResponse): void => {
        if (settled) return;
        settled = true;
        signal?.removeEventListener('abort', onAbort);
        if (error === undefined) {
          resolve(response!);
          return;
        }
        const failure: unknown = signal?.aborted ? (signal.reason ?? error) : error;
        reject(failure instanceof Error ? failure : new Error(String(failure)));
      };
      let url: URL;
      try {
        url = new URL(`${this.options.baseUrl}${request.url}`);
      } catch (err) {
        done(new TransportError(`no answer from the API: ${(err as Error).message}`, { cause: err }));
        return;
      }
      const client = url.protocol === 'https:' ? https : http;
      this.agent ??= new client.Agent({ keepAlive: true });
      const req = client.request(url, {
        method: request.method,
        agent: this.agent,
        headers: { authorization: `Bearer ${this.options.token}`, ...request.headers },
        signal,
      });
      req.on('error', (err) => done(wrapTransport(err, signal)));
      req.on('response', (res) => {
        this.heard(clock);
        const status = res.statusCode ?? 0;
        const response: ReceivedResponse = {
          status,
          headers: {
            get: (name) => {
              const value = res.headers[name.toLowerCase()];
              return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
            },
          },
        };
        if (status >= 400 || status === 202) {
          const pieces: Buffer[] = [];
          res.on('data', (piece: Buffer) => pieces.push(piece));
          res.on('end', () => done(apiError(status, Buffer.concat(pieces).toString('utf8'))));
          res.on('error', (err) => done(wrapTransport(err, signal)));
          return;
        }
        const announced = Number(res.headers['content-length'] ?? NaN);
        const known = Number.isSafeInteger(announced) && announced >= 0;
        let received = 0;
        res.on('data', (piece: Buffer) => {
          if (settled) return;
          this.heard(clock);
          received += piece.length;
          if (known && received > announced) {
            done(new TransportError('the body is longer than announced'));
            res.destroy();
            return;
          }
          let stop = false;
          try {
            stop = onChunk(piece, response) === false;
          } catch (error) {
            // The caller's own error, not the transport's.
            done(error);
            res.destroy();
            return;
          }
          if (stop) {
            done(undefined, response);
            // A body read to its announced end keeps the connection for the next request.
            if (!known || received < announced) res.destroy();
          }
        });
        res.on('end', () =>
          known && received !== announced
            ? done(new TransportError(`the body ended after ${received} of ${announced} bytes`))
            : done(undefined, response),
        );
        res.on('error', (err) => done(wrapTransport(err, signal)));
        res.on('close', () =>
          done(new TransportError(`the body ended after ${received} bytes: the connection closed`)),
        );
      });
      if (request.body !== undefined) clock.bodySent();
      req.end(request.body);
    });
  }
}

/** The bytes as a stream of one piece, the bytes themselves (not a byte stream: that would detach them). */
function inPlace(bytes: Uint8Array): ReadableStream<Uint8Array> {
  return new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(bytes);
      controller.close();
    },
  });
}

export const dataUrl = (path: string): string => `/api/v1/data?path=${encodeURIComponent(path)}`;

/**
 * Worth another try: no answer, a reset connection, a server-side failure (5xx, 429), or a 202 (the
 * bytes are being staged from an archive, docs/storage.md). Not a
 * timeout (RequestTimeoutError) nor a request refused during an outage (SiteUnreachableError): the
 * caller chose how long to wait, and trying again would multiply it.
 */
export function isTransient(err: unknown): boolean {
  if (err instanceof RequestTimeoutError || err instanceof SiteUnreachableError) return false;
  if (err instanceof TransportError) return true;
  if (err instanceof ApiError) return err.status >= 500 || err.status === 429 || err.status === 202;
  return false;
}
