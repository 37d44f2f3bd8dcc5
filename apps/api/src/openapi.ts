import { ConsoleLogger } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { OpenAPIObject } from '@nestjs/swagger';
import { buildOpenApi } from './app.factory';
import { AppModule } from './app.module';
import { loadConfig } from './config/config';

/**
 * The OpenAPI document, built from the controllers without a database (the app is created but
 * never initialised, so nothing connects).
 */
export async function openApiDocument(): Promise<OpenAPIObject> {
  const config = loadConfig({ TRIBUTARY_DATA_DIR: '/nonexistent', LOG_LEVEL: 'error' });
  const app = await NestFactory.create(AppModule.forRoot(config, { database: 'unused' }), {
    logger: new ConsoleLogger({ logLevels: ['error'] }),
    abortOnError: false,
  });
  const doc = buildOpenApi(app);
  await app.close();
  return doc;
}
