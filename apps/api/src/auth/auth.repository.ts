import { Injectable } from '@nestjs/common';
import type { TokenScope } from '@tributary/shared';
import { SqlPool } from '../database/sql-pool';
import { CredentialCache } from './credential-cache';

export interface AccountRecord {
  id: bigint;
  username: string;
  passwordHash: string;
  isAdmin: boolean;
  activeGroupId: bigint | null;
  activeGroupName: string | null;
  disabledAt: Date | null;
  groupIds: bigint[];
}

export interface SessionRecord {
  id: string;
  csrfToken: string;
  expiresAt: Date;
  user: AccountRecord;
}

export interface TokenRecord {
  id: bigint;
  scope: TokenScope;
  expiresAt: Date | null;
  revokedAt: Date | null;
  lastUsedAt: Date | null;
  collectionPath: string | null;
  /** Confined to a collection that is no longer live (trashed or purged). */
  confinedToDeleted: boolean;
  user: AccountRecord;
}

interface AccountRow {
  user_id: string;
  username: string;
  password_hash: string;
  is_admin: boolean;
  active_group_id: string | null;
  active_group_name: string | null;
  disabled_at: Date | null;
  group_ids: string[];
}

// Every request authenticates, so this repository is plain SQL: single round trips as prepared statements
// (see SqlPool).
const ACCOUNT_COLUMNS = `
  u.id AS user_id, u.username, u.password_hash, u.is_admin, u.active_group_id, ag.name AS active_group_name,
  u.disabled_at, ARRAY(SELECT m.group_id FROM memberships m WHERE m.user_id = u.id)::text[] AS group_ids`;
const ACCOUNT_JOINS = `JOIN users u ON u.id = x.user_id LEFT JOIN project_groups ag ON ag.id = u.active_group_id`;

const toAccount = (r: AccountRow): AccountRecord => ({
  id: BigInt(r.user_id),
  username: r.username,
  passwordHash: r.password_hash,
  isAdmin: r.is_admin,
  activeGroupId: r.active_group_id === null ? null : BigInt(r.active_group_id),
  activeGroupName: r.active_group_name,
  disabledAt: r.disabled_at,
  groupIds: r.group_ids.map((g) => BigInt(g)),
});

@Injectable()
export class AuthRepository {
  constructor(
    private readonly sql: SqlPool,
    private readonly credentials: CredentialCache,
  ) {}

  async findAccount(username: string): Promise<AccountRecord | null> {
    const { rows } = await this.sql.query<AccountRow>(
      `SELECT ${ACCOUNT_COLUMNS} FROM (SELECT id AS user_id FROM users WHERE username = $1) x ${ACCOUNT_JOINS}`,
      [username],
    );
    return rows[0] ? toAccount(rows[0]) : null;
  }

  async findAccountById(id: bigint): Promise<AccountRecord | null> {
    const { rows } = await this.sql.query<AccountRow>(
      `SELECT ${ACCOUNT_COLUMNS} FROM (SELECT id AS user_id FROM users WHERE id = $1) x ${ACCOUNT_JOINS}`,
      [id.toString()],
    );
    return rows[0] ? toAccount(rows[0]) : null;
  }

  async createSession(id: string, userId: bigint, csrfToken: string, expiresAt: Date): Promise<void> {
    await this.sql.query(
      'INSERT INTO sessions (id, user_id, csrf_token, expires_at) VALUES ($1, $2, $3, $4)',
      [id, userId.toString(), csrfToken, expiresAt],
    );
  }

  async findSession(id: string): Promise<SessionRecord | null> {
    const { rows } = await this.sql.query<AccountRow & { id: string; csrf_token: string; expires_at: Date }>(
      `SELECT x.id, x.csrf_token, x.expires_at, ${ACCOUNT_COLUMNS} FROM sessions x ${ACCOUNT_JOINS} WHERE x.id = $1`,
      [id],
    );
    const r = rows[0];
    return r ? { id: r.id, csrfToken: r.csrf_token, expiresAt: r.expires_at, user: toAccount(r) } : null;
  }

  async deleteSession(id: string): Promise<void> {
    await this.sql.query('DELETE FROM sessions WHERE id = $1', [id]);
    this.credentials.forget();
  }

  async deleteExpiredSessions(now: Date): Promise<void> {
    await this.sql.query('DELETE FROM sessions WHERE expires_at < $1', [now]);
  }

  async findToken(secretHash: string): Promise<TokenRecord | null> {
    const { rows } = await this.sql.query<
      AccountRow & {
        id: string;
        scope: TokenScope;
        expires_at: Date | null;
        revoked_at: Date | null;
        last_used_at: Date | null;
        collection_path: string | null;
        collection_id: string | null;
      }
    >(
      `SELECT x.id, x.scope, x.expires_at, x.revoked_at, x.last_used_at, x.collection_id,
              c.path AS collection_path, ${ACCOUNT_COLUMNS}
         FROM api_tokens x ${ACCOUNT_JOINS} LEFT JOIN collections c ON c.id = x.collection_id AND c.trash_id = 0
        WHERE x.secret_hash = $1`,
      [secretHash],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      id: BigInt(r.id),
      scope: r.scope,
      expiresAt: r.expires_at,
      revokedAt: r.revoked_at,
      lastUsedAt: r.last_used_at,
      collectionPath: r.collection_path,
      confinedToDeleted: r.collection_id !== null && r.collection_path === null,
      user: toAccount(r),
    };
  }

  async touchToken(id: bigint, now: Date): Promise<void> {
    await this.sql.query('UPDATE api_tokens SET last_used_at = $2 WHERE id = $1', [id.toString(), now]);
  }
}
