import type pg from 'pg';
import type { Db } from './types';

/** Anything that runs a parameterised SQL query: a pool, a client, or an adapter over another driver. */
export interface Queryable {
  query(text: string, values?: unknown[]): Promise<{ rows: unknown[] }>;
}

/** Runs `fn` in one transaction on one connection; rolls back if it throws. */
export async function inTransaction<T>(db: Db, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await db.connect();
  client.on('error', ignoreClientError);
  try {
    await client.query('BEGIN');
    const result = await fn(client);
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  } finally {
    client.off('error', ignoreClientError);
    client.release();
  }
}

/**
 * Listener for errors of a borrowed pool client (PostgreSQL ending the connection): without one,
 * Node would crash the process; the query in progress fails and reports it instead.
 */
export function ignoreClientError(): void {
  // reported by the failing query
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

/** A table or column name as a quoted SQL identifier (names come from repl_tables and the catalog). */
export function quoteIdent(name: string): string {
  return '"' + name.replace(/"/g, '""') + '"';
}
