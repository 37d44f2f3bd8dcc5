import { Injectable } from '@nestjs/common';
import { SqlPool } from '../database/sql-pool';
import type { UserRecord } from './users.repository';

/** The signed-in user's own account, read on every portal page: plain SQL (UsersRepository is Prisma). */
@Injectable()
export class UserProfileRepository {
  constructor(private readonly sql: SqlPool) {}

  /**
   * One account with its groups: plain SQL in one round trip, because every portal page and every
   * `GET /api/v1/me` asks for it (through Prisma it took three queries and about 5 ms).
   */
  async find(id: bigint): Promise<UserRecord | null> {
    const { rows } = await this.sql.query<{
      id: string;
      username: string;
      display_name: string;
      email: string | null;
      is_admin: boolean;
      disabled_at: Date | null;
      created_at: Date;
      updated_at: Date;
      active_group: string | null;
      groups: string[];
    }>(
      `SELECT u.id, u.username, u.display_name, u.email, u.is_admin, u.disabled_at, u.created_at, u.updated_at,
              ag.name AS active_group,
              ARRAY(SELECT g.name FROM memberships m JOIN project_groups g ON g.id = m.group_id
                     WHERE m.user_id = u.id ORDER BY g.name) AS groups
         FROM users u LEFT JOIN project_groups ag ON ag.id = u.active_group_id
        WHERE u.id = $1`,
      [id.toString()],
    );
    const r = rows[0];
    if (!r) return null;
    return {
      id: BigInt(r.id),
      username: r.username,
      displayName: r.display_name,
      email: r.email,
      isAdmin: r.is_admin,
      disabledAt: r.disabled_at,
      createdAt: r.created_at,
      updatedAt: r.updated_at,
      activeGroup: r.active_group,
      groups: r.groups,
    };
  }
}
