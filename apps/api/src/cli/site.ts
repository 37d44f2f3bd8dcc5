import 'reflect-metadata';
import path from 'node:path';
import type { SiteReady } from '@tributary/shared';
import { createSiteApp } from '../app.factory';
import { ConfigError, loadConfig, type SiteConfig } from '../config/config';
import { connectionFromUrl, describeConnection } from '../database/connection';
import { startEmbeddedPostgres, type EmbeddedServer } from '../database/embedded-postgres';
import { migrate } from '../database/migrator';
import { SiteRegistrationError } from '../sites/sites.repository';

// File writes, fsyncs and renames of concurrent uploads run on libuv's pool (4 threads by default).
process.env.UV_THREADPOOL_SIZE ??= '16';

export type { SiteReady };

/**
 * One site: its catalog (DATABASE_URL, or an embedded PostgreSQL under the data directory) migrated,
 * the API bootstrapped (joining JOIN_FROM first when the catalog is new), listening, replicating.
 * This is what a real deployment runs on each machine: `node apps/api/dist/cli/site.js`.
 */
export async function runSite(config: SiteConfig): Promise<{ ready: SiteReady; stop: () => Promise<void> }> {
  let embedded: EmbeddedServer | undefined;
  let connection;
  if (config.databaseUrl) {
    connection = connectionFromUrl(config.databaseUrl);
  } else {
    embedded = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'), {
      onNotice: (m) => console.log(m),
    });
    connection = await embedded.database(`tributary_${config.siteId.replace(/-/g, '_')}`);
  }
  const migrated = await migrate(connection);
  const { app, bootstrap } = await createSiteApp(config, connection);
  // The server's timeouts (HTTP_* settings: idle, not total, for request bodies) are set in createSiteApp.
  await app.listen(config.port, config.host);
  const ready: SiteReady = {
    type: 'ready',
    siteId: config.siteId,
    url: config.publicUrl ?? `http://${config.host}:${config.port}`,
    catalog: describeConnection(connection) + (embedded ? ' (embedded PostgreSQL)' : ''),
    storage: config.storageRoot,
    appliedMigrations: migrated.applied.length,
    joinedFrom: config.replication.joinFrom,
    adminUsername: config.adminUsername,
    generatedAdminPassword: bootstrap.generatedAdminPassword,
    adminCreated: bootstrap.adminCreated,
  };
  // SIGINT, SIGTERM and the launcher's disconnect may all ask; the site stops once.
  let stopping: Promise<void> | undefined;
  return {
    ready,
    stop: () =>
      (stopping ??= (async () => {
        await app.close();
        await embedded?.stop();
      })()),
  };
}

export function siteBanner(sites: SiteReady[]): string {
  const lines = [''];
  for (const s of sites) {
    lines.push(
      `Tributary site "${s.siteId}" is running.`,
      `  portal    ${s.url}/`,
      `  API       ${s.url}/api/v1        docs ${s.url}/api/docs`,
      `  WebDAV    ${s.url}/dav/          (username and an API token; docs/webdav.md)`,
      `  health    ${s.url}/api/health    metrics ${s.url}/metrics    replication ${s.url}/api/v1/replication/status`,
      `  catalog   ${s.catalog}` +
        (s.appliedMigrations ? `, applied ${s.appliedMigrations} migration(s)` : ''),
      `  data      ${s.storage}`,
      '',
    );
  }
  const founder = sites.find((s) => s.adminCreated);
  const admin = sites[0]?.adminUsername ?? 'admin';
  if (founder?.generatedAdminPassword) {
    lines.push(
      `  First administrator: ${admin} / ${founder.generatedAdminPassword}`,
      '  This password is shown once and works at every site. Change it in the portal, or set ADMIN_PASSWORD before the first start.',
    );
  } else if (founder) {
    lines.push(`  First administrator: ${admin} (password from ADMIN_PASSWORD)`);
  } else {
    lines.push(`  Sign in as ${admin} with the password shown at the first start.`);
  }
  return lines.join('\n') + '\n';
}

export function fail(err: unknown): never {
  console.error(err instanceof ConfigError || err instanceof SiteRegistrationError ? err.message : err);
  process.exit(1);
}

if (require.main === module) {
  (async () => {
    const config = loadConfig();
    const site = await runSite(config);
    if (process.send) process.send(site.ready);
    else console.log(siteBanner([site.ready]));
    const shutdown = async (): Promise<void> => {
      await site.stop();
      process.exit(0);
    };
    process.once('SIGINT', () => void shutdown());
    process.once('SIGTERM', () => void shutdown());
    process.once('disconnect', () => void shutdown());
  })().catch(fail);
}
