import { Injectable } from '@nestjs/common';
import { ErrorCode, joinPath, type GroupDto } from '@tributary/shared';
import { AccessService } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { idString, iso } from '../common/serialize';
import { PROJECTS_ROOT, PUBLIC_GROUP } from '../sites/site-context';
import { GroupRecord, GroupsRepository } from './groups.repository';

const toDto = (g: GroupRecord): GroupDto => ({
  id: idString(g.id),
  name: g.name,
  description: g.description,
  members: g.members.map((m) => ({ username: m.username, role: m.role })),
  path: joinPath(PROJECTS_ROOT, g.name),
  createdAt: iso(g.createdAt),
});

@Injectable()
export class GroupsService {
  constructor(
    private readonly repo: GroupsRepository,
    private readonly access: AccessService,
  ) {}

  /** Administrators see every group; others see the groups they belong to. */
  async list(principal: Principal): Promise<GroupDto[]> {
    return (await this.repo.list(principal.isAdmin ? null : principal.userId)).map(toDto);
  }

  async get(principal: Principal, name: string): Promise<GroupDto> {
    const group = await this.load(name);
    if (!principal.isAdmin && !group.members.some((m) => m.userId === principal.userId)) {
      throw new DomainError(ErrorCode.PermissionDenied, `you are not a member of "${name}"`);
    }
    return toDto(group);
  }

  async create(principal: Principal, name: string, description: string): Promise<GroupDto> {
    this.access.assertAdmin(principal);
    const created = await this.repo.create(name, description, principal.userId);
    if (created === 'taken')
      throw new DomainError(ErrorCode.NameTaken, `a group "${name}" exists; choose another name`);
    return toDto(created);
  }

  async update(principal: Principal, name: string, description: string): Promise<GroupDto> {
    const group = await this.load(name);
    this.assertManager(principal, group);
    await this.repo.updateDescription(group.id, description, principal.userId);
    return toDto(await this.load(name));
  }

  async delete(principal: Principal, name: string): Promise<void> {
    this.access.assertAdmin(principal);
    const group = await this.load(name);
    if (group.name === PUBLIC_GROUP) {
      throw new DomainError(
        ErrorCode.ValidationFailed,
        `the built-in group "${PUBLIC_GROUP}" cannot be deleted`,
      );
    }
    await this.repo.delete(group.id);
  }

  async setMember(
    principal: Principal,
    name: string,
    username: string,
    role: 'member' | 'manager',
  ): Promise<GroupDto> {
    const group = await this.load(name);
    this.assertManager(principal, group);
    this.assertNotPublic(group);
    const userId = await this.repo.findUserId(username);
    if (userId === null) throw notFound(`user "${username}"`);
    await this.repo.upsertMember(group.id, userId, role, principal.userId);
    return toDto(await this.load(name));
  }

  async removeMember(principal: Principal, name: string, username: string): Promise<GroupDto> {
    const group = await this.load(name);
    this.assertManager(principal, group);
    const member = group.members.find((m) => m.username === username);
    if (!member) throw notFound(`member "${username}" of "${name}"`);
    await this.repo.removeMember(group.id, member.userId);
    return toDto(await this.load(name));
  }

  private async load(name: string): Promise<GroupRecord> {
    const group = await this.repo.findByName(name);
    if (!group) throw notFound(`group "${name}"`);
    return group;
  }

  private assertNotPublic(group: GroupRecord): void {
    if (group.name === PUBLIC_GROUP) {
      throw new DomainError(ErrorCode.ValidationFailed, `every account is in "${PUBLIC_GROUP}" already`);
    }
  }

  /** Administrators and the group's managers manage its members. */
  private assertManager(principal: Principal, group: GroupRecord): void {
    if (principal.isAdmin && !principal.token?.collectionPath) return;
    const me = group.members.find((m) => m.userId === principal.userId);
    if (me?.role !== 'manager') {
      throw new DomainError(
        ErrorCode.PermissionDenied,
        `only an administrator or a manager of "${group.name}" can do this`,
      );
    }
  }
}
