import { Inject, Injectable, OnApplicationShutdown } from '@nestjs/common';
import { createHash } from 'node:crypto';
import pg from 'pg';

export const DATABASE_CONNECTION = Symbol('DATABASE_CONNECTION');

/**
 * The site's one connection pool to its catalog. Prisma runs on it through the driver adapter;
 * the few hot paths (token authentication, object ingest) use it directly with plain SQL, where
 * Prisma's per-query overhead would dominate a request.
 */
@Injectable()
export class SqlPool implements OnApplicationShutdown {
  readonly pool: pg.Pool;
  private readonly statementNames = new Map<string, string>();
  private ended: Promise<void> | undefined;

  constructor(@Inject(DATABASE_CONNECTION) connection: pg.ClientConfig) {
    this.pool = new pg.Pool({ ...connection, max: 20 });
    // An idle client losing its connection must not crash the site; the next query reconnects.
    this.pool.on('error', () => undefined);
  }

  /**
   * Runs a hot query as a named prepared statement: each connection parses and plans it once,
   * instead of on every request.
   */
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<pg.QueryResult<R>> {
    let name = this.statementNames.get(text);
    if (!name) {
      name = 'tq_' + createHash('sha1').update(text).digest('hex').slice(0, 16);
      this.statementNames.set(text, name);
    }
    return this.pool.query<R>({ name, text, values });
  }

  /**
   * Runs `work` in one transaction on one connection of the pool: committed when it resolves,
   * rolled back when it throws (the error passed on).
   */
  async transaction<T>(work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    try {
      await client.query('BEGIN');
      const out = await work(client);
      await client.query('COMMIT');
      return out;
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    } finally {
      client.release();
    }
  }

  /**
   * In the last shutdown phase: services stop their background work (replication cycles, policy
   * runs, folds) in the earlier ones, and Nest runs the hooks of one phase in module order, which
   * would otherwise end the pool under a running cycle. The app may be closed twice at once (Nest's
   * signal hook and the CLI's own handler both answer SIGTERM): the pool ends once, and pg refuses
   * a second end with "Called end on pool more than once".
   */
  async onApplicationShutdown(): Promise<void> {
    this.ended ??= this.pool.end();
    await this.ended;
  }
}
