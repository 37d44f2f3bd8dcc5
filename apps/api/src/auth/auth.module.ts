import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { UsersModule } from '../users/users.module';
import { AuthController } from './auth.controller';
import { AuthGuard } from './auth.guard';
import { AuthRepository } from './auth.repository';
import { AuthService } from './auth.service';
import { SignInFailures } from './sign-in-failures';

@Module({
  imports: [UsersModule],
  controllers: [AuthController],
  providers: [AuthRepository, AuthService, SignInFailures, { provide: APP_GUARD, useClass: AuthGuard }],
  // The data module authenticates users on whose behalf a peer forwards a data update; WebDAV signs
  // users in with tokens and counts its failures with the portal's.
  exports: [AuthService, SignInFailures],
})
export class AuthModule {}
