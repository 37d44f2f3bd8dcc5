import { Module } from '@nestjs/common';
import { MoverModule } from '../mover/mover.module';
import { NamespaceModule } from '../namespace/namespace.module';
import { StorageModule } from '../storage/storage.module';
import { ScrubController } from './scrub.controller';
import { ScrubRepository } from './scrub.repository';
import { ScrubService } from './scrub.service';
import { VerifyService } from './verify.service';

/** The scrub: background re-hashing of this site's copies, and `POST /placement/verify`. */
@Module({
  imports: [NamespaceModule, StorageModule, MoverModule],
  controllers: [ScrubController],
  providers: [ScrubRepository, ScrubService, VerifyService],
  exports: [ScrubService],
})
export class ScrubModule {}
