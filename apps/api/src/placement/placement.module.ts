import { Module } from '@nestjs/common';
import { PlacementController } from './placement.controller';
import { PlacementRepository } from './placement.repository';
import { PlacementService } from './placement.service';
import { SubscriptionsController } from './subscriptions.controller';

/** Placement rules (docs/placement.md); the mover (MoverModule) acts on them. */
@Module({
  controllers: [PlacementController, SubscriptionsController],
  providers: [PlacementRepository, PlacementService],
  exports: [PlacementService],
})
export class PlacementModule {}
