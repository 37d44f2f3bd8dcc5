import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Put, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  CreateCollectionSchema,
  CreateSymlinkSchema,
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
  SetAttributesSchema,
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
class CreateSymlinkDto extends createZodDto(CreateSymlinkSchema) {}
class SetAttributesDto extends createZodDto(SetAttributesSchema) {}
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

  /** Creates a collection (`parents: true` is `mkdir -p`), optionally with its `mode` and `mtime`. */
  @Answer(201, EntryDtoSchema, 'The new collection')
  @Fails(404, 409)
  @Post('namespace/collections')
  createCollection(@CurrentPrincipal() p: Principal, @Body() body: CreateCollectionDto): Promise<EntryDto> {
    return this.namespace.createCollection(p, body.path, body.parents, {
      mode: body.mode,
      mtimeNs: body.mtime,
    });
  }

  /**
   * Creates a symbolic link `{path, target, mtime?}`. The target is stored exactly as written
   * (relative or absolute, it may point nowhere) and never followed by the site; the link has no
   * bytes (the data routes answer 409 IS_A_SYMLINK). Needs write access to the collection.
   */
  @Answer(201, EntryDtoSchema, 'The new symbolic link')
  @Fails(404, 409)
  @Post('namespace/symlinks')
  createSymlink(@CurrentPrincipal() p: Principal, @Body() body: CreateSymlinkDto): Promise<EntryDto> {
    return this.namespace.createSymlink(p, body.path, body.target, body.mtime);
  }

  /**
   * Sets an entry's file time (`mtime`, ISO 8601 up to nanoseconds or milliseconds since 1970) and/or
   * permission bits (`mode`, 0..0o7777 as a number or octal text). Needs write access to the entry.
   * A symbolic link's mode is always 0777 (409 IS_A_SYMLINK for another).
   */
  @Answer(200, EntryDtoSchema, 'The entry with its new attributes')
  @Fails(404, 409)
  @Patch('namespace/attributes')
  setAttributes(@CurrentPrincipal() p: Principal, @Body() body: SetAttributesDto): Promise<EntryDto> {
    return this.namespace.setAttributes(p, body.path, { mtimeNs: body.mtime, mode: body.mode });
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
