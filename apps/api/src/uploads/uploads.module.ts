import { Module } from '@nestjs/common';
import { DataRepository } from '../data/data.repository';
import { DataService } from '../data/data.service';
import { IngestRepository } from '../data/ingest.repository';
import { StorageModule } from '../data/storage.module';
import { NamespaceModule } from '../namespace/namespace.module';
import { UploadsController } from './uploads.controller';
import { UploadsRepository } from './uploads.repository';
import { UploadsService } from './uploads.service';

/**
 * Resumable upload sessions. Completing one goes through DataService, the ordinary upload path;
 * DataModule does not export it, so this module provides its own (stateless) instance rather
 * than changing DataModule.
 */
@Module({
  imports: [NamespaceModule, StorageModule],
  controllers: [UploadsController],
  providers: [UploadsRepository, UploadsService, DataService, DataRepository, IngestRepository],
})
export class UploadsModule {}
