import { Module } from '@nestjs/common';
import { StorageGarbageSweeper } from './storage-garbage';
import { StorageGarbageRepository } from './storage-garbage.repository';
import { StorageService } from './storage.service';

/** The site's storage resource, for every feature that reads or writes bytes. */
@Module({
  providers: [StorageService, StorageGarbageRepository, StorageGarbageSweeper],
  exports: [StorageService, StorageGarbageSweeper],
})
export class StorageModule {}
