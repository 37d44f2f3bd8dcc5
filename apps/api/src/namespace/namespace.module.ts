import { Module } from '@nestjs/common';
import { StorageModule } from '../data/storage.module';
import { NamespaceController } from './namespace.controller';
import { NamespaceRepository } from './namespace.repository';
import { NamespaceService } from './namespace.service';

@Module({
  imports: [StorageModule],
  controllers: [NamespaceController],
  providers: [NamespaceRepository, NamespaceService],
  exports: [NamespaceService, NamespaceRepository],
})
export class NamespaceModule {}
