import 'reflect-metadata';
import path from 'node:path';
import { createSiteApp } from '../app.factory';
import { ConfigError, loadConfig } from '../config/config';
import { connectionFromUrl, describeConnection } from '../database/connection';
import { startEmbeddedPostgres, type EmbeddedServer } from '../database/embedded-postgres';
import { migrate } from '../database/migrator';

// File writes, fsyncs and renames of concurrent uploads run on libuv's pool (4 threads by default).
process.env.UV_THREADPOOL_SIZE ??= '16';

/**
 * `npm start`: one site on the embedded PostgreSQL (or DATABASE_URL), migrated, bootstrapped,
 * listening, with the URLs and the first administrator's login printed once.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  let embedded: EmbeddedServer | undefined;
  let connection;
  if (config.databaseUrl) {
    connection = connectionFromUrl(config.databaseUrl);
  } else {
    embedded = await startEmbeddedPostgres(path.join(config.dataDir, 'postgres'));
    connection = await embedded.database(`tributary_${config.siteId.replace(/-/g, '_')}`);
  }
  const migrated = await migrate(connection);
  const { app, bootstrap } = await createSiteApp(config, connection);
  await app.listen(config.port, config.host);
  const base = config.publicUrl ?? `http://${config.host}:${config.port}`;
  const lines = [
    '',
    `Tributary site "${config.siteId}" is running.`,
    `  portal    ${base}/`,
    `  API       ${base}/api/v1`,
    `  API docs  ${base}/api/docs`,
    `  health    ${base}/api/health    metrics ${base}/metrics`,
    `  catalog   ${describeConnection(connection)}${embedded ? ' (embedded PostgreSQL)' : ''}` +
      (migrated.applied.length ? `, applied ${migrated.applied.length} migration(s)` : ''),
    `  data      ${config.storageRoot}`,
  ];
  if (bootstrap.generatedAdminPassword) {
    lines.push(
      '',
      `  First administrator: ${config.adminUsername} / ${bootstrap.generatedAdminPassword}`,
      '  This password is shown once. Change it in the portal, or set ADMIN_PASSWORD before the first start.',
    );
  } else if (bootstrap.adminCreated) {
    lines.push('', `  First administrator: ${config.adminUsername} (password from ADMIN_PASSWORD)`);
  } else {
    lines.push('', `  Sign in as ${config.adminUsername} with the password shown at the first start.`);
  }
  console.log(lines.join('\n') + '\n');

  const shutdown = async (): Promise<void> => {
    await app.close();
    await embedded?.stop();
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown());
  process.once('SIGTERM', () => void shutdown());
}

main().catch((err: unknown) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
