import { Controller, Get, Req, Res } from '@nestjs/common';
import { ApiTags } from '@nestjs/swagger';
import { HealthDtoSchema, type HealthDto } from '@tributary/shared';
import { Answer, AnswerBytes, Fails } from '../common/api-responses';
import type { Request, Response } from 'express';
import { Public } from '../auth/auth.decorators';
import { SiteContext } from '../sites/site-context';
import { StorageService } from '../storage/storage.service';
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
    private readonly storage: StorageService,
  ) {}

  /**
   * Liveness, catalog reachability and each storage resource's last check (docs/storage.md): 503
   * when the catalog or the default resource (where new bytes go) fails; `degraded` with 200 when
   * only another resource does. Nothing about where a resource is: this answers anyone.
   */
  @Public()
  @Answer(200, HealthDtoSchema, 'The site, its catalog and its default storage resource answer')
  @Answer(503, HealthDtoSchema, 'The catalog database or the default storage resource does not answer')
  @Get('api/health')
  async health(@Res({ passthrough: true }) res: Response): Promise<HealthDto> {
    const catalog = (await this.catalog.catalogAnswers()) ? 'ok' : 'unreachable';
    const storage = this.storage
      .statuses()
      .map((r) => ({ name: r.name, kind: r.kind, default: r.default, status: r.status }));
    const defaultFails = storage.some((r) => r.default && r.status === 'failing');
    if (catalog !== 'ok' || defaultFails) res.status(503);
    const degraded = catalog !== 'ok' || storage.some((r) => r.status === 'failing');
    return { status: degraded ? 'degraded' : 'ok', site: this.site.siteId, catalog, storage };
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
