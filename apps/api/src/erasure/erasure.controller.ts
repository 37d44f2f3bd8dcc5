import { Controller, HttpCode, Get, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  ErasureScrubDtoSchema,
  ObjectPathQuerySchema,
  ObjectShardsDtoSchema,
  type ErasureScrubDto,
  type ObjectShardsDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { ErasureService } from './erasure.service';

class ObjectPathQueryDto extends createZodDto(ObjectPathQuerySchema) {}

/** Erasure-coded objects (docs/erasure.md): an object's shards, and the shard scrub on demand. */
@ApiTags('placement')
@Controller('api/v1/placement')
export class ErasureController {
  constructor(private readonly erasure: ErasureService) {}

  /** The object's erasure layout: k, m, chunk, where each shard is wanted, and each shard's state. */
  @Answer(200, ObjectShardsDtoSchema, "The object's shards (erasure null when it has none)")
  @Fails(404, 409)
  @Get('shards')
  shards(@CurrentPrincipal() p: Principal, @Query() q: ObjectPathQueryDto): Promise<ObjectShardsDto> {
    return this.erasure.shards(p, q.path);
  }

  /** Re-hashes every good shard at this site now (administrators); bad ones become suspect. */
  @Answer(200, ErasureScrubDtoSchema, 'What the check found')
  @Post('erasure/scrub')
  @HttpCode(200)
  scrub(@CurrentPrincipal() p: Principal): Promise<ErasureScrubDto> {
    return this.erasure.scrubNow(p);
  }
}
