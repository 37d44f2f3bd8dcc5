import { Module } from '@nestjs/common';
import { NamespaceModule } from '../namespace/namespace.module';
import { StorageModule } from '../storage/storage.module';
import { StorageMovesController } from './storage-moves.controller';
import { StorageMovesRepository } from './storage-moves.repository';
import { StorageMovesService } from './storage-moves.service';

/** Work on a site's storage resources that needs the namespace: moving copies between resources. */
@Module({
  imports: [NamespaceModule, StorageModule],
  controllers: [StorageMovesController],
  providers: [StorageMovesRepository, StorageMovesService],
})
export class ResourcesModule {}
