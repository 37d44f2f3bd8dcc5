import { Module } from '@nestjs/common';
import { NamespaceModule } from '../namespace/namespace.module';
import { StorageModule } from '../storage/storage.module';
import { MoverController } from './mover.controller';
import { MoverRepository } from './mover.repository';
import { MoverService } from './mover.service';
import { PeerBatchSource } from './peer-batch';
import { PeerPlacementController } from './peer-placement.controller';

/** The mover (docs/placement.md, "The mover"): copies wanted here, surplus copies trimmed. */
@Module({
  imports: [NamespaceModule, StorageModule],
  controllers: [MoverController, PeerPlacementController],
  providers: [MoverRepository, MoverService, PeerBatchSource],
  // The cache evicts under the mover's promises and asks it which rules cover an object.
  exports: [MoverService, MoverRepository],
})
export class MoverModule {}
