/**
 * A small typed wrapper over fetch for the calls the portal makes. Same origin as the API, so the
 * session cookie goes along on its own; state-changing calls also send the session's CSRF token.
 */
import type { EntryDto, ErrorBody, ErrorCode, Page, SessionDto } from '@tributary/shared';

const BASE = '/api/v1';

/** A failed call: the API's `{ error }` body when there is one, otherwise a stand-in. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode | 'NETWORK_ERROR' | 'BAD_RESPONSE',
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

interface RequestOptions {
  method?: 'GET' | 'POST';
  body?: unknown;
  csrfToken?: string;
  signal?: AbortSignal;
}

async function request<T>(
  url: string,
  { method = 'GET', body, csrfToken, signal }: RequestOptions = {},
): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (csrfToken !== undefined) headers['X-CSRF-Token'] = csrfToken;

  let response: Response;
  try {
    response = await fetch(BASE + url, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
      signal,
    });
  } catch (err) {
    if (signal?.aborted) throw err;
    throw new ApiError(
      0,
      'NETWORK_ERROR',
      'Could not reach the server. Check your connection and try again.',
    );
  }

  if (response.status === 204) return undefined as T;
  const payload: unknown = await response.json().catch(() => undefined);
  if (response.ok) {
    if (payload === undefined) {
      throw new ApiError(response.status, 'BAD_RESPONSE', 'The server sent an unreadable answer.');
    }
    return payload as T;
  }
  if (isErrorBody(payload)) {
    const { code, message, details } = payload.error;
    throw new ApiError(response.status, code, message, details);
  }
  throw new ApiError(response.status, 'BAD_RESPONSE', `The server answered with status ${response.status}.`);
}

function isErrorBody(value: unknown): value is ErrorBody {
  if (typeof value !== 'object' || value === null || !('error' in value)) return false;
  const error: unknown = value.error;
  return (
    typeof error === 'object' &&
    error !== null &&
    'code' in error &&
    typeof error.code === 'string' &&
    'message' in error &&
    typeof error.message === 'string'
  );
}

/** The current session, or `null` when the cookie is missing or no longer valid. */
export async function getSession(signal?: AbortSignal): Promise<SessionDto | null> {
  try {
    return await request<SessionDto>('/auth/session', { signal });
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

export function login(username: string, password: string): Promise<SessionDto> {
  return request<SessionDto>('/auth/login', { method: 'POST', body: { username, password } });
}

export function logout(csrfToken: string): Promise<void> {
  return request<void>('/auth/logout', { method: 'POST', csrfToken });
}

export type SortKey = 'name' | 'size' | 'modified';

export interface ListChildrenParams {
  path: string;
  cursor?: string;
  limit?: number;
  sort?: SortKey;
  order?: 'asc' | 'desc';
}

/** One page of a collection's children. */
export function listChildren(params: ListChildrenParams, signal?: AbortSignal): Promise<Page<EntryDto>> {
  const query = new URLSearchParams({ path: params.path, limit: String(params.limit ?? 100) });
  if (params.cursor !== undefined) query.set('cursor', params.cursor);
  if (params.sort !== undefined) query.set('sort', params.sort);
  if (params.order !== undefined) query.set('order', params.order);
  return request<Page<EntryDto>>(`/namespace/children?${query.toString()}`, { signal });
}
