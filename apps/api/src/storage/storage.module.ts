import { Module } from '@nestjs/common';
import { CompoundStateRepository } from './compound-state.repository';
import { StorageGarbageSweeper } from './storage-garbage';
import { StorageGarbageRepository } from './storage-garbage.repository';
import { StorageResourcesRepository } from './storage-resources.repository';
import { StorageService } from './storage.service';
import { StorageController } from './storage.controller';
import { StorageResourcesService } from './storage-resources.service';

/** The site's storage resource, for every feature that reads or writes bytes. */
@Module({
  controllers: [StorageController],
  providers: [
    StorageService,
    StorageResourcesRepository,
    CompoundStateRepository,
    StorageResourcesService,
    StorageGarbageRepository,
    StorageGarbageSweeper,
  ],
  exports: [StorageService, StorageGarbageSweeper],
})
export class StorageModule {}
