import { Global, Module } from '@nestjs/common';
import { SiteBootstrapService } from './site-bootstrap.service';
import { SiteContext } from './site-context';
import { SitesRepository } from './sites.repository';

@Global()
@Module({
  providers: [SitesRepository, SiteContext, SiteBootstrapService],
  exports: [SiteContext, SiteBootstrapService],
})
export class SitesModule {}
