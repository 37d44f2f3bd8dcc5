import { ConsoleLogger, type INestApplication } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import cookieParser from 'cookie-parser';
import express from 'express';
import helmet from 'helmet';
import { existsSync } from 'node:fs';
import type { IncomingMessage, Server } from 'node:http';
import path from 'node:path';
import { cleanupOpenApiDoc } from 'nestjs-zod';
import type pg from 'pg';
import { ErrorCode } from '@tributary/shared';
import { AppModule } from './app.module';
import { logColors } from './common/log-colors';
import { documentAnswers } from './common/api-responses';
import { AuthService } from './auth/auth.service';
import { DomainError } from './common/domain-error';
import { ReplicationService } from './replication/replication.service';
import type { SiteConfig } from './config/config';
import { SiteBootstrapService, type BootstrapResult } from './sites/site-bootstrap.service';

export interface SiteApp {
  app: NestExpressApplication;
  bootstrap: BootstrapResult;
  openApi: OpenAPIObject;
}

export function buildOpenApi(app: INestApplication): OpenAPIObject {
  const doc = SwaggerModule.createDocument(
    app,
    new DocumentBuilder()
      .setTitle('Tributary site API')
      .setDescription(
        'One site of a Tributary federation. Authenticate with the portal session cookie (plus X-CSRF-Token on changes) or `Authorization: Bearer <token>`. Errors are `{ error: { code, message, details? } }`.',
      )
      .setVersion('1')
      .addBearerAuth()
      .addCookieAuth('trib_session')
      .build(),
  );
  return documentAnswers(app, cleanupOpenApiDoc(doc));
}

/** Builds one site's API (not yet listening): middleware, docs, portal, and the catalog bootstrap. */
export async function createSiteApp(config: SiteConfig, connection: pg.ClientConfig): Promise<SiteApp> {
  const logger = new SiteLogger({
    json: config.logFormat === 'json',
    logLevels: levelsFrom(config.logLevel),
    prefix: `tributary:${config.siteId}`,
    colors: config.logFormat !== 'json' && logColors(),
  });
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forRoot(config, connection), {
    logger,
    bodyParser: false,
  });
  // X-Forwarded-For decides the client address (login limits, logs) only when it comes from a
  // proxy named in TRUSTED_PROXIES; anyone else could write any address into it.
  app.set('trust proxy', config.trustedProxies.length ? config.trustedProxies : false);
  app.disable('x-powered-by');
  applyServerTimeouts(app.getHttpServer(), config.http);
  // Security headers on every answer: nosniff, no framing, and a policy under which pages of this
  // origin run only its own scripts (the portal has no inline script or style). Swagger UI's page
  // has an inline <style>. Downloads get a stricter policy of their own (DataController).
  const pageHeaders = securityHeaders(config, false);
  const docsHeaders = securityHeaders(config, true);
  app.use((req: express.Request, res: express.Response, next: express.NextFunction) =>
    (req.path.startsWith('/api/docs') ? docsHeaders : pageHeaders)(req, res, next),
  );
  app.use(cookieParser());
  // JSON bodies only on the JSON API; object data streams through untouched (see DataController),
  // except the batch read, whose request is a JSON list of paths; peer requests are read raw
  // because their signature covers the exact bytes.
  const json = jsonParser(MB, true);
  // Bulk tagging takes many triples in one request (the bulk load of a million objects).
  const bulkJson = jsonParser(64 * MB, true);
  // Signing in is the one body taken from callers not yet known: small, and never inflated.
  const loginJson = jsonParser(16 * KB, false);
  const auth = app.get(AuthService);
  app.use(async (req: express.Request, res: express.Response, next: express.NextFunction) => {
    if (
      (req.path.startsWith('/api/v1/data') && req.path !== '/api/v1/data/batch-read') ||
      req.path.startsWith('/api/v1/replication/peer/') ||
      // WebDAV reads its own bodies: object bytes and XML (apps/api/src/dav).
      req.path === '/dav' ||
      req.path.startsWith('/dav/')
    )
      return next();
    if (req.path === '/api/v1/auth/login') return loginJson(req, res, next);
    if (!hasBody(req)) return next();
    // The credential first: a body from a caller without a valid one is never decompressed or
    // parsed (the guard then answers 401 as usual, from the headers alone).
    const resolved = await auth.authenticate(req).catch(() => null);
    if (!resolved) return next();
    return (req.path === '/api/v1/metadata/bulk' ? bulkJson : json)(req, res, next);
  });
  app.enableShutdownHooks();

  const openApi = buildOpenApi(app);
  SwaggerModule.setup('api/docs', app, openApi, { jsonDocumentUrl: 'api/docs/openapi.json' });

  const portalDir = config.portalDir ?? path.resolve(__dirname, '../../portal/dist');
  if (existsSync(path.join(portalDir, 'index.html'))) {
    app.useStaticAssets(portalDir, { index: 'index.html' });
    // The portal routes in the browser (/browse/..., /conflicts/:id): a page loaded or reloaded at
    // such a URL gets index.html. API, docs and metrics paths never do.
    const indexHtml = path.join(portalDir, 'index.html');
    app.use((req: express.Request, res: express.Response, next: express.NextFunction) => {
      if (req.method !== 'GET' && req.method !== 'HEAD') return next();
      if (/^\/(api|metrics|dav)(\/|$)/.test(req.path) || !req.accepts('html')) return next();
      res.sendFile(indexHtml);
    });
  }

  await app.init();
  // A new site joining a federation copies a peer's catalog first; the bootstrap then finds the
  // roots and the administrator there and only registers this site.
  const replication = app.get(ReplicationService);
  await replication.joinIfNew();
  const bootstrap = await app.get(SiteBootstrapService).bootstrap();
  replication.start();
  return { app, bootstrap, openApi };
}

