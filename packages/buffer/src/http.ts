import { ApiError, ErrorCode, type ErrorBody } from '@tributary/shared';

/** Where the API is and how to authenticate; `fetch` can be replaced (tests, proxies). */
export interface ApiConnectionOptions {
  baseUrl: string;
  /** An API token (`trib_...`), sent as `Authorization: Bearer`. */
  token: string;
  fetch?: typeof fetch;
}

/** The request never got an HTTP answer (connection refused or reset, socket closed mid-body). */
export class TransportError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransportError';
  }
}

export interface ApiRequest {
  method: string;
  /** Path and query, e.g. `/api/v1/data?path=...`. */
  url: string;
  headers?: Record<string, string>;
  body?: Uint8Array | string;
  signal?: AbortSignal;
}

/** A thin layer over fetch for the transfer engine: auth, error envelopes, transport failures. */
export class ApiConnection {
  private readonly fetchImpl: typeof fetch;

  constructor(readonly options: ApiConnectionOptions) {
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  /** Sends the request; throws ApiError for an error status, TransportError without an answer. */
  async send(request: ApiRequest): Promise<Response> {
    let res: Response;
    try {
      res = await this.fetchImpl(`${this.options.baseUrl}${request.url}`, {
        method: request.method,
        headers: { authorization: `Bearer ${this.options.token}`, ...request.headers },
        body: request.body as RequestInit['body'],
        signal: request.signal,
      });
    } catch (err) {
      throw wrapTransport(err, request.signal);
    }
    if (!res.ok && res.status !== 304) throw await toApiError(res);
    return res;
  }

  async json<T>(request: ApiRequest): Promise<T> {
    const res = await this.send(request);
    try {
      return (await res.json()) as T;
    } catch (err) {
      throw wrapTransport(err, request.signal);
    }
  }

  /**
   * The whole body as bytes (transport failures while reading it are TransportError). Read chunk by
   * chunk into one buffer of the announced length: `arrayBuffer()` is about half as fast on large
   * bodies (measured: 240 against 500 MiB/s for 32 MiB ranges on loopback).
   */
  async bytes(request: ApiRequest): Promise<{ response: Response; body: Uint8Array }> {
    const response = await this.send(request);
    if (!response.body) return { response, body: new Uint8Array(0) };
    const announced = Number(response.headers.get('content-length') ?? NaN);
    try {
      const chunks = response.body as unknown as AsyncIterable<Uint8Array>;
      if (!Number.isSafeInteger(announced) || announced < 0) {
        const parts: Uint8Array[] = [];
        for await (const chunk of chunks) parts.push(chunk);
        return { response, body: Buffer.concat(parts) };
      }
      const body = Buffer.allocUnsafe(announced);
      let filled = 0;
      for await (const chunk of chunks) {
        if (filled + chunk.length > announced) throw new TransportError('the body is longer than announced');
        body.set(chunk, filled);
        filled += chunk.length;
      }
      if (filled !== announced)
        throw new TransportError(`the body ended after ${filled} of ${announced} bytes`);
      return { response, body };
    } catch (err) {
      if (err instanceof TransportError) throw err;
      throw wrapTransport(err, request.signal);
    }
  }
}

export const dataUrl = (path: string): string => `/api/v1/data?path=${encodeURIComponent(path)}`;

function wrapTransport(err: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason ?? err;
  if (err instanceof Error && err.name === 'AbortError') return err;
  const message = err instanceof Error ? err.message : String(err);
  return new TransportError(`no answer from the API: ${message}`, { cause: err });
}

async function toApiError(res: Response): Promise<ApiError> {
  const body = (await res.json().catch(() => undefined)) as ErrorBody | undefined;
  const err = body?.error;
  if (err && typeof err.code === 'string')
    return new ApiError(res.status, err.code, err.message, err.details);
  return new ApiError(
    res.status,
    res.status >= 500 ? ErrorCode.Internal : ErrorCode.ValidationFailed,
    `HTTP ${res.status}`,
  );
}

/** Worth another try: no answer, a reset connection, or a server-side failure (5xx, 429). */
export function isTransient(err: unknown): boolean {
  if (err instanceof TransportError) return true;
  if (err instanceof ApiError) return err.status >= 500 || err.status === 429;
  return false;
}
