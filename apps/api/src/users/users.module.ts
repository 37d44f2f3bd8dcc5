import { Module } from '@nestjs/common';
import { GroupsController } from '../groups/groups.controller';
import { GroupsRepository } from '../groups/groups.repository';
import { GroupsService } from '../groups/groups.service';
import { MeController, UsersController } from './users.controller';
import { UsersRepository } from './users.repository';
import { UsersService } from './users.service';

/** Accounts and project groups live together: switching groups and membership cross both. */
@Module({
  controllers: [UsersController, MeController, GroupsController],
  providers: [UsersRepository, UsersService, GroupsRepository, GroupsService],
  exports: [UsersService, UsersRepository],
})
export class UsersModule {}
