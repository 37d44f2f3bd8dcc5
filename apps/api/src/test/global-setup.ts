import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres, type EmbeddedServer } from '../database/embedded-postgres';
import { migrate } from '../database/migrator';
import { startS3Server, type S3Server, type TestPostgres } from '@tributary/testkit';

export const TEMPLATE_DATABASE = 'tributary_template';

/**
 * One embedded PostgreSQL for the whole integration run: a template catalog is migrated once
 * (prisma/migrations, then prisma/functions, as a site's start does) and every test site clones it
 * (`CREATE DATABASE ... TEMPLATE`), which takes milliseconds.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  preserveExitCode();
  const dir = await mkdtemp(path.join(os.tmpdir(), 'tributary-itest-pg-'));
  let server: EmbeddedServer | undefined;
  let s3: S3Server | undefined;
  try {
    // mkdtemp makes the directory 0700; as root, PostgreSQL runs as the `postgres` user and must reach it.
    await chmod(dir, 0o755);
    server = await startEmbeddedPostgres(path.join(dir, 'pg'), { fast: true, persistent: false });
    const template = await server.database(TEMPLATE_DATABASE);
    await migrate(template);
    const provided: TestPostgres = {
      host: '127.0.0.1',
      port: server.port,
      user: server.user,
      password: server.password,
      template: TEMPLATE_DATABASE,
    };
    project.provide('postgres', provided);
    // TRIBUTARY_TEST_STORAGE=s3 runs the same suites with every test site's default resource on a
    // real S3 server (SeaweedFS, scripts/setup-seaweedfs.sh): the storage is a parameter of the run.
    if (process.env.TRIBUTARY_TEST_STORAGE === 's3') {
      s3 = await startS3Server();
      const { endpoint, region, accessKeyId, secretAccessKey } = s3;
      project.provide('s3', { endpoint, region, accessKeyId, secretAccessKey });
    } else if (process.env.TRIBUTARY_TEST_STORAGE && process.env.TRIBUTARY_TEST_STORAGE !== 'local') {
      throw new Error(
        `TRIBUTARY_TEST_STORAGE must be local or s3, not ${process.env.TRIBUTARY_TEST_STORAGE}`,
      );
    }
    // Site processes (federations, the agent's tests) run the build, as a deployment does.
    project.provide('siteEntry', path.resolve(__dirname, '../../dist/cli/site.js'));
  } catch (err) {
    await s3?.close().catch(() => undefined);
    await server?.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  const running = server;
  return async () => {
    await s3?.close();
    await running.stop();
    await rm(dir, { recursive: true, force: true });
  };
}

/**
 * `embedded-postgres` registers `async-exit-hook`, which answers the process's `beforeExit` with
 * `process.exit(0)`, replacing the exit code Vitest set for failed tests (so CI would pass). Keep
 * the code that was set before that happened.
 */
function preserveExitCode(): void {
  let intended: number | undefined;
  process.on('beforeExit', () => {
    const code = Number(process.exitCode ?? 0);
    if (intended === undefined && code !== 0) intended = code;
  });
  process.on('exit', () => {
    if (intended !== undefined) process.exitCode = intended;
  });
}
