import { Module } from '@nestjs/common';
import { TokensController } from './tokens.controller';
import { TokensRepository } from './tokens.repository';
import { TokensService } from './tokens.service';

@Module({ controllers: [TokensController], providers: [TokensRepository, TokensService] })
export class TokensModule {}
