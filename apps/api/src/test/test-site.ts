import { mkdtemp, rm } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  adminConnection,
  createAccount,
  cloneTemplate,
  dropDatabase,
  signIn,
  TestClient,
  testStorageEnv,
  waitFor,
  withClient,
  type NewAccount,
  type TestUser,
} from '@tributary/testkit';
import pg from 'pg';
import { inject } from 'vitest';
import { createSiteApp, type SiteApp } from '../app.factory';
import { CredentialCache } from '../auth/credential-cache';
import { loadConfig, type SiteConfig } from '../config/config';
import { ReplicationService } from '../replication/replication.service';

// The HTTP side of the harness lives in @tributary/testkit (the agent's tests use it too).
export {
  ADMIN_PASSWORD,
  ADMIN_USERNAME,
  expectError,
  expectStatus,
  TestClient,
  type NewAccount,
  type RequestOptions,
  type TestResponse,
  type TestUser,
} from '@tributary/testkit';

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
    // TRIBUTARY_TEST_STORAGE=s3: the site's bytes in a bucket of its own on the run's S3 server.
    ...testStorageEnv(inject('s3'), 'site'),
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

  const login = (username: string, password: string) => signIn(url, username, password);

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
      return createAccount(await site.admin(), options);
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
