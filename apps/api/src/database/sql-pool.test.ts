import { describe, expect, it } from 'vitest';
import { SqlPool } from './sql-pool';

describe('SqlPool shutdown', () => {
  // A site's app can be closed twice at once (the signal hook Nest installs and the CLI's own
  // handler, or SIGTERM and the launcher's disconnect): the pool must end once, without an error.
  it('ends the pool once however often, and however concurrently, shutdown is called', async () => {
    const sql = new SqlPool({ host: '127.0.0.1', port: 1, user: 'x', password: 'x', database: 'x' });
    let ends = 0;
    const end = sql.pool.end.bind(sql.pool);
    sql.pool.end = () => {
      ends++;
      return end();
    };
    await expect(
      Promise.all([sql.onApplicationShutdown(), sql.onApplicationShutdown()]),
    ).resolves.toBeDefined();
    await expect(sql.onApplicationShutdown()).resolves.toBeUndefined();
    expect(ends).toBe(1);
    expect(sql.pool.ending).toBe(true);
  });
});
