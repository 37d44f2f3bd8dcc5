import { Module } from '@nestjs/common';
import { DataModule } from '../data/data.module';
import { NamespaceModule } from '../namespace/namespace.module';
import { StorageModule } from '../storage/storage.module';
import { UploadsController } from './uploads.controller';
import { UploadsRepository } from './uploads.repository';
import { UploadsService } from './uploads.service';

/**
 * Resumable upload sessions: their bytes are drafts in storage; completing one goes through
 * DataModule's IngestService, the ordinary upload path.
 */
@Module({
  imports: [NamespaceModule, DataModule, StorageModule],
  controllers: [UploadsController],
  providers: [UploadsRepository, UploadsService],
})
export class UploadsModule {}
