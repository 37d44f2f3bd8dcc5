import { ApiError, ErrorCode, type ErrorBody } from '@tributary/shared';

/** The request never got an HTTP answer (connection refused or reset, socket closed mid-body). */
export class TransportError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'TransportError';
  }
}

export function wrapTransport(err: unknown, signal?: AbortSignal): unknown {
  if (signal?.aborted) return signal.reason ?? err;
  if (err instanceof Error && err.name === 'AbortError') return err;
  const message = err instanceof Error ? err.message : String(err);
  return new TransportError(`no answer from the API: ${message}`, { cause: err });
}

/** The API's error envelope (or, without one, an error for the bare status). */
export function apiError(status: number, text: string): ApiError {
  if (status === 202) return stagingError(text);
  let body: ErrorBody | undefined;
  try {
    body = JSON.parse(text) as ErrorBody;
  } catch {
    body = undefined;
  }
  const err = body?.error;
  if (err && typeof err.code === 'string') return new ApiError(status, err.code, err.message, err.details);
  return new ApiError(
    status,
    status >= 500 ? ErrorCode.Internal : ErrorCode.ValidationFailed,
    `HTTP ${status}`,
  );
}

/**
 * A download answered `202` (its object is staged from a compound resource's archive,
 * docs/storage.md): never bytes. The message tells the progress; `details.bytesStaged`,
 * `details.bytesTotal` and `details.retryAfterSeconds` hold it as numbers (one string each).
 */
export function stagingError(text: string): ApiError {
  let body: { bytesStaged?: unknown; bytesTotal?: unknown; retryAfterSeconds?: unknown } = {};
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    body = {};
  }
  const n = (v: unknown): number => (typeof v === 'number' && Number.isFinite(v) ? v : 0);
  const staged = n(body.bytesStaged);
  const total = n(body.bytesTotal);
  return new ApiError(
    202,
    ErrorCode.ObjectStaging,
    `being staged from the archive (${staged} of ${total} bytes)`,
    {
      bytesStaged: [String(staged)],
      bytesTotal: [String(total)],
      retryAfterSeconds: [String(n(body.retryAfterSeconds) || 2)],
    },
  );
}
