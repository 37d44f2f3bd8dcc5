import { Body, Controller, Get, HttpCode, Inject, Post, Res, UseGuards } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { LoginSchema, SessionDtoSchema, type SessionDto } from '@tributary/shared';
import { Answer, Fails } from '../common/api-responses';
import type { Response } from 'express';
import { createZodDto } from 'nestjs-zod';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { CurrentPrincipal, Public } from './auth.decorators';
import { AuthService } from './auth.service';
import { LoginThrottlerGuard } from './login-throttler.guard';
import { SESSION_COOKIE } from './secrets';

class LoginDto extends createZodDto(LoginSchema) {}

@ApiTags('auth')
@Controller('api/v1/auth')
export class AuthController {
  constructor(
    private readonly auth: AuthService,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {}

  /** Signs in to the portal: sets an httpOnly, SameSite=Lax session cookie and returns the CSRF token. */
  @Public()
  @UseGuards(LoginThrottlerGuard)
  @Answer(200, SessionDtoSchema, 'Signed in: the session cookie is set')
  @Fails(401, 403, 429)
  @Post('login')
  @HttpCode(200)
  async login(@Body() body: LoginDto, @Res({ passthrough: true }) res: Response): Promise<SessionDto> {
    const { cookieValue, session } = await this.auth.login(body.username, body.password);
    res.cookie(SESSION_COOKIE, cookieValue, {
      httpOnly: true,
      sameSite: 'lax',
      secure: this.config.cookieSecure,
      path: '/',
      expires: new Date(session.expiresAt),
    });
    return session;
  }

  @Answer(204, null, 'Signed out')
  @Post('logout')
  @HttpCode(204)
  async logout(
    @CurrentPrincipal() principal: Principal,
    @Res({ passthrough: true }) res: Response,
  ): Promise<void> {
    await this.auth.logout(principal);
    res.clearCookie(SESSION_COOKIE, { path: '/' });
  }

  /** The current portal session and its CSRF token (401 when not signed in). */
  @Answer(200, SessionDtoSchema, 'The session')
  @Get('session')
  session(@CurrentPrincipal() principal: Principal): Promise<SessionDto> {
    return this.auth.describeSession(principal);
  }
}
