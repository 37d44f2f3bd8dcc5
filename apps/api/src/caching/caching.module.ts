import { Module } from '@nestjs/common';
import { MoverModule } from '../mover/mover.module';
import { NamespaceModule } from '../namespace/namespace.module';
import { StorageModule } from '../storage/storage.module';
import { CacheController } from './cache.controller';
import { CacheRepository } from './cache.repository';
import { CacheService } from './cache.service';

/** Cached copies (docs/caching.md): fault-in on read, the limit and its eviction, staging, pins. */
@Module({
  imports: [NamespaceModule, StorageModule, MoverModule],
  controllers: [CacheController],
  providers: [CacheRepository, CacheService],
  // Reads fault bytes in through it (DataModule's ReadService).
  exports: [CacheService],
})
export class CachingModule {}
