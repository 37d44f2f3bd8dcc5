import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { NamespaceModule } from '../namespace/namespace.module';
import { DataController } from './data.controller';
import { DataRepository } from './data.repository';
import { DataService } from './data.service';
import { PeerDataController } from './peer-data.controller';
import { IngestRepository } from './ingest.repository';
import { StorageModule } from './storage.module';

@Module({
  imports: [AuthModule, NamespaceModule, StorageModule],
  controllers: [DataController, PeerDataController],
  providers: [DataRepository, IngestRepository, DataService],
  // Upload sessions commit through the ordinary upload path.
  exports: [DataService],
})
export class DataModule {}
