import type pg from 'pg';

/**
 * Splits a connection URL into discrete pool fields: with a bare connection string some tools
 * resolve the wrong database (see ENVIRONMENT.md), and this keeps the password out of logs.
 */
export function connectionFromUrl(databaseUrl: string): pg.ClientConfig {
  const url = new URL(databaseUrl);
  if (url.protocol !== 'postgresql:' && url.protocol !== 'postgres:') {
    throw new Error('DATABASE_URL must start with postgresql://');
  }
  const database = decodeURIComponent(url.pathname.slice(1));
  if (!database)
    throw new Error('DATABASE_URL must name a database (postgresql://user:pass@host:port/DATABASE)');
  const sslmode = url.searchParams.get('sslmode');
  return {
    host: url.hostname || '127.0.0.1',
    port: Number(url.port || 5432),
    user: decodeURIComponent(url.username),
    password: decodeURIComponent(url.password),
    database,
    ssl:
      sslmode === 'require' || sslmode === 'verify-full'
        ? { rejectUnauthorized: sslmode === 'verify-full' }
        : undefined,
  };
}

/** `postgresql://user@host:port/db` without the password, for logs and banners. */
export function describeConnection(c: pg.ClientConfig): string {
  return `postgresql://${c.user ?? ''}@${c.host ?? ''}:${c.port ?? 5432}/${c.database ?? ''}`;
}
