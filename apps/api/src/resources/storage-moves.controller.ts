import { Body, Controller, Get, HttpCode, Param, Post } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  CreateStorageMoveSchema,
  StorageMoveDtoSchema,
  StorageMoveListDtoSchema,
  type StorageMoveDto,
  type StorageMoveListDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { StorageMovesService } from './storage-moves.service';

class CreateStorageMoveDto extends createZodDto(CreateStorageMoveSchema) {}

/** Moving a collection's copies to another storage resource of this site (docs/storage.md). */
@ApiTags('storage')
@Controller('api/v1/storage/moves')
export class StorageMovesController {
  constructor(private readonly moves: StorageMovesService) {}

  /** Starts moving this site's copies under a collection to a resource (administrators); runs on in the background. */
  @Answer(202, StorageMoveDtoSchema, 'The move, started')
  @Fails(403, 404, 409, 422)
  @Post()
  @HttpCode(202)
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateStorageMoveDto): Promise<StorageMoveDto> {
    return this.moves.create(p, body);
  }

  /** The latest moves (administrators). */
  @Answer(200, StorageMoveListDtoSchema, 'The latest 100 moves, newest first')
  @Fails(403)
  @Get()
  list(@CurrentPrincipal() p: Principal): Promise<StorageMoveListDto> {
    return this.moves.list(p);
  }

  /** One move's progress (administrators). */
  @Answer(200, StorageMoveDtoSchema, 'The move and its progress')
  @Fails(403, 404)
  @Get(':id')
  get(@CurrentPrincipal() p: Principal, @Param('id') id: string): Promise<StorageMoveDto> {
    return this.moves.get(p, id);
  }
}
