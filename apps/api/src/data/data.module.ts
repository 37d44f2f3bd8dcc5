import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { CachingModule } from '../caching/caching.module';
import { ErasureModule } from '../erasure/erasure.module';
import { NamespaceModule } from '../namespace/namespace.module';
import { StorageModule } from '../storage/storage.module';
import { DataController } from './data.controller';
import { DataRepository } from './data.repository';
import { ForwardedUpdateService } from './forwarded-update.service';
import { IngestRepository } from './ingest.repository';
import { IngestService } from './ingest.service';
import { LocalUpdateService } from './local-update.service';
import { PeerDataController } from './peer-data.controller';
import { ReadService } from './read.service';
import { UploadStaging } from './upload-staging';

@Module({
  imports: [AuthModule, NamespaceModule, StorageModule, CachingModule, ErasureModule],
  controllers: [DataController, PeerDataController],
  providers: [
    DataRepository,
    IngestRepository,
    UploadStaging,
    LocalUpdateService,
    ForwardedUpdateService,
    IngestService,
    ReadService,
  ],
  // Upload sessions commit through the ordinary upload path and read a partial update's base here.
  exports: [IngestService, ReadService],
})
export class DataModule {}
