import { Module } from '@nestjs/common';
import { NamespaceModule } from '../namespace/namespace.module';
import { UsageController } from './usage.controller';
import { UsageRepository } from './usage.repository';
import { UsageService } from './usage.service';

/** Storage used below a collection, per child collection and per site (docs/usage.md). */
@Module({
  imports: [NamespaceModule],
  controllers: [UsageController],
  providers: [UsageRepository, UsageService],
})
export class UsageModule {}
