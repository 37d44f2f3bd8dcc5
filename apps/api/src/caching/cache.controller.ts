import { Body, Controller, Get, HttpCode, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  CacheChangeDtoSchema,
  CacheListDtoSchema,
  CacheListQuerySchema,
  CachePathRequestSchema,
  CacheStatusDtoSchema,
  StageStatusDtoSchema,
  type CacheChangeDto,
  type CacheListDto,
  type CacheStatusDto,
  type StageStatusDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { CacheService } from './cache.service';

class CachePathRequestDto extends createZodDto(CachePathRequestSchema) {}
class CachePathQueryDto extends createZodDto(z.object({ path: CachePathRequestSchema.shape.path })) {}
class CacheListQueryDto extends createZodDto(CacheListQuerySchema) {}

/** This site's cache (docs/caching.md): what it holds, staging ahead, pins, eviction on request. */
@ApiTags('cache')
@Controller('api/v1/cache')
export class CacheController {
  constructor(private readonly cache: CacheService) {}

  /** This site's cache: limit, bytes used, hits, misses, bytes faulted in, evictions (administrators). */
  @Answer(200, CacheStatusDtoSchema, "This site's cache")
  @Fails(403)
  @Get()
  status(@CurrentPrincipal() p: Principal): Promise<CacheStatusDto> {
    return this.cache.status(p);
  }

  /** The cached copies at this site below a path, most recently read first. */
  @Answer(200, CacheListDtoSchema, 'Cached copies')
  @Fails(404)
  @Get('entries')
  list(@CurrentPrincipal() p: Principal, @Query() q: CacheListQueryDto): Promise<CacheListDto> {
    return this.cache.list(p, q.path, q.limit);
  }

  /** Brings an object, or everything below a collection, into this site's cache in the background. */
  @Answer(202, StageStatusDtoSchema, 'Staging started: how far it is')
  @Fails(404, 409)
  @Post('stage')
  @HttpCode(202)
  stage(@CurrentPrincipal() p: Principal, @Body() body: CachePathRequestDto): Promise<StageStatusDto> {
    return this.cache.stage(p, body.path, false);
  }

  /** How far the bytes below a path have come into this site. */
  @Answer(200, StageStatusDtoSchema, 'Progress')
  @Fails(404)
  @Get('stage')
  stageStatus(@CurrentPrincipal() p: Principal, @Query() q: CachePathQueryDto): Promise<StageStatusDto> {
    return this.cache.stageStatus(p, q.path);
  }

  /** Stages a path and keeps it: eviction leaves pinned copies alone until they are unpinned. */
  @Answer(202, StageStatusDtoSchema, 'Pinned (and staged where not held yet)')
  @Fails(404, 409)
  @Post('pin')
  @HttpCode(202)
  pin(@CurrentPrincipal() p: Principal, @Body() body: CachePathRequestDto): Promise<StageStatusDto> {
    return this.cache.stage(p, body.path, true);
  }

  /** Unpins the cached copies below a path (eviction may take them again). */
  @Answer(200, CacheChangeDtoSchema, 'How many were unpinned')
  @Fails(404)
  @Post('unpin')
  @HttpCode(200)
  unpin(@CurrentPrincipal() p: Principal, @Body() body: CachePathRequestDto): Promise<CacheChangeDto> {
    return this.cache.unpin(p, body.path);
  }

  /** Evicts the cached copies below a path now (never a pinned or wanted one, never the last good one). */
  @Answer(200, CacheChangeDtoSchema, 'How many were evicted, and which were kept and why')
  @Fails(404)
  @Post('evict')
  @HttpCode(200)
  evict(@CurrentPrincipal() p: Principal, @Body() body: CachePathRequestDto): Promise<CacheChangeDto> {
    return this.cache.evict(p, body.path);
  }
}
