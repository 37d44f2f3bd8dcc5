import { Body, Controller, Delete, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  CreatedTokenDtoSchema,
  CreateTokenSchema,
  IdSchema,
  TokenDtoSchema,
  type CreatedTokenDto,
  type TokenDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { TokensService } from './tokens.service';

class CreateTokenDto extends createZodDto(CreateTokenSchema) {}
class TokenIdParamDto extends createZodDto(z.object({ id: IdSchema })) {}

@ApiTags('tokens')
@Controller('api/v1/tokens')
export class TokensController {
  constructor(private readonly tokens: TokensService) {}

  /** The caller's tokens, newest first, with their last use. Secrets are never shown again. */
  @Get()
  @Answer(200, [TokenDtoSchema], "The caller's tokens")
  list(@CurrentPrincipal() p: Principal): Promise<TokenDto[]> {
    return this.tokens.list(p);
  }

  /** Creates a token; the response holds the secret, shown this once. */
  @Post()
  @Answer(201, CreatedTokenDtoSchema, 'The new token with its secret')
  @Fails(404)
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateTokenDto): Promise<CreatedTokenDto> {
    return this.tokens.create(p, body);
  }

  @Answer(204, null, 'Revoked')
  @Fails(404)
  @Delete(':id')
  @HttpCode(204)
  async revoke(@CurrentPrincipal() p: Principal, @Param() params: TokenIdParamDto): Promise<void> {
    await this.tokens.revoke(p, BigInt(params.id));
  }
}
