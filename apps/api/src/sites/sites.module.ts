import { Global, Module } from '@nestjs/common';
import { PeerAvailability } from './peer-availability';
import { SiteBootstrapService } from './site-bootstrap.service';
import { SiteContext } from './site-context';
import { SitesRepository } from './sites.repository';

@Global()
@Module({
  providers: [SitesRepository, SiteContext, SiteBootstrapService, PeerAvailability],
  exports: [SiteContext, SiteBootstrapService, PeerAvailability],
})
export class SitesModule {}
