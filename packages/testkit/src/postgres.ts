import pg from 'pg';
import { inject } from 'vitest';
import './provided-context';

/** A connection to the integration run's embedded PostgreSQL (the `postgres` database by default). */
export function adminConnection(database = 'postgres'): pg.ClientConfig {
  const pgInfo = inject('postgres');
  return { host: pgInfo.host, port: pgInfo.port, user: pgInfo.user, password: pgInfo.password, database };
}

export async function withClient<T>(
  connection: pg.ClientConfig,
  fn: (client: pg.Client) => Promise<T>,
): Promise<T> {
  const client = new pg.Client(connection);
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/** Creates database `name` as a clone of the migrated, empty template catalog. */
export async function cloneTemplate(name: string): Promise<void> {
  const template = inject('postgres').template;
  await withClient(adminConnection(), async (client) => {
    // Workers cloning at the same instant can see the template "being accessed"; retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await client.query(`CREATE DATABASE "${name}" TEMPLATE "${template}"`);
        return;
      } catch (err) {
        if (attempt >= 40 || !/being accessed by other users/.test((err as Error).message)) throw err;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 100));
      }
    }
  });
}

export async function dropDatabase(name: string): Promise<void> {
  await withClient(adminConnection(), (client) =>
    client.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  );
}
