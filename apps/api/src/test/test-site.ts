import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ErrorBody, ErrorCode, SessionDto, UserDto } from '@tributary/shared';
import pg from 'pg';
import { expect } from 'vitest';
import { createSiteApp, type SiteApp } from '../app.factory';
import { CredentialCache } from '../auth/credential-cache';
import { loadConfig, type SiteConfig } from '../config/config';
import { ReplicationService } from '../replication/replication.service';
import { adminConnection, cloneTemplate, dropDatabase, withClient } from './databases';
import { newPassword, uniqueUsername } from './factories';
import { waitFor } from './storage';
import './provided-context';

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
    const res = await fetch(this.url(pathname, options.query), { method, headers, body, redirect: 'manual' });
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

export interface TestSite {
  url: string;
  config: SiteConfig;
  connection: pg.ClientConfig;
  siteApp: SiteApp;
  /** Session client for the bootstrap administrator (signed in once, then reused). */
  admin(): Promise<TestClient>;
  login(username: string, password: string): Promise<TestClient>;
  asToken(secret: string): TestClient;
  /** A client for an existing session (e.g. a cookie kept from before a logout). */
  session(cookie: string, csrfToken: string): TestClient;
  anonymous(): TestClient;
  /** Creates an account through the API as the administrator (without signing in as it). */
  createAccount(options?: NewAccount): Promise<Omit<TestUser, 'client'>>;
  /** Creates an account through the API as the administrator and signs in as it. */
  createUser(options?: NewAccount): Promise<TestUser>;
  /** Runs one replication cycle now (deletes become purgeable after one). */
  runReplicationCycle(): Promise<void>;
  /** Runs SQL on this site's catalog database (for setting up states the API cannot reach). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<R>>;
  /**
   * Runs SQL that changes accounts, tokens or sessions behind the site's back (as a peer's applied
   * change would) and returns once the site has had the catalog's notice of it (auth/credential-cache.ts).
   */
  changeCredentials(sql: string, params?: unknown[]): Promise<void>;
  close(): Promise<void>;
}

/**
 * Starts one site API on a random loopback port with its own catalog database (cloned from the
 * migrated template) and its own storage directory. Call close() in afterAll.
 */
export async function startTestSite(overrides: Record<string, string> = {}): Promise<TestSite> {
  const database = `t_${randomBytes(8).toString('hex')}`;
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'tributary-itest-site-'));
  await cloneTemplate(database);
  const connection: pg.ClientConfig = { ...adminConnection(), database };
  const config = loadConfig({
    TRIBUTARY_DATA_DIR: dataDir,
    SITE_ID: 'lsu',
    ADMIN_PASSWORD,
    LOG_LEVEL: 'error',
    ...overrides,
  });
  let siteApp: SiteApp;
  try {
    siteApp = await createSiteApp(config, connection);
    await siteApp.app.listen(0, '127.0.0.1');
  } catch (err) {
    await dropDatabase(database).catch(() => undefined);
    await rm(dataDir, { recursive: true, force: true });
    throw err;
  }
  const address = siteApp.app.getHttpServer().address() as AddressInfo;
  const url = `http://127.0.0.1:${address.port}`;
  let adminClient: Promise<TestClient> | undefined;

  async function login(username: string, password: string): Promise<TestClient> {
    const res = await new TestClient(url, { kind: 'anonymous' }).post<SessionDto>('/api/v1/auth/login', {
      username,
      password,
    });
    if (res.status !== 200) throw new Error(`login as ${username} failed: ${res.status} ${res.text}`);
    const cookie = res.headers
      .getSetCookie()
      .map((c) => /^trib_session=([^;]+)/.exec(c)?.[1])
      .find((c) => c !== undefined);
    if (!cookie) throw new Error(`login as ${username} set no session cookie`);
    return new TestClient(url, { kind: 'session', cookie, csrfToken: res.body.csrfToken }, res.body.user);
  }

  const site: TestSite = {
    url,
    config,
    connection,
    siteApp,
    admin() {
      adminClient ??= login(ADMIN_USERNAME, ADMIN_PASSWORD);
      return adminClient;
    },
    login,
    asToken: (secret) => new TestClient(url, { kind: 'token', secret }),
    session: (cookie, csrfToken) => new TestClient(url, { kind: 'session', cookie, csrfToken }),
    anonymous: () => new TestClient(url, { kind: 'anonymous' }),
    async runReplicationCycle() {
      await siteApp.app.get(ReplicationService).engine.runCycle();
    },
    async createAccount(options = {}) {
      const username = options.username ?? uniqueUsername();
      const password = options.password ?? newPassword();
      const admin = await site.admin();
      const res = await admin.post<UserDto>('/api/v1/users', {
        username,
        password,
        isAdmin: options.isAdmin ?? false,
        displayName: options.displayName,
      });
      if (res.status !== 201) throw new Error(`creating user ${username} failed: ${res.status} ${res.text}`);
      return { username, password, user: res.body };
    },
    async createUser(options = {}) {
      const account = await site.createAccount(options);
      return { ...account, client: await login(account.username, account.password) };
    },
    query<R extends pg.QueryResultRow = pg.QueryResultRow>(sql: string, params?: unknown[]) {
      return withClient(connection, (client) => client.query<R>(sql, params));
    },
    async changeCredentials(sql: string, params?: unknown[]) {
      const credentials = siteApp.app.get(CredentialCache);
      const before = credentials.forgets;
      await site.query(sql, params);
      if (!(await waitFor(() => Promise.resolve(credentials.forgets !== before))))
        throw new Error('the site had no credential notice within 5 s');
    },
    async close() {
      try {
        await siteApp.app.close();
      } finally {
        await dropDatabase(database);
        await rm(dataDir, { recursive: true, force: true });
      }
    },
  };
  return site;
}
