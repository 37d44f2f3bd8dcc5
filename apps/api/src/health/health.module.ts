import { Global, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { HealthController } from './health.controller';
import { HealthRepository } from './health.repository';
import { MetricsAccess, MetricsRegistry, RequestMetricsMiddleware } from './metrics';
import { StorageModule } from '../storage/storage.module';

@Global()
@Module({
  imports: [StorageModule],
  controllers: [HealthController],
  providers: [MetricsRegistry, MetricsAccess, HealthRepository],
  exports: [MetricsRegistry],
})
export class HealthModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(RequestMetricsMiddleware).forRoutes('*path');
  }
}
