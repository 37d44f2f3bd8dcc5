import { Injectable } from '@nestjs/common';
import {
  ErrorCode,
  joinPath,
  type CreateUserSchema,
  type Page,
  type UpdateUserSchema,
  type UserDto,
} from '@tributary/shared';
import type { z } from 'zod';
import { AccessService } from '../access/access.service';
import { hashPassword, verifyPassword } from '../auth/secrets';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { idString, iso } from '../common/serialize';
import { GroupsRepository } from '../groups/groups.repository';
import { HOME_ROOT } from '../sites/site-context';
import { UserProfileRepository } from './user-profile.repository';
import { UserRecord, UsersRepository } from './users.repository';

export function toUserDto(u: UserRecord): UserDto {
  return {
    id: idString(u.id),
    username: u.username,
    displayName: u.displayName,
    email: u.email,
    isAdmin: u.isAdmin,
    disabled: u.disabledAt !== null,
    activeGroup: u.activeGroup,
    groups: u.groups,
    homePath: joinPath(HOME_ROOT, u.username),
    createdAt: iso(u.createdAt),
    updatedAt: iso(u.updatedAt),
  };
}

@Injectable()
export class UsersService {
  constructor(
    private readonly repo: UsersRepository,
    private readonly profiles: UserProfileRepository,
    private readonly groups: GroupsRepository,
    private readonly access: AccessService,
  ) {}

  async describe(userId: bigint): Promise<UserDto> {
    const user = await this.profiles.find(userId);
    if (!user) throw notFound('the user');
    return toUserDto(user);
  }

  async list(principal: Principal, limit: number, cursor?: string): Promise<Page<UserDto>> {
    this.access.assertAdmin(principal);
    const { items, total } = await this.repo.list(limit, cursor);
    const last = items.at(-1);
    return {
      items: items.map(toUserDto),
      total,
      nextCursor: items.length === limit && last ? last.username : undefined,
    };
  }

  async get(principal: Principal, username: string): Promise<UserDto> {
    if (principal.username !== username) {
      this.access.assertAdmin(principal);
      if (principal.token && principal.token.scope !== 'admin') {
        throw new DomainError(
          ErrorCode.TokenScopeInsufficient,
          `this token has scope "${principal.token.scope}"; reading other accounts needs "admin"`,
        );
      }
    }
    const user = await this.repo.findByUsername(username);
    if (!user) throw notFound(`user "${username}"`);
    return toUserDto(user);
  }

  async create(principal: Principal | null, input: z.output<typeof CreateUserSchema>): Promise<UserDto> {
    if (principal) this.access.assertAdmin(principal);
    const created = await this.repo.create({
      username: input.username,
      displayName: input.displayName ?? input.username,
      email: input.email ?? null,
      passwordHash: await hashPassword(input.password),
      isAdmin: input.isAdmin,
      createdBy: principal?.userId ?? null,
    });
    if (created === 'taken') {
      throw new DomainError(ErrorCode.NameTaken, `the username "${input.username}" is taken; choose another`);
    }
    return toUserDto(created);
  }

  async update(
    principal: Principal,
    username: string,
    input: z.output<typeof UpdateUserSchema>,
  ): Promise<UserDto> {
    this.access.assertAdmin(principal);
    const user = await this.repo.findByUsername(username);
    if (!user) throw notFound(`user "${username}"`);
    if (user.id === principal.userId && (input.isAdmin === false || input.disabled === true)) {
      throw new DomainError(
        ErrorCode.ValidationFailed,
        'you cannot remove your own administrator rights or disable yourself; ask another administrator',
      );
    }
    const own = user.id === principal.userId;
    // One's own password needs the current one on every path (as PUT /me/password does), so a stolen
    // session or admin token cannot take the account over; another user's password needs none.
    if (input.password && own) {
      if (input.currentPassword === undefined) {
        throw new DomainError(
          ErrorCode.ValidationFailed,
          'give currentPassword to change your own password',
          { currentPassword: ['is required to change your own password'] },
        );
      }
      await this.verifyCurrentPassword(user.id, input.currentPassword);
    }
    const updated = await this.repo.update(
      user.id,
      {
        displayName: input.displayName,
        email: input.email,
        isAdmin: input.isAdmin,
        passwordHash: input.password ? await hashPassword(input.password) : undefined,
        disabledAt: input.disabled === undefined ? undefined : input.disabled ? new Date() : null,
      },
      principal.userId,
    );
    // Changing one's own password keeps the session that did it, as PUT /me/password does.
    if (input.password || input.disabled) {
      await this.repo.endSessions(user.id, own ? principal.sessionId : undefined);
    }
    return toUserDto(updated);
  }

  async changePassword(principal: Principal, currentPassword: string, newPassword: string): Promise<void> {
    await this.verifyCurrentPassword(principal.userId, currentPassword);
    await this.repo.update(
      principal.userId,
      { passwordHash: await hashPassword(newPassword) },
      principal.userId,
    );
    await this.repo.endSessions(principal.userId, principal.sessionId);
  }

  private async verifyCurrentPassword(userId: bigint, currentPassword: string): Promise<void> {
    const hash = await this.repo.passwordHash(userId);
    if (!hash || !(await verifyPassword(currentPassword, hash))) {
      throw new DomainError(ErrorCode.InvalidCredentials, 'the current password is wrong');
    }
  }

  /** The seed's `pchangeuser`: new collections and objects are attributed to the active group. */
  async switchGroup(principal: Principal, groupName: string): Promise<UserDto> {
    const group = await this.groups.findByName(groupName);
    if (!group) throw notFound(`group "${groupName}"`);
    if (!group.members.some((m) => m.userId === principal.userId)) {
      throw new DomainError(ErrorCode.NotAMember, `you are not a member of "${groupName}"; ask its manager`);
    }
    return toUserDto(await this.repo.update(principal.userId, { activeGroupId: group.id }, principal.userId));
  }
}
