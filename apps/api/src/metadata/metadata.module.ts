import { Module } from '@nestjs/common';
import { MetadataQueryRepository } from './metadata-query.repository';
import { MetadataController } from './metadata.controller';
import { MetadataRepository } from './metadata.repository';
import { MetadataService } from './metadata.service';
import { ValueCountsFolder } from './value-counts.folder';

@Module({
  controllers: [MetadataController],
  providers: [MetadataRepository, MetadataQueryRepository, MetadataService, ValueCountsFolder],
})
export class MetadataModule {}
