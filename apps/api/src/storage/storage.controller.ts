import { Controller, Get } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { StorageResourceListDtoSchema, type StorageResourceListDto } from '@tributary/shared';
import { CurrentPrincipal } from '../auth/auth.decorators';
import { Answer, Fails } from '../common/api-responses';
import type { Principal } from '../common/principal';
import { StorageResourcesService } from './storage-resources.service';

/** This site's storage resources (docs/storage.md). */
@ApiTags('storage')
@Controller('api/v1/storage')
export class StorageController {
  constructor(private readonly resources: StorageResourcesService) {}

  /** Every storage resource of this site: kind, where, default, health, copies held (administrators). */
  @Answer(200, StorageResourceListDtoSchema, "This site's storage resources")
  @Fails(403)
  @Get('resources')
  list(@CurrentPrincipal() p: Principal): Promise<StorageResourceListDto> {
    return this.resources.list(p);
  }
}
