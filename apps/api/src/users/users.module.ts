import { Module } from '@nestjs/common';
import { GroupsModule } from '../groups/groups.module';
import { MeController, UsersController } from './users.controller';
import { UserProfileRepository } from './user-profile.repository';
import { UsersRepository } from './users.repository';
import { UsersService } from './users.service';

/** Accounts; switching the active group reads the group and its members from GroupsModule. */
@Module({
  imports: [GroupsModule],
  controllers: [UsersController, MeController],
  providers: [UsersRepository, UserProfileRepository, UsersService],
  exports: [UsersService, UsersRepository],
})
export class UsersModule {}
