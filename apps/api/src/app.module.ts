import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER, APP_PIPE } from '@nestjs/core';
import { ThrottlerModule } from '@nestjs/throttler';
import { createZodValidationPipe, ZodValidationException } from 'nestjs-zod';
import type pg from 'pg';
import { AccessModule } from './access/access.module';
import { AuthModule } from './auth/auth.module';
import { CredentialCache } from './auth/credential-cache';
import { ConflictsModule } from './conflicts/conflicts.module';
import { AllExceptionsFilter } from './common/exception.filter';
import { SITE_CONFIG, type SiteConfig } from './config/config';
import { DatabaseModule } from './database/database.module';
import { DATABASE_CONNECTION } from './database/sql-pool';
import { DataModule } from './data/data.module';
import { DavModule } from './dav/dav.module';
import { ErasureModule } from './erasure/erasure.module';
import { EventsModule } from './events/events.module';
import { HealthModule } from './health/health.module';
import { MetadataModule } from './metadata/metadata.module';
import { MoverModule } from './mover/mover.module';
import { ResourcesModule } from './resources/resources.module';
import { NamespaceModule } from './namespace/namespace.module';
import { PlacementModule } from './placement/placement.module';
import { ReplicationModule } from './replication/replication.module';
import { SitesModule } from './sites/sites.module';
import { SavedSearchesModule } from './saved-searches/saved-searches.module';
import { ScrubModule } from './scrub/scrub.module';
import { TokensModule } from './tokens/tokens.module';
import { UploadsModule } from './uploads/uploads.module';
import { UsageModule } from './usage/usage.module';
import { UsersModule } from './users/users.module';

const ValidationPipe = createZodValidationPipe({
  createValidationException: (error: unknown) => new ZodValidationException(error),
});

@Module({})
export class AppModule {
  static forRoot(config: SiteConfig, connection: pg.ClientConfig): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        ThrottlerModule.forRoot([{ ttl: config.loginRateWindowMs, limit: config.loginRateLimit }]),
        DatabaseModule,
        SitesModule,
        AccessModule,
        HealthModule,
        AuthModule,
        UsersModule,
        TokensModule,
        SavedSearchesModule,
        NamespaceModule,
        DataModule,
        ReplicationModule,
        UploadsModule,
        ConflictsModule,
        MetadataModule,
        EventsModule,
        PlacementModule,
        MoverModule,
        ErasureModule,
        ResourcesModule,
        ScrubModule,
        DavModule,
        UsageModule,
      ],
      providers: [
        { provide: SITE_CONFIG, useValue: config },
        { provide: DATABASE_CONNECTION, useValue: connection },
        // Global: the repositories that change accounts, tokens and groups tell it (AuthModule
        // depends on UsersModule, so it cannot be exported from there).
        CredentialCache,
        { provide: APP_PIPE, useClass: ValidationPipe },
        { provide: APP_FILTER, useClass: AllExceptionsFilter },
      ],
      exports: [SITE_CONFIG, DATABASE_CONNECTION, CredentialCache],
    };
  }
}
