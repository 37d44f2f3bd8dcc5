import { Body, Controller, Delete, Get, HttpCode, Param, Patch, Post, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  AddTriplesSchema,
  BulkMetadataResultSchema,
  BulkMetadataSchema,
  EntryTriplesDtoSchema,
  MetadataAttributesDtoSchema,
  MetadataQueryResultSchema,
  TripleDtoSchema,
  MetadataAttributesQuerySchema,
  MetadataQuerySchema,
  PathQuerySchema,
  TripleIdParamSchema,
  UpdateTripleSchema,
  type BulkMetadataResult,
  type EntryTriplesDto,
  type MetadataAttributesDto,
  type MetadataQueryResult,
  type TripleDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal, ReadOnlyRoute } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { MetadataService } from './metadata.service';

class PathQueryDto extends createZodDto(PathQuerySchema) {}
class AddTriplesDto extends createZodDto(AddTriplesSchema) {}
class UpdateTripleDto extends createZodDto(UpdateTripleSchema) {}
class TripleIdParamDto extends createZodDto(TripleIdParamSchema) {}
class BulkMetadataDto extends createZodDto(BulkMetadataSchema) {}
class MetadataQueryDto extends createZodDto(MetadataQuerySchema) {}
class MetadataAttributesQueryDto extends createZodDto(MetadataAttributesQuerySchema) {}

@ApiTags('metadata')
@Controller('api/v1/metadata')
export class MetadataController {
  constructor(private readonly metadata: MetadataService) {}

  /** The triples of one data object or collection. */
  @Answer(200, EntryTriplesDtoSchema, "The entry's triples")
  @Fails(404)
  @Get()
  list(@CurrentPrincipal() p: Principal, @Query() q: PathQueryDto): Promise<EntryTriplesDto> {
    return this.metadata.list(p, q.path);
  }

  /** Attribute names in use on entries the caller may read, starting with `prefix` (for suggestions). */
  @Answer(200, MetadataAttributesDtoSchema, 'The attribute names')
  @Get('attributes')
  attributes(
    @CurrentPrincipal() p: Principal,
    @Query() q: MetadataAttributesQueryDto,
  ): Promise<MetadataAttributesDto> {
    return this.metadata.attributes(p, q.prefix, q.limit);
  }

  /** Adds triples to one data object or collection; returns those added (identical ones are not added twice). */
  @Answer(201, [TripleDtoSchema], 'The triples added')
  @Fails(404)
  @Post()
  add(
    @CurrentPrincipal() p: Principal,
    @Query() q: PathQueryDto,
    @Body() body: AddTriplesDto,
  ): Promise<TripleDto[]> {
    return this.metadata.add(p, q.path, body.triples);
  }

  /** Changes one triple (its attribute, value or unit). */
  @Answer(200, TripleDtoSchema, 'The changed triple')
  @Fails(404)
  @Patch('triples/:id')
  update(
    @CurrentPrincipal() p: Principal,
    @Param() params: TripleIdParamDto,
    @Body() body: UpdateTripleDto,
  ): Promise<TripleDto> {
    return this.metadata.update(p, BigInt(params.id), body);
  }

  /** Removes one triple. */
  @Answer(204, null, 'Removed')
  @Fails(404)
  @Delete('triples/:id')
  @HttpCode(204)
  async remove(@CurrentPrincipal() p: Principal, @Param() params: TripleIdParamDto): Promise<void> {
    await this.metadata.remove(p, BigInt(params.id));
  }

  /** Adds, replaces and removes triples on many objects or collections, or everything under one, atomically. */
  @Answer(200, BulkMetadataResultSchema, 'What was added, updated and removed')
  @Fails(404)
  @Post('bulk')
  @HttpCode(200)
  bulk(@CurrentPrincipal() p: Principal, @Body() body: BulkMetadataDto): Promise<BulkMetadataResult> {
    return this.metadata.bulk(p, body.operations);
  }

  /** Finds objects (or collections) by their triples: JSON `where` or text `q`, with scope, sort, cursor, total and facets. */
  @Answer(200, MetadataQueryResultSchema, 'A page of matching entries')
  @Fails(404)
  @Post('query')
  @HttpCode(200)
  @ReadOnlyRoute()
  query(@CurrentPrincipal() p: Principal, @Body() body: MetadataQueryDto): Promise<MetadataQueryResult> {
    return this.metadata.query(p, body);
  }
}
