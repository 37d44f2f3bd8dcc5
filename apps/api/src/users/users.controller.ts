import { Body, Controller, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  ChangePasswordSchema,
  CreateUserSchema,
  PageQuerySchema,
  SwitchGroupSchema,
  UpdateUserSchema,
  UserDtoSchema,
  UsernameSchema,
  UserPageSchema,
  type Page,
  type UserDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { CurrentPrincipal, RequireScope } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { UsersService } from './users.service';

class CreateUserDto extends createZodDto(CreateUserSchema) {}
class UpdateUserDto extends createZodDto(UpdateUserSchema) {}
class PageQueryDto extends createZodDto(PageQuerySchema) {}
class UsernameParamDto extends createZodDto(z.object({ username: UsernameSchema })) {}
class ChangePasswordDto extends createZodDto(ChangePasswordSchema) {}
class SwitchGroupDto extends createZodDto(SwitchGroupSchema) {}

@ApiTags('users')
@Controller('api/v1/users')
export class UsersController {
  constructor(private readonly users: UsersService) {}

  @Get()
  @RequireScope('admin')
  @Answer(200, UserPageSchema, 'A page of accounts')
  list(@CurrentPrincipal() p: Principal, @Query() q: PageQueryDto): Promise<Page<UserDto>> {
    return this.users.list(p, q.limit, q.cursor);
  }

  @Post()
  @RequireScope('admin')
  @Answer(201, UserDtoSchema, 'The new account')
  @Fails(409)
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateUserDto): Promise<UserDto> {
    return this.users.create(p, body);
  }

  @Get(':username')
  @Answer(200, UserDtoSchema, 'The account')
  @Fails(404)
  get(@CurrentPrincipal() p: Principal, @Param() params: UsernameParamDto): Promise<UserDto> {
    return this.users.get(p, params.username);
  }

  @Answer(200, UserDtoSchema, 'The changed account')
  @Fails(404)
  @Patch(':username')
  @RequireScope('admin')
  update(
    @CurrentPrincipal() p: Principal,
    @Param() params: UsernameParamDto,
    @Body() body: UpdateUserDto,
  ): Promise<UserDto> {
    return this.users.update(p, params.username, body);
  }
}

@ApiTags('users')
@Controller('api/v1/me')
export class MeController {
  constructor(private readonly users: UsersService) {}

  @Get()
  @Answer(200, UserDtoSchema, "The caller's account")
  me(@CurrentPrincipal() p: Principal): Promise<UserDto> {
    return this.users.describe(p.userId);
  }

  @Answer(204, null, 'Changed')
  @Put('password')
  @HttpCode(204)
  @RequireScope('admin')
  async changePassword(@CurrentPrincipal() p: Principal, @Body() body: ChangePasswordDto): Promise<void> {
    await this.users.changePassword(p, body.currentPassword, body.newPassword);
  }

  /** Switches the active project group (the seed's `pchangeuser`). */
  @Answer(200, UserDtoSchema, "The caller's account with its new active group")
  @Fails(404)
  @Put('active-group')
  switchGroup(@CurrentPrincipal() p: Principal, @Body() body: SwitchGroupDto): Promise<UserDto> {
    return this.users.switchGroup(p, body.group);
  }
}
