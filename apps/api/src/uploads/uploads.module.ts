import { Module } from '@nestjs/common';
import { DataModule } from '../data/data.module';
import { NamespaceModule } from '../namespace/namespace.module';
import { UploadsController } from './uploads.controller';
import { UploadsRepository } from './uploads.repository';
import { UploadsService } from './uploads.service';

/** Resumable upload sessions. Completing one goes through DataModule's DataService, the ordinary upload path. */
@Module({
  imports: [NamespaceModule, DataModule],
  controllers: [UploadsController],
  providers: [UploadsRepository, UploadsService],
})
export class UploadsModule {}
