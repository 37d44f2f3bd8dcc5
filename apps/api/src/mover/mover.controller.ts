import { Controller, Get, Query } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import {
  MoverStatusDtoSchema,
  ObjectCopiesDtoSchema,
  ObjectPathQuerySchema,
  type MoverStatusDto,
  type ObjectCopiesDto,
} from '@tributary/shared';
import { createZodDto } from 'nestjs-zod';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { MoverService } from './mover.service';

class ObjectPathQueryDto extends createZodDto(ObjectPathQuerySchema) {}

/** Where an object's copies are and what the mover is doing (docs/placement.md). */
@ApiTags('placement')
@Controller('api/v1/placement')
export class MoverController {
  constructor(private readonly mover: MoverService) {}

  /** The object's copies at every site: state, checksum, when verified, whether a rule wants it. */
  @Answer(200, ObjectCopiesDtoSchema, "The object's copies and the rules that cover it")
  @Fails(404, 409)
  @Get('copies')
  copies(@CurrentPrincipal() p: Principal, @Query() q: ObjectPathQueryDto): Promise<ObjectCopiesDto> {
    return this.mover.copies(p, q.path);
  }

  /** This site's mover: copies per state, transfers in flight, failures, bytes per second (administrators). */
  @Answer(200, MoverStatusDtoSchema, "This site's mover")
  @Fails(403)
  @Get('mover')
  status(@CurrentPrincipal() p: Principal): Promise<MoverStatusDto> {
    return this.mover.status(p);
  }
}
