import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { UsageDtoSchema, UsageQuerySchema, type UsageDto } from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { UsageService } from './usage.service';

class UsageQueryDto extends createZodDto(UsageQuerySchema) {}

@ApiTags('usage')
@Controller('api/v1/usage')
export class UsageController {
  constructor(private readonly usage: UsageService) {}

  /**
   * What a collection and everything below it holds: objects and bytes in all, directly in it, per
   * child collection (largest first) and per site holding good copies. Needs read access to the
   * whole subtree.
   */
  @Answer(200, UsageDtoSchema, 'The sums')
  @Fails(404)
  @Get()
  get(@CurrentPrincipal() p: Principal, @Query() q: UsageQueryDto): Promise<UsageDto> {
    return this.usage.usage(p, q.path, q.children);
  }
}
