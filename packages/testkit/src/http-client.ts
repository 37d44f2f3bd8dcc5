import type { ErrorBody, ErrorCode, SessionDto, UserDto } from '@tributary/shared';
import { expect } from 'vitest';
import { newPassword, uniqueUsername } from './factories';

/** The bootstrap administrator every test site and federation starts with. */
export const ADMIN_USERNAME = 'admin';
export const ADMIN_PASSWORD = 'admin-password-123';

export interface TestResponse<T = unknown> {
  status: number;
  /** Parsed JSON when the response is JSON, the text otherwise. */
  body: T;
  headers: Headers;
  text: string;
  bytes: Buffer;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is (set the content type in `headers`). */
  body?: string | Uint8Array;
  /** Session clients: `false` omits X-CSRF-Token, a string replaces it. */
  csrf?: string | false;
}

type Auth =
  | { kind: 'anonymous' }
  | { kind: 'session'; cookie: string; csrfToken: string }
  | { kind: 'token'; secret: string };

/** A small HTTP client for one caller: anonymous, a portal session (cookie + CSRF) or a bearer token. */
export class TestClient {
  constructor(
    readonly baseUrl: string,
    private auth: Auth,
    /** The account behind a session client. */
    readonly user?: UserDto,
  ) {}

  get csrfToken(): string | undefined {
    return this.auth.kind === 'session' ? this.auth.csrfToken : undefined;
  }

  get sessionCookie(): string | undefined {
    return this.auth.kind === 'session' ? this.auth.cookie : undefined;
  }

  url(pathname: string, query?: RequestOptions['query']): string {
    const url = new URL(pathname, this.baseUrl);
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    return url.toString();
  }

  /** Headers that authenticate this caller (for requests made without this client, e.g. node:http). */
  authHeaders(method = 'GET'): Record<string, string> {
    const headers: Record<string, string> = {};
    if (this.auth.kind === 'token') headers.authorization = `Bearer ${this.auth.secret}`;
    if (this.auth.kind === 'session') {
      headers.cookie = `trib_session=${this.auth.cookie}`;
      if (!['GET', 'HEAD', 'OPTIONS'].includes(method)) headers['x-csrf-token'] = this.auth.csrfToken;
    }
    return headers;
  }

  async request<T = unknown>(
    method: string,
    pathname: string,
    options: RequestOptions = {},
  ): Promise<TestResponse<T>> {
    const headers: Record<string, string> = { ...this.authHeaders(method) };
    if (this.auth.kind === 'session' && options.csrf !== undefined) {
      if (options.csrf === false) delete headers['x-csrf-token'];
      else headers['x-csrf-token'] = options.csrf;
    }
    let body: string | Uint8Array | undefined = options.body;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    }
    Object.assign(headers, options.headers);
    // A view over its own ArrayBuffer, which fetch's body type asks for under the DOM library too.
    const sent = body === undefined || typeof body === 'string' ? body : new Uint8Array(body);
    const res = await fetch(this.url(pathname, options.query), {
      method,
      headers,
      body: sent,
      redirect: 'manual',
    });
    const bytes = Buffer.from(await res.arrayBuffer());
    const text = bytes.toString('utf8');
    const isJson = (res.headers.get('content-type') ?? '').includes('json');
    const parsed: unknown = isJson && text.length > 0 ? JSON.parse(text) : text;
    if (this.auth.kind === 'session') {
      for (const cookie of res.headers.getSetCookie()) {
        const match = /^trib_session=([^;]*)/.exec(cookie);
        if (match) this.auth = { ...this.auth, cookie: match[1] ?? '' };
      }
    }
    return { status: res.status, body: parsed as T, headers: res.headers, text, bytes };
  }

  get<T = unknown>(pathname: string, options?: RequestOptions): Promise<TestResponse<T>> {
    return this.request<T>('GET', pathname, options);
  }

  post<T = unknown>(pathname: string, json?: unknown, options?: RequestOptions): Promise<TestResponse<T>> {
    return this.request<T>('POST', pathname, { ...options, json });
  }

  put<T = unknown>(pathname: string, json?: unknown, options?: RequestOptions): Promise<TestResponse<T>> {
    return this.request<T>('PUT', pathname, { ...options, json });
  }

  patch<T = unknown>(pathname: string, json?: unknown, options?: RequestOptions): Promise<TestResponse<T>> {
    return this.request<T>('PATCH', pathname, { ...options, json });
  }

  delete<T = unknown>(pathname: string, options?: RequestOptions): Promise<TestResponse<T>> {
    return this.request<T>('DELETE', pathname, options);
  }
}

/** Asserts the error envelope: status, code and a non-empty message. Returns the error for more checks. */
export function expectError(res: TestResponse, status: number, code: ErrorCode): ErrorBody['error'] {
  const body = res.body as Partial<ErrorBody>;
  expect({ status: res.status, code: body.error?.code }, `response: ${res.text.slice(0, 500)}`).toEqual({
    status,
    code,
  });
  expect(typeof body.error?.message).toBe('string');
  expect(body.error?.message.length).toBeGreaterThan(0);
  return body.error as ErrorBody['error'];
}

/** Asserts a status, showing the body when it differs. */
export function expectStatus<T>(res: TestResponse<T>, status: number): TestResponse<T> {
  expect(res.status, `${res.status} ${res.text.slice(0, 500)}`).toBe(status);
  return res;
}

export interface TestUser {
  username: string;
  password: string;
  user: UserDto;
  client: TestClient;
}

export interface NewAccount {
  username?: string;
  password?: string;
  isAdmin?: boolean;
  displayName?: string;
}

/** Signs in through the portal's login route and returns the session client. */
export async function signIn(baseUrl: string, username: string, password: string): Promise<TestClient> {
  const res = await new TestClient(baseUrl, { kind: 'anonymous' }).post<SessionDto>('/api/v1/auth/login', {
    username,
    password,
  });
  if (res.status !== 200) throw new Error(`login as ${username} failed: ${res.status} ${res.text}`);
  const cookie = res.headers
    .getSetCookie()
    .map((c) => /^trib_session=([^;]+)/.exec(c)?.[1])
    .find((c) => c !== undefined);
  if (!cookie) throw new Error(`login as ${username} set no session cookie`);
  return new TestClient(baseUrl, { kind: 'session', cookie, csrfToken: res.body.csrfToken }, res.body.user);
}

/** Creates an account through the API with an administrator's client (without signing in as it). */
export async function createAccount(
  admin: TestClient,
  options: NewAccount = {},
): Promise<Omit<TestUser, 'client'>> {
  const username = options.username ?? uniqueUsername();
  const password = options.password ?? newPassword();
  const res = await admin.post<UserDto>('/api/v1/users', {
    username,
    password,
    isAdmin: options.isAdmin ?? false,
    displayName: options.displayName,
  });
  if (res.status !== 201) throw new Error(`creating user ${username} failed: ${res.status} ${res.text}`);
  return { username, password, user: res.body };
}
