import { Global, Module } from '@nestjs/common';
import { PeerAuthService } from './peer-auth.service';
import { PeerController, ReplicationController } from './replication.controller';
import { ReplicationAdminService } from './replication-admin.service';
import { ReplicationRepository } from './replication.repository';
import { ReplicationService } from './replication.service';

@Global()
@Module({
  controllers: [ReplicationController, PeerController],
  providers: [ReplicationService, PeerAuthService, ReplicationAdminService, ReplicationRepository],
  exports: [ReplicationService, PeerAuthService],
})
export class ReplicationModule {}