/** helmet's headers with this site's Content-Security-Policy. */
function securityHeaders(config: SiteConfig, inlineStyles: boolean): express.RequestHandler {
  return helmet({
    contentSecurityPolicy: {
      // Not helmet's defaults: they add upgrade-insecure-requests, which breaks a site served
      // over plain HTTP at an address other than localhost.
      useDefaults: false,
      directives: {
        defaultSrc: ["'self'"],
        baseUri: ["'self'"],
        connectSrc: ["'self'"],
        fontSrc: ["'self'", 'data:'],
        formAction: ["'self'"],
        frameAncestors: ["'none'"],
        imgSrc: ["'self'", 'data:'],
        objectSrc: ["'none'"],
        scriptSrc: ["'self'"],
        scriptSrcAttr: ["'none'"],
        styleSrc: inlineStyles ? ["'self'", "'unsafe-inline'"] : ["'self'"],
      },
    },
    frameguard: { action: 'deny' },
    // Only a site served over HTTPS (COOKIE_SECURE) tells browsers to keep to HTTPS.
    strictTransportSecurity: config.cookieSecure ? { maxAge: 180 * 86_400 } : false,
  });
}

/**
 * Node's defaults end any request not received within 5 minutes (a bare 408), although uploads
 * of a terabyte are allowed. Instead: no total limit by default, a limit for the headers, and an
 * idle limit while a body is arriving (a stalled upload is cut, a slow one is not). Answering
 * takes what it takes once the body is in; SSE streams send heartbeats.
 */
export function applyServerTimeouts(server: Server, timeouts: SiteConfig['http']): void {
  server.requestTimeout = timeouts.requestTimeoutMs;
  server.headersTimeout = timeouts.headersTimeoutMs;
  server.on('request', (req: IncomingMessage) => {
    if (!hasBody(req)) return;
    const socket = req.socket;
    const stalled = (): void => {
      socket.destroy();
    };
    socket.setTimeout(timeouts.idleTimeoutMs, stalled);
    const received = (): void => {
      socket.setTimeout(0, stalled);
    };
    req.once('end', received);
    req.once('close', received);
  });
}

const KB = 1024;
const MB = 1024 * KB;

function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/** express.json, with a 413 that names the limit of the route it guards. */
function jsonParser(limit: number, inflate: boolean): express.RequestHandler {
  const parse = express.json({ limit, inflate });
  const label = limit >= MB ? `${limit / MB} MB` : `${limit / KB} KB`;
  return (req, res, next) =>
    parse(req, res, (err?: unknown) => {
      const tooLarge = (err as { type?: unknown } | undefined)?.type === 'entity.too.large';
      next(
        tooLarge
          ? new DomainError(
              ErrorCode.PayloadTooLarge,
              `the JSON body of ${req.method} ${req.path} is limited to ${label}${inflate ? ' (after decompression)' : ''}`,
            )
          : err,
      );
    });
}

/** Nest's start-up chatter (every module and route it wires) is shown at `debug` and below only. */
const STARTUP_CONTEXTS = new Set([
  'InstanceLoader',
  'RoutesResolver',
  'RouterExplorer',
  'NestFactory',
  'NestApplication',
]);

class SiteLogger extends ConsoleLogger {
  override log(message: unknown, ...rest: unknown[]): void {
    const context = rest.at(-1);
    if (typeof context === 'string' && STARTUP_CONTEXTS.has(context) && !this.isLevelEnabled('debug')) return;
    super.log(message, ...rest);
  }
}

function levelsFrom(level: SiteConfig['logLevel']): ('error' | 'warn' | 'log' | 'debug' | 'verbose')[] {
  const order = ['error', 'warn', 'log', 'debug', 'verbose'] as const;
  return order.slice(0, order.indexOf(level) + 1);
}
