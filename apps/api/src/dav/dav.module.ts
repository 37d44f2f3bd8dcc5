import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { DataModule } from '../data/data.module';
import { NamespaceModule } from '../namespace/namespace.module';
import { DavAuth } from './dav-auth';
import { DavLocks } from './dav-locks';
import { DavPropertiesRepository } from './dav-properties.repository';
import { DavController } from './dav.controller';
import { DavService } from './dav.service';

/** WebDAV at /dav/ (docs/webdav.md): the namespace for Finder, Explorer, rclone, davfs2 and others. */
@Module({
  imports: [AuthModule, NamespaceModule, DataModule],
  controllers: [DavController],
  providers: [DavAuth, DavLocks, DavPropertiesRepository, DavService],
})
export class DavModule {}
