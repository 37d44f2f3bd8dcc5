/**
 * The portal's one door to the API: the typed client from packages/shared, with the session's CSRF
 * token, and its errors turned into one `ApiError` that screens show next to what caused them.
 * Same origin as the API, so the session cookie goes along on its own.
 *
 * Screens call `api.<method>(...)` inside react-query hooks; nothing else issues requests, except the
 * upload helper below, which needs XMLHttpRequest for upload progress (fetch has none).
 */
import {
  ApiError as SharedApiError,
  createTributaryClient,
  type EntryDto,
  type ErrorCode,
  type SessionDto,
  type TributaryClient,
} from '@tributary/shared';

let csrfToken: string | undefined;

const client = createTributaryClient({ baseUrl: '', csrfToken: () => csrfToken });

/** A failed call: the API's error code when it answered, or a stand-in when it could not be reached. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode | 'NETWORK_ERROR' | 'ABORTED',
    message: string,
    readonly details?: Record<string, string[]>,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Text to show a person for any failure. */
export function errorMessage(err: unknown): string {
  return err instanceof Error && err.message !== '' ? err.message : 'Something went wrong.';
}

function toPortalError(err: unknown): Error {
  if (err instanceof SharedApiError) return new ApiError(err.status, err.code, err.message, err.details);
  if (err instanceof ApiError) return err;
  if (err instanceof DOMException && err.name === 'AbortError') return err;
  return new ApiError(0, 'NETWORK_ERROR', 'Could not reach the server. Check your connection and try again.');
}

/** The client's methods with every failure mapped to the portal's `ApiError`. */
function withPortalErrors<T extends object>(target: T): T {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(target)) {
    if (typeof value !== 'function') {
      out[key] = value;
      continue;
    }
    const fn = value as (...args: unknown[]) => unknown;
    out[key] = (...args: unknown[]) => {
      const result = fn(...args);
      return result instanceof Promise
        ? result.catch((err: unknown) => {
            throw toPortalError(err);
          })
        : result;
    };
  }
  return out as T;
}

/**
 * The typed client (`createTributaryClient`, packages/shared/src/client.ts): same methods and types,
 * failures as the portal's `ApiError`.
 */
export const api: TributaryClient = withPortalErrors(client);

export function rememberSession(session: SessionDto): SessionDto {
  csrfToken = session.csrfToken;
  return session;
}

export function forgetSession(): void {
  csrfToken = undefined;
}

/** The current session, or `null` when the cookie is missing or no longer valid. */
export async function getSession(signal?: AbortSignal): Promise<SessionDto | null> {
  try {
    return rememberSession(await api.session(signal));
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

export async function login(username: string, password: string): Promise<SessionDto> {
  return rememberSession(await api.login(username, password));
}

export async function logout(): Promise<void> {
  await api.logout();
  forgetSession();
}

export interface UploadOptions {
  overwrite?: boolean;
  onProgress?: (loaded: number, total: number) => void;
  signal?: AbortSignal;
}

/**
 * Uploads one file (`PUT /api/v1/data?path=`, the route the typed client's `upload` uses) with
 * XMLHttpRequest, which reports upload progress. Failures come back as `ApiError` like every other
 * call; a cancel rejects with code `ABORTED`.
 */
export function uploadFile(path: string, file: Blob, opts: UploadOptions = {}): Promise<EntryDto> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const url = `${client.downloadUrl(path)}${opts.overwrite ? '&overwrite=true' : ''}`;
    xhr.open('PUT', url);
    xhr.setRequestHeader('content-type', 'application/octet-stream');
    if (csrfToken) xhr.setRequestHeader('x-csrf-token', csrfToken);
    xhr.responseType = 'json';
    xhr.upload.onprogress = (e) => opts.onProgress?.(e.loaded, e.lengthComputable ? e.total : file.size);
    xhr.onload = () => {
      const body = xhr.response as unknown;
      if (xhr.status >= 200 && xhr.status < 300) {
        opts.onProgress?.(file.size, file.size);
        resolve(body as EntryDto);
        return;
      }
      const e = (
        body as { error?: { code?: ErrorCode; message?: string; details?: Record<string, string[]> } }
      )?.error;
      reject(
        new ApiError(
          xhr.status,
          e?.code ?? 'INTERNAL',
          e?.message ?? `The upload failed (HTTP ${xhr.status}).`,
          e?.details,
        ),
      );
    };
    xhr.onerror = () =>
      reject(
        new ApiError(0, 'NETWORK_ERROR', 'The connection was lost during the upload. Retry when online.'),
      );
    xhr.onabort = () => reject(new ApiError(0, 'ABORTED', 'Cancelled.'));
    if (opts.signal) {
      if (opts.signal.aborted) {
        reject(new ApiError(0, 'ABORTED', 'Cancelled.'));
        return;
      }
      opts.signal.addEventListener('abort', () => xhr.abort(), { once: true });
    }
    xhr.send(file);
  });
}

/** The download URL of an object; the browser shows its own progress. */
export function downloadHref(path: string): string {
  return client.downloadUrl(path);
}
