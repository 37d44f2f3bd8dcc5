import { chmod, mkdtemp, readFile, rm, stat, unlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeConnection } from './connection';
import { PASSWORD_FILE, startEmbeddedPostgres, type EmbeddedServer } from './embedded-postgres';

/** Connects with the given password and returns the server's error code, or 'ok'. */
async function signIn(server: EmbeddedServer, password: string): Promise<string> {
  const client = new pg.Client({
    host: '127.0.0.1',
    port: server.port,
    user: 'postgres',
    password,
    database: 'postgres',
  });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return 'ok';
  } catch (err) {
    return String((err as { code?: unknown }).code ?? err);
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** The superuser's password of the embedded PostgreSQL: generated, kept owner-only in its data directory. */
describe('embedded PostgreSQL superuser password', () => {
  let work: string;
  let dir: string;
  let file: string;
  let server: EmbeddedServer | undefined;

  beforeAll(async () => {
    work = await mkdtemp(path.join(os.tmpdir(), 'tributary-embedded-pg-'));
    // As root, PostgreSQL runs as the `postgres` user, which must reach the data directory.
    await chmod(work, 0o755);
    dir = path.join(work, 'pg');
    file = path.join(dir, PASSWORD_FILE);
  });
  afterAll(async () => {
    await server?.stop();
    await rm(work, { recursive: true, force: true });
  });

  it('is generated at the first start into a file only its owner can read, and postgres/postgres fails', async () => {
    server = await startEmbeddedPostgres(dir, { fast: true });
    expect(server.password).not.toBe('postgres');
    expect(server.password.length).toBeGreaterThanOrEqual(32);
    expect((await readFile(file, 'utf8')).trim()).toBe(server.password);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await signIn(server, server.password)).toBe('ok');
    expect(await signIn(server, 'postgres')).toBe('28P01');
    // What banners and logs show of a catalog carries no password.
    const catalog = await server.database('shown');
    expect(describeConnection(catalog)).not.toContain(server.password);
  });

  it('is reused at later starts', async () => {
    const first = server!.password;
    await server!.stop();
    server = await startEmbeddedPostgres(dir, { fast: true });
    expect(server.password).toBe(first);
    expect((await readFile(file, 'utf8')).trim()).toBe(first);
    expect(await signIn(server, first)).toBe('ok');
  });

  it('replaces the former fixed password of a data directory initialised before, at its first start', async () => {
    // A data directory from before: superuser password "postgres" and no password file.
    const client = new pg.Client({ ...(await server!.database('postgres')) });
    await client.connect();
    await client.query(`ALTER ROLE postgres PASSWORD 'postgres'`);
    await client.end();
    await server!.stop();
    await unlink(file);

    const notices: string[] = [];
    server = await startEmbeddedPostgres(dir, { fast: true, onNotice: (m) => notices.push(m) });
    expect(server.password).not.toBe('postgres');
    expect((await readFile(file, 'utf8')).trim()).toBe(server.password);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    expect(await signIn(server, server.password)).toBe('ok');
    expect(await signIn(server, 'postgres')).toBe('28P01');
    expect(notices.join('\n')).toContain(file);
    expect(notices.join('\n')).not.toContain(server.password);
  });

  it('says what to do when the password file does not open the server', async () => {
    await server!.stop();
    await writeFile(file, 'not-the-password\n', { mode: 0o600 });
    await expect(startEmbeddedPostgres(dir, { fast: true })).rejects.toThrow(
      /refused the password in .*superuser-password/,
    );
  });
});
