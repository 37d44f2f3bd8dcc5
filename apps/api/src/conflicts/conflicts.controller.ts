import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  BulkConflictDecisionDtoSchema,
  BulkConflictDecisionSchema,
  ConflictDtoSchema,
  ConflictPageSchema,
  ConflictPolicyDtoSchema,
  ConflictSummaryDtoSchema,
  ConflictDecisionSchema,
  ConflictIdParamSchema,
  ConflictListQuerySchema,
  ConflictPolicyQuerySchema,
  ConflictPolicyRequestSchema,
  PathSchema,
  CONFLICT_KINDS,
  type BulkConflictDecisionDto,
  type ConflictDto,
  type ConflictPolicyDto,
  type ConflictSummaryDto,
  type Page,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { z } from 'zod';
import { CurrentPrincipal, RequireScope } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { ConflictsService } from './conflicts.service';

class ConflictListQueryDto extends createZodDto(ConflictListQuerySchema) {}
class ConflictIdParamDto extends createZodDto(ConflictIdParamSchema) {}
class ConflictDecisionRequestDto extends createZodDto(ConflictDecisionSchema) {}
class BulkConflictDecisionRequestDto extends createZodDto(BulkConflictDecisionSchema) {}
class ConflictPolicyRequestDto extends createZodDto(ConflictPolicyRequestSchema) {}
class ConflictPolicyQueryDto extends createZodDto(ConflictPolicyQuerySchema) {}
class ConflictPolicyDeleteQueryDto extends createZodDto(
  z.object({ path: PathSchema, kind: z.enum(CONFLICT_KINDS) }),
) {}

/** Conflicts people negotiate: list, show, decide (one or many), default policies per collection. */
@ApiTags('conflicts')
@Controller('api/v1/conflicts')
export class ConflictsController {
  constructor(private readonly conflicts: ConflictsService) {}

  /** Conflicts the caller may see; `status=closed` or `all` is the history. */
  @Answer(200, ConflictPageSchema, 'A page of conflicts')
  @Get()
  list(@CurrentPrincipal() p: Principal, @Query() q: ConflictListQueryDto): Promise<Page<ConflictDto>> {
    return this.conflicts.list(p, q);
  }

  /** Counts of open conflicts by kind, and those about the caller's records or changes. */
  @Answer(200, ConflictSummaryDtoSchema, 'The counts')
  @Get('summary')
  summary(@CurrentPrincipal() p: Principal): Promise<ConflictSummaryDto> {
    return this.conflicts.summary(p);
  }

  @Answer(200, [ConflictPolicyDtoSchema], 'The policies on the collection and above it')
  @Fails(404)
  @Get('policies')
  policies(
    @CurrentPrincipal() p: Principal,
    @Query() q: ConflictPolicyQueryDto,
  ): Promise<ConflictPolicyDto[]> {
    return this.conflicts.policies(p, q.path, q.kind);
  }

  @Answer(200, ConflictPolicyDtoSchema, 'The policy')
  @Fails(404)
  @Put('policies')
  @RequireScope('write')
  setPolicy(
    @CurrentPrincipal() p: Principal,
    @Body() body: ConflictPolicyRequestDto,
  ): Promise<ConflictPolicyDto> {
    return this.conflicts.setPolicy(p, body);
  }

  @Answer(204, null, 'Removed')
  @Fails(404)
  @Delete('policies')
  @HttpCode(204)
  @RequireScope('write')
  async deletePolicy(
    @CurrentPrincipal() p: Principal,
    @Query() q: ConflictPolicyDeleteQueryDto,
  ): Promise<void> {
    await this.conflicts.deletePolicy(p, q.path, q.kind);
  }

  /** Decides every open conflict matching the filter that the caller may decide; reports the rest. */
  @Answer(200, BulkConflictDecisionDtoSchema, 'What was decided and what was skipped')
  @Post('decisions')
  @HttpCode(200)
  @RequireScope('write')
  decideMany(
    @CurrentPrincipal() p: Principal,
    @Body() body: BulkConflictDecisionRequestDto,
  ): Promise<BulkConflictDecisionDto> {
    return this.conflicts.decideMany(p, body);
  }

  /** One conflict with its versions side by side. */
  @Answer(200, ConflictDtoSchema, 'The conflict')
  @Fails(404)
  @Get(':id')
  get(@CurrentPrincipal() p: Principal, @Param() params: ConflictIdParamDto): Promise<ConflictDto> {
    return this.conflicts.get(p, params.id);
  }

  @Answer(200, ConflictDtoSchema, 'The decided conflict')
  @Fails(404, 409)
  @Post(':id/decision')
  @HttpCode(200)
  @RequireScope('write')
  decide(
    @CurrentPrincipal() p: Principal,
    @Param() params: ConflictIdParamDto,
    @Body() body: ConflictDecisionRequestDto,
  ): Promise<ConflictDto> {
    return this.conflicts.decide(p, params.id, body);
  }
}
