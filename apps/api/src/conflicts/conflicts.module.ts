import { Module } from '@nestjs/common';
import { NamespaceModule } from '../namespace/namespace.module';
import { ConflictsController } from './conflicts.controller';
import { ConflictsRepository } from './conflicts.repository';
import { ConflictClock, ConflictsService } from './conflicts.service';

@Module({
  imports: [NamespaceModule],
  controllers: [ConflictsController],
  providers: [ConflictsRepository, ConflictsService, ConflictClock],
  exports: [ConflictsService, ConflictClock],
})
export class ConflictsModule {}
