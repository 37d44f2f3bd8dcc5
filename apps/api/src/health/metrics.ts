import { Inject, Injectable, NestMiddleware } from '@nestjs/common';
import { ErrorCode } from '@tributary/shared';
import type { NextFunction, Request, Response } from 'express';
import { collectDefaultMetrics, Counter, Histogram, Registry } from 'prom-client';
import { safeEqual } from '../auth/secrets';
import { DomainError } from '../common/domain-error';
import { SITE_CONFIG, type SiteConfig } from '../config/config';

/** One registry per app instance, so several sites (and tests) in one process do not collide. */
@Injectable()
export class MetricsRegistry {
  readonly registry = new Registry();
  readonly requests = new Histogram({
    name: 'tributary_http_request_duration_seconds',
    help: 'HTTP request duration by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [this.registry],
  });
  readonly bytesIn = new Counter({
    name: 'tributary_data_bytes_received_total',
    help: 'Bytes of object data received by uploads',
    registers: [this.registry],
  });
  readonly bytesOut = new Counter({
    name: 'tributary_data_bytes_sent_total',
    help: 'Bytes of object data sent by downloads',
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
  }
}

/** Who may read /metrics: administrators, and a scraper holding METRICS_TOKEN. */
@Injectable()
export class MetricsAccess {
  constructor(@Inject(SITE_CONFIG) private readonly config: SiteConfig) {}

  /** `req.principal` is set by the guard when the request carried a valid user credential. */
  assertMayScrape(req: Request): void {
    const secret = this.config.metricsToken;
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (secret && bearer && safeEqual(bearer, secret)) return;
    if (req.principal?.isAdmin) return;
    if (req.principal) {
      throw new DomainError(
        ErrorCode.AdminRequired,
        '/metrics is for administrators and the METRICS_TOKEN scraper',
      );
    }
    throw new DomainError(
      ErrorCode.Unauthenticated,
      `send "Authorization: Bearer <token>" with an administrator's token${secret ? ' or METRICS_TOKEN' : ''}`,
    );
  }
}

@Injectable()
export class RequestMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: MetricsRegistry) {}

  use(req: Request, res: Response, next: NextFunction): void {
    const end = this.metrics.requests.startTimer({ method: req.method });
    res.on('finish', () => {
      // The matched route pattern keeps label cardinality bounded (never the raw URL).
      const route = (req.route as { path?: string } | undefined)?.path ?? 'unmatched';
      end({ route: `${req.baseUrl}${route}`, status: String(res.statusCode) });
    });
    next();
  }
}
