import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  SavedSearchDtoSchema,
  SavedSearchPageSchema,
  type Page,
  type SavedSearchDto,
} from '@tributary/shared';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import {
  CreateSavedSearchDto,
  SavedSearchIdParamDto,
  SavedSearchPageQueryDto,
  UpdateSavedSearchDto,
} from './saved-searches.dto';
import { SavedSearchesService } from './saved-searches.service';

@ApiTags('saved-searches')
@Controller('api/v1/saved-searches')
export class SavedSearchesController {
  constructor(private readonly savedSearches: SavedSearchesService) {}

  /** The caller's saved searches, by name. */
  @Get()
  @Answer(200, SavedSearchPageSchema, "A page of the caller's saved searches")
  list(@CurrentPrincipal() p: Principal, @Query() q: SavedSearchPageQueryDto): Promise<Page<SavedSearchDto>> {
    return this.savedSearches.list(p, q.limit, q.cursor);
  }

  /** Saves a search; the query text must parse (422 INVALID_QUERY), the name be new (409 NAME_TAKEN). */
  @Post()
  @Answer(201, SavedSearchDtoSchema, 'The saved search')
  @Fails(409)
  create(@CurrentPrincipal() p: Principal, @Body() body: CreateSavedSearchDto): Promise<SavedSearchDto> {
    return this.savedSearches.create(p, body);
  }

  /** Renames or changes one of the caller's saved searches. */
  @Answer(200, SavedSearchDtoSchema, 'The changed saved search')
  @Fails(404, 409)
  @Patch(':id')
  update(
    @CurrentPrincipal() p: Principal,
    @Param() params: SavedSearchIdParamDto,
    @Body() body: UpdateSavedSearchDto,
  ): Promise<SavedSearchDto> {
    return this.savedSearches.update(p, BigInt(params.id), body);
  }

  @Answer(204, null, 'Deleted')
  @Fails(404)
  @Delete(':id')
  @HttpCode(204)
  async remove(@CurrentPrincipal() p: Principal, @Param() params: SavedSearchIdParamDto): Promise<void> {
    await this.savedSearches.remove(p, BigInt(params.id));
  }
}
