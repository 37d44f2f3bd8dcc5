import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthDtoSchema } from '@tributary/shared';
import { Answer, AnswerBytes, Fails } from '../common/api-responses';
import type { Request, Response } from 'express';
import { Public } from '../auth/auth.decorators';
import { SiteContext } from '../sites/site-context';
import { HealthRepository } from './health.repository';
import { MetricsAccess, MetricsRegistry } from './metrics';

@ApiTags('operations')
@Controller()
export class HealthController {
  constructor(
    private readonly catalog: HealthRepository,
    private readonly site: SiteContext,
    private readonly metrics: MetricsRegistry,
    private readonly access: MetricsAccess,
  ) {}

  /** Liveness and catalog reachability; 503 when the catalog database does not answer. */
  @Public()
  @Answer(200, HealthDtoSchema, 'The site and its catalog answer')
  @Answer(503, HealthDtoSchema, 'The catalog database does not answer (status degraded)')
  @Get('api/health')
  async health(
    @Res({ passthrough: true }) res: Response,
  ): Promise<{ status: string; site: string; catalog: string }> {
    const catalog = (await this.catalog.catalogAnswers()) ? 'ok' : 'unreachable';
    if (catalog !== 'ok') res.status(503);
    return { status: catalog === 'ok' ? 'ok' : 'degraded', site: this.site.siteId, catalog };
  }

  /**
   * Prometheus metrics: for administrators (a token of any scope, or a session) and for the
   * scraper holding METRICS_TOKEN (`Authorization: Bearer <it>`). Route names, login failures and
   * replication counters are not for everyone.
   */
  @Public()
  @AnswerBytes(200, ['text/plain'], 'Prometheus metrics in the text exposition format')
  @Fails(401, 403)
  @Get('metrics')
  scrape(@Req() req: Request, @Res({ passthrough: true }) res: Response): Promise<string> {
    this.access.assertMayScrape(req);
    // Set here, not with @Header, so a refusal goes out as the JSON error envelope.
    res.type('text/plain; version=0.0.4');
    return this.metrics.registry.metrics();
  }
}
