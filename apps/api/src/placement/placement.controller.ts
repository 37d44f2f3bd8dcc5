import { Body, Controller, Delete, Get, HttpCode, Param, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  PlacementRuleDtoSchema,
  PlacementRuleIdParamSchema,
  PlacementRuleListQuerySchema,
  PlacementRulePageSchema,
  PlacementRuleRequestSchema,
  PlacementSiteDtoSchema,
  type Page,
  type PlacementRuleDto,
  type PlacementSiteDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { PlacementService } from './placement.service';

class PlacementRuleRequestDto extends createZodDto(PlacementRuleRequestSchema) {}
class PlacementRuleListQueryDto extends createZodDto(PlacementRuleListQuerySchema) {}
class PlacementRuleIdParamDto extends createZodDto(PlacementRuleIdParamSchema) {}

/** Placement rules: how many copies of a collection's objects to keep, and where (docs/placement.md). */
@ApiTags('placement')
@Controller('api/v1/placement')
export class PlacementController {
  constructor(private readonly placement: PlacementService) {}

  /** Sets a rule on a collection (needs `own` on it). */
  @Answer(201, PlacementRuleDtoSchema, 'The rule')
  @Fails(404)
  @Post('rules')
  create(@CurrentPrincipal() p: Principal, @Body() body: PlacementRuleRequestDto): Promise<PlacementRuleDto> {
    return this.placement.create(p, body);
  }

  /** The rules on a collection and those inherited from its ancestors (`inheritedFrom`). */
  @Answer(200, PlacementRulePageSchema, 'A page of rules, deepest collection first')
  @Fails(404)
  @Get('rules')
  list(
    @CurrentPrincipal() p: Principal,
    @Query() q: PlacementRuleListQueryDto,
  ): Promise<Page<PlacementRuleDto>> {
    return this.placement.list(p, q);
  }

  /** The sites a rule can place copies at. */
  @Answer(200, [PlacementSiteDtoSchema], 'Every site in the catalog')
  @Get('sites')
  sites(): Promise<PlacementSiteDto[]> {
    return this.placement.sites();
  }

  /** Removes a rule (needs `own` on its collection); copies no longer wanted are trimmed by the mover. */
  @Answer(204, null, 'Removed')
  @Fails(404)
  @Delete('rules/:id')
  @HttpCode(204)
  async remove(@CurrentPrincipal() p: Principal, @Param() params: PlacementRuleIdParamDto): Promise<void> {
    await this.placement.remove(p, params.id);
  }
}
