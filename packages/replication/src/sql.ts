import type pg from 'pg';
import type { Db } from './types';

/** Runs `fn` in one transaction on one connection; rolls back if it throws. */
export async function inTransaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.release();
  }
}

/** PostgreSQL's error fields the engine looks at. */
export interface PgError {
  code?: string;
  detail?: string;
  table?: string;
  constraint?: string;
  message: string;
}

export function asPgError(err: unknown): PgError {
  if (err && typeof err === 'object' && 'message' in err) return err as PgError;
  return { message: String(err) };
}
