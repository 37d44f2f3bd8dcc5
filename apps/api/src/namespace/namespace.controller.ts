import { Body, Controller, Delete, Get, HttpCode, Param, Post, Put, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  CreateCollectionSchema,
  EntryDetailDtoSchema,
  EntryDtoSchema,
  EntryPageSchema,
  PermissionDtoSchema,
  TrashEntryDtoSchema,
  TrashPageSchema,
  GrantSchema,
  ListChildrenQuerySchema,
  MoveSchema,
  PageQuerySchema,
  PathQuerySchema,
  TrashIdParamSchema,
  type EntryDetailDto,
  type EntryDto,
  type Page,
  type PermissionDto,
  type TrashEntryDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { NamespaceService } from './namespace.service';

class PathQueryDto extends createZodDto(PathQuerySchema) {}
class ListChildrenQueryDto extends createZodDto(ListChildrenQuerySchema) {}
class CreateCollectionDto extends createZodDto(CreateCollectionSchema) {}
class MoveDto extends createZodDto(MoveSchema) {}
class GrantDto extends createZodDto(GrantSchema) {}
class PageQueryDto extends createZodDto(PageQuerySchema) {}
class TrashIdParamDto extends createZodDto(TrashIdParamSchema) {}

@ApiTags('namespace')
@Controller('api/v1')
export class NamespaceController {
  constructor(private readonly namespace: NamespaceService) {}

  /** A collection or data object, with its replicas. */
  @Answer(200, EntryDetailDtoSchema, 'The entry')
  @Fails(404)
  @Get('namespace/stat')
  stat(@CurrentPrincipal() p: Principal, @Query() q: PathQueryDto): Promise<EntryDetailDto> {
    return this.namespace.stat(p, q.path);
  }

  /**
   * A page of a collection's children: collections first, then objects, in the chosen order. Pages
   * follow `nextCursor`; `offset` opens any position directly (e.g. the end of a large collection).
   */
  @Answer(200, EntryPageSchema, 'A page of the children')
  @Fails(404, 409)
  @Get('namespace/children')
  children(@CurrentPrincipal() p: Principal, @Query() q: ListChildrenQueryDto): Promise<Page<EntryDto>> {
    return this.namespace.list(p, q.path, q.sort, q.order, q.limit, q.cursor, q.offset);
  }

  @Answer(201, EntryDtoSchema, 'The new collection')
  @Fails(404, 409)
  @Post('namespace/collections')
  createCollection(@CurrentPrincipal() p: Principal, @Body() body: CreateCollectionDto): Promise<EntryDto> {
    return this.namespace.createCollection(p, body.path, body.parents);
  }

  /** Renames and/or moves a collection (with everything in it) or an object. */
  @Answer(200, EntryDtoSchema, 'The entry at its new path')
  @Fails(404, 409)
  @Post('namespace/move')
  @HttpCode(200)
  move(@CurrentPrincipal() p: Principal, @Body() body: MoveDto): Promise<EntryDto> {
    return this.namespace.move(p, body.from, body.to);
  }

  /** Moves a collection (with everything in it) or an object to the trash. */
  @Answer(200, TrashEntryDtoSchema, 'The trash entry')
  @Fails(404, 409)
  @Delete('namespace')
  delete(@CurrentPrincipal() p: Principal, @Query() q: PathQueryDto): Promise<TrashEntryDto> {
    return this.namespace.delete(p, q.path);
  }

  @Answer(200, TrashPageSchema, "A page of the caller's trash")
  @Get('trash')
  trash(@CurrentPrincipal() p: Principal, @Query() q: PageQueryDto): Promise<Page<TrashEntryDto>> {
    return this.namespace.listTrash(p, q.limit, q.cursor);
  }

  @Answer(200, EntryDtoSchema, 'The restored entry')
  @Fails(404, 409)
  @Post('trash/:id/restore')
  @HttpCode(200)
  restore(@CurrentPrincipal() p: Principal, @Param() params: TrashIdParamDto): Promise<EntryDto> {
    return this.namespace.restore(p, BigInt(params.id));
  }

  /** Deletes a trash entry and its bytes for good. */
  @Answer(204, null, 'Purged')
  @Fails(404, 409)
  @Delete('trash/:id')
  @HttpCode(204)
  async purge(@CurrentPrincipal() p: Principal, @Param() params: TrashIdParamDto): Promise<void> {
    await this.namespace.purge(p, BigInt(params.id));
  }

  /** Grants that apply to a path, with where each is inherited from. */
  @Answer(200, [PermissionDtoSchema], 'The grants')
  @Fails(404)
  @Get('permissions')
  permissions(@CurrentPrincipal() p: Principal, @Query() q: PathQueryDto): Promise<PermissionDto[]> {
    return this.namespace.permissions(p, q.path);
  }

  /** Sets (or, with level null, removes) a user's or group's grant on a path. Needs own. */
  @Answer(200, [PermissionDtoSchema], 'The grants on the path after the change')
  @Fails(404)
  @Put('permissions')
  setPermission(@CurrentPrincipal() p: Principal, @Body() body: GrantDto): Promise<PermissionDto[]> {
    return this.namespace.setPermission(p, body.path, { user: body.user, group: body.group }, body.level);
  }
}
