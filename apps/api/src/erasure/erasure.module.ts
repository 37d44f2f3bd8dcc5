import { Module } from '@nestjs/common';
import { MoverModule } from '../mover/mover.module';
import { NamespaceModule } from '../namespace/namespace.module';
import { StorageModule } from '../storage/storage.module';
import { ErasureController } from './erasure.controller';
import { ErasureRepository } from './erasure.repository';
import { ErasureService } from './erasure.service';
import { PeerErasureController } from './peer-erasure.controller';
import { ShardIO } from './shard-io';

/** Erasure-coded objects across sites (docs/erasure.md): shards made, scrubbed, rebuilt and read. */
@Module({
  imports: [NamespaceModule, StorageModule, MoverModule],
  controllers: [ErasureController, PeerErasureController],
  providers: [ErasureRepository, ErasureService, ShardIO],
  // Reads decode from shards when no whole copy can be read (data/read.service.ts).
  exports: [ErasureRepository, ShardIO],
})
export class ErasureModule {}
