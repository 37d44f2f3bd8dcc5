/**
 * The portal's calls, made through the typed client from packages/shared. Same origin as the API, so
 * the session cookie goes along on its own; state-changing calls also send the session's CSRF token.
 */
import {
  ApiError as SharedApiError,
  createTributaryClient,
  type EntryDto,
  type ErrorCode,
  type ListChildrenQuery,
  type Page,
  type SessionDto,
} from '@tributary/shared';

let csrfToken: string | undefined;

const client = createTributaryClient({ baseUrl: '', csrfToken: () => csrfToken });

/** A failed call: the API's error code when it answered, or a stand-in when it could not be reached. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: ErrorCode | 'NETWORK_ERROR',
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

async function call<T>(run: () => Promise<T>, signal?: AbortSignal): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof SharedApiError) throw new ApiError(err.status, err.code, err.message, err.details);
    if (signal?.aborted) throw err;
    throw new ApiError(
      0,
      'NETWORK_ERROR',
      'Could not reach the server. Check your connection and try again.',
    );
  }
}

function remember(session: SessionDto): SessionDto {
  csrfToken = session.csrfToken;
  return session;
}

/** The current session, or `null` when the cookie is missing or no longer valid. */
export async function getSession(signal?: AbortSignal): Promise<SessionDto | null> {
  try {
    return remember(await call(() => client.session(signal), signal));
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    throw err;
  }
}

export async function login(username: string, password: string): Promise<SessionDto> {
  return remember(await call(() => client.login(username, password)));
}

export async function logout(token: string): Promise<void> {
  csrfToken = token;
  await call(() => client.logout());
  csrfToken = undefined;
}

export type SortKey = NonNullable<ListChildrenQuery['sort']>;
export type ListChildrenParams = ListChildrenQuery;

/** One page of a collection's children. */
export function listChildren(params: ListChildrenParams, signal?: AbortSignal): Promise<Page<EntryDto>> {
  return call(() => client.listChildren({ limit: 100, ...params }, signal), signal);
}
