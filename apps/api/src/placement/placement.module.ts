import { Module } from '@nestjs/common';
import { PlacementController } from './placement.controller';
import { PlacementRepository } from './placement.repository';
import { PlacementService } from './placement.service';

/** Placement rules (docs/placement.md); the mover (MoverModule) acts on them. */
@Module({
  controllers: [PlacementController],
  providers: [PlacementRepository, PlacementService],
  exports: [PlacementService],
})
export class PlacementModule {}
