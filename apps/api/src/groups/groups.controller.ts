import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  AddMemberSchema,
  CreateGroupSchema,
  GroupDtoSchema,
  GroupNameSchema,
  UpdateGroupSchema,
  UsernameSchema,
  type GroupDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { CurrentPrincipal, RequireScope } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { GroupsService } from './groups.service';

class CreateGroupDto extends createZodDto(CreateGroupSchema) {}
class UpdateGroupDto extends createZodDto(UpdateGroupSchema) {}
class AddMemberDto extends createZodDto(AddMemberSchema) {}
class GroupParamDto extends createZodDto(z.object({ name: GroupNameSchema })) {}
class MemberParamDto extends createZodDto(z.object({ name: GroupNameSchema, username: UsernameSchema })) {}

@ApiTags('groups')
@Controller('api/v1/groups')
export class GroupsController {
  constructor(private readonly groups: GroupsService) {}

  @Get()
  @Answer(200, [GroupDtoSchema], 'The groups')
  list(@CurrentPrincipal() p: Principal): Promise<GroupDto[]> {
    return this.groups.list(p);
  }

  @Post()
  @RequireScope('admin')
  @Answer(201, GroupDtoSchema, 'The new group')
  @Fails(409)
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateGroupDto): Promise<GroupDto> {
    return this.groups.create(p, body.name, body.description);
  }

  @Get(':name')
  @Answer(200, GroupDtoSchema, 'The group')
  @Fails(404)
  get(@CurrentPrincipal() p: Principal, @Param() params: GroupParamDto): Promise<GroupDto> {
    return this.groups.get(p, params.name);
  }

  @Answer(200, GroupDtoSchema, 'The changed group')
  @Fails(404)
  @Patch(':name')
  @RequireScope('admin')
  update(
    @CurrentPrincipal() p: Principal,
    @Param() params: GroupParamDto,
    @Body() body: UpdateGroupDto,
  ): Promise<GroupDto> {
    return this.groups.update(p, params.name, body.description);
  }

  @Answer(204, null, 'Deleted')
  @Fails(404)
  @Delete(':name')
  @HttpCode(204)
  @RequireScope('admin')
  async delete(@CurrentPrincipal() p: Principal, @Param() params: GroupParamDto): Promise<void> {
    await this.groups.delete(p, params.name);
  }

  @Answer(200, GroupDtoSchema, 'The group with the member')
  @Fails(404)
  @Put(':name/members')
  @RequireScope('admin')
  setMember(
    @CurrentPrincipal() p: Principal,
    @Param() params: GroupParamDto,
    @Body() body: AddMemberDto,
  ): Promise<GroupDto> {
    return this.groups.setMember(p, params.name, body.username, body.role);
  }

  @Answer(200, GroupDtoSchema, 'The group without the member')
  @Fails(404)
  @Delete(':name/members/:username')
  @RequireScope('admin')
  removeMember(@CurrentPrincipal() p: Principal, @Param() params: MemberParamDto): Promise<GroupDto> {
    return this.groups.removeMember(p, params.name, params.username);
  }
}
