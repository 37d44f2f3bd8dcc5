import { Controller, Get, Header, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import type { Response } from 'express';
import { Public } from '../auth/auth.decorators';
import { PrismaService } from '../database/prisma.service';
import { SiteContext } from '../sites/site-context';
import { MetricsRegistry } from './metrics';

@ApiTags('operations')
@Controller()
export class HealthController {
  constructor(
    private readonly prisma: PrismaService,
    private readonly site: SiteContext,
    private readonly metrics: MetricsRegistry,
  ) {}

  /** Liveness and catalog reachability; 503 when the catalog database does not answer. */
  @Public()
  @Get('api/health')
  async health(
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ status: string; site: string; catalog: string }> {
    const catalog = await this.prisma.$queryRaw`SELECT 1`.then(
      () => 'ok',
      () => 'unreachable',
    );
    if (catalog !== 'ok') res.status(503);
    return { status: catalog === 'ok' ? 'ok' : 'degraded', site: this.site.siteId, catalog };
  }

  /** Prometheus metrics. */
  @Public()
  @Get('metrics')
  @Header('Content-Type', 'text/plain; version=0.0.4')
  scrape(): Promise<string> {
    return this.metrics.registry.metrics();
  }
}
