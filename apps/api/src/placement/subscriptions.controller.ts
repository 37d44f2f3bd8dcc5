import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  SubscriptionDtoSchema,
  SubscriptionIdParamSchema,
  SubscriptionListDtoSchema,
  SubscriptionListQuerySchema,
  SubscriptionRequestSchema,
  type SubscriptionDto,
  type SubscriptionListDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { SiteContext } from '../sites/site-context';
import { PlacementService } from './placement.service';

class SubscriptionRequestDto extends createZodDto(SubscriptionRequestSchema) {}
class SubscriptionListQueryDto extends createZodDto(SubscriptionListQuerySchema) {}
class SubscriptionIdParamDto extends createZodDto(SubscriptionIdParamSchema) {}

/**
 * Subscriptions (docs/placement.md, "Subscriptions"): a site follows a publisher's collection, and
 * every object there, now and later, is copied to it. Each is a placement rule with the subscriber
 * as its one site.
 */
@ApiTags('placement')
@Controller('api/v1/placement/subscriptions')
export class SubscriptionsController {
  constructor(
    private readonly placement: PlacementService,
    private readonly site: SiteContext,
  ) {}

  /** Subscribes a site (default: this one) to a collection (needs `own` on it). */
  @Answer(201, SubscriptionDtoSchema, 'The subscription')
  @Fails(404)
  @Post()
  create(@CurrentPrincipal() p: Principal, @Body() body: SubscriptionRequestDto): Promise<SubscriptionDto> {
    return this.placement.subscribe(p, body, this.site.siteId);
  }

  /** Who subscribes to what, at a collection and below it. */
  @Answer(200, SubscriptionListDtoSchema, 'The subscriptions')
  @Fails(404)
  @Get()
  list(@CurrentPrincipal() p: Principal, @Query() q: SubscriptionListQueryDto): Promise<SubscriptionListDto> {
    return this.placement.subscriptions(p, q.path, q.site);
  }

  /** Ends a subscription (needs `own` on its collection); the copies made stay. */
  @Answer(204, null, 'Removed')
  @Fails(404)
  @Delete(':id')
  @HttpCode(204)
  async remove(@CurrentPrincipal() p: Principal, @Param() params: SubscriptionIdParamDto): Promise<void> {
    await this.placement.unsubscribe(p, params.id);
  }
}
