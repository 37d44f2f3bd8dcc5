import type pg from 'pg';
import { startFederation, type Federation, type FederationOptions } from './federation';
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  createAccount,
  signIn,
  TestClient,
  type NewAccount,
  type TestUser,
} from './http-client';

/** One site process, for tests of the site's clients (the agent, scripts): HTTP and its catalog only. */
export interface SiteProcess {
  readonly url: string;
  /** The federation of one it runs in (restart, outputs, its admin token). */
  readonly federation: Federation;
  /** Session client of the bootstrap administrator (signed in once, then reused). */
  admin(): Promise<TestClient>;
  asToken(secret: string): TestClient;
  anonymous(): TestClient;
  /** Creates an account through the API as the administrator and signs in as it. */
  createUser(options?: NewAccount): Promise<TestUser>;
  /** Runs SQL on the site's catalog database (for states the API cannot reach). */
  query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    sql: string,
    params?: unknown[],
  ): Promise<pg.QueryResult<R>>;
  close(): Promise<void>;
}

/** Starts one real site process (the built API) on its own catalog and storage. */
export async function startSite(
  options: Omit<FederationOptions, 'ids'> & { id?: string } = {},
): Promise<SiteProcess> {
  const federation = await startFederation({ ...options, ids: [options.id ?? 'lsu'] });
  const site = federation.sites[0]!;
  let admin: Promise<TestClient> | undefined;
  return {
    url: site.url,
    federation,
    admin: () => (admin ??= signIn(site.url, ADMIN_USERNAME, ADMIN_PASSWORD)),
    asToken: (secret) => new TestClient(site.url, { kind: 'token', secret }),
    anonymous: () => new TestClient(site.url, { kind: 'anonymous' }),
    async createUser(options = {}) {
      const account = await createAccount(site.http, options);
      return { ...account, client: await signIn(site.url, account.username, account.password) };
    },
    query: (sql, params) => site.query(sql, params),
    close: () => federation.close(),
  };
}
