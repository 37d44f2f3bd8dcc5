import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { StorageModule } from '../storage/storage.module';
import { NamespaceController } from './namespace.controller';
import { PeerTrashController } from './peer-trash.controller';
import { NamespaceRepository } from './namespace.repository';
import { NamespaceService } from './namespace.service';

@Module({
  // Forwarded restores and purges are done for the user a peer names (AuthService.forwardedPrincipal).
  imports: [AuthModule, StorageModule],
  controllers: [NamespaceController, PeerTrashController],
  providers: [NamespaceRepository, NamespaceService],
  exports: [NamespaceService, NamespaceRepository],
})
export class NamespaceModule {}
