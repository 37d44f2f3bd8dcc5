import { Inject, Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import type pg from 'pg';
import { NoticeListener } from '../database/notice-listener';
import { DATABASE_CONNECTION } from '../database/sql-pool';
import type { SessionRecord, TokenRecord } from './auth.repository';

export const CREDENTIALS_CHANNEL = 'tributary_credentials';
/** How long an answer is kept at most, even with no notice (a backstop; notices end it sooner). */
export const CREDENTIAL_TTL_MS = 10_000;
/** Answers kept at most, per kind; the oldest go first (a burst of distinct tokens cannot grow it). */
export const CREDENTIAL_CACHE_ENTRIES = 10_000;

interface Entry<T> {
  record: T;
  until: number;
}

/**
 * Recently resolved credentials (bearer tokens and session cookies, by their hash), so that a run of
 * requests costs one catalog round trip every few seconds rather than one per request.
 *
 * Kept only while the site listens on `tributary_credentials`: the catalog's triggers notify every
 * committed change to tokens, sessions, accounts, memberships, group names and collection paths
 * (this site's, a peer's applied by replication, or one written by hand), and each notice forgets
 * everything. While the listening connection is down nothing is kept, so a missed notice cannot
 * leave a revoked token working. This site's own writes also call `forget()` as they commit, so
 * the request after a revocation never races its notice.
 */
@Injectable()
export class CredentialCache implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('Credentials');
  private readonly tokens = new Map<string, Entry<TokenRecord>>();
  private readonly sessions = new Map<string, Entry<SessionRecord>>();
  private readonly listener: NoticeListener;
  /** Counts forgets: an answer read from the catalog before a forget must not be kept after it. */
  private generation = 0;

  constructor(@Inject(DATABASE_CONNECTION) connection: pg.ClientConfig) {
    this.listener = new NoticeListener({
      connection,
      channel: CREDENTIALS_CHANNEL,
      name: 'tributary-credentials',
      logger: this.logger,
      whileLost: 'every request asks the catalog until they are back',
      onNotice: () => this.forget(),
      // Answers kept before now were not covered by notices.
      onListening: () => this.forget(),
      onLost: () => this.forget(),
    });
  }

  async onModuleInit(): Promise<void> {
    // The site starts without the cache if the catalog cannot be reached yet; it retries.
    await this.listener.start().catch(() => undefined);
  }

  async onApplicationShutdown(): Promise<void> {
    await this.listener.close();
    this.forget();
  }

  /** True while notices arrive, that is, while answers may be kept. */
  get listening(): boolean {
    return this.listener.listening;
  }

  /** Answers held now (for tests and metrics). */
  get size(): number {
    return this.tokens.size + this.sessions.size;
  }

  /** Counts forgets (tests wait on it for a notice to arrive). */
  get forgets(): number {
    return this.generation;
  }

  token(secretHash: string): TokenRecord | undefined {
    return this.read(this.tokens, secretHash);
  }

  /** The token with this hash: kept, or loaded and kept (an unknown token is not kept). */
  resolveToken(secretHash: string, load: () => Promise<TokenRecord | null>): Promise<TokenRecord | null> {
    return this.resolve(this.tokens, secretHash, load);
  }

  resolveSession(idHash: string, load: () => Promise<SessionRecord | null>): Promise<SessionRecord | null> {
    return this.resolve(this.sessions, idHash, load);
  }

  /** Forgets every answer: after any write that may change what a credential resolves to. */
  forget(): void {
    this.generation += 1;
    this.tokens.clear();
    this.sessions.clear();
  }

  private read<T>(map: Map<string, Entry<T>>, key: string): T | undefined {
    const entry = map.get(key);
    if (!entry) return undefined;
    if (entry.until <= Date.now()) {
      map.delete(key);
      return undefined;
    }
    return entry.record;
  }

  private async resolve<T>(
    map: Map<string, Entry<T>>,
    key: string,
    load: () => Promise<T | null>,
  ): Promise<T | null> {
    const kept = this.read(map, key);
    if (kept) return kept;
    const before = this.generation;
    const record = await load();
    // A forget while the catalog answered may mean the answer is already out of date.
    if (record && this.listener.listening && before === this.generation) this.keep(map, key, record);
    return record;
  }

  private keep<T>(map: Map<string, Entry<T>>, key: string, record: T): void {
    map.delete(key);
    if (map.size >= CREDENTIAL_CACHE_ENTRIES) map.delete(map.keys().next().value!);
    map.set(key, { record, until: Date.now() + CREDENTIAL_TTL_MS });
  }
}
