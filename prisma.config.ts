// Prisma CLI configuration. The CLI runs fully offline: the WebAssembly schema engine with the
// `pg` driver adapter (see ../shared/docs/ENVIRONMENT.md). Migrations themselves are applied by
// the API's own runner (apps/api/src/database/migrator.ts), which sends each migration file as one
// query so trigger functions with `$$` bodies survive.
import path from 'node:path';
import { defineConfig } from 'prisma/config';
import { PrismaPg } from '@prisma/adapter-pg';
import pg from 'pg';

/**
 * The adapter cannot deserialize Postgres's internal `name` (19) and `char` (18) types, which the
 * schema engine's introspection returns (prisma/prisma#27403). Report them as `text` (25).
 */
class TextNamesClient extends pg.Client {
  override query(...args: unknown[]): unknown {
    const last = args.at(-1);
    if (typeof last === 'function') {
      const callback = last as (err: Error | null, res?: pg.QueryResult) => void;
      args[args.length - 1] = (err: Error | null, res?: pg.QueryResult) => callback(err, res && asText(res));
    }
    const result = (super.query as (...a: unknown[]) => unknown)(...args);
    return result instanceof Promise ? result.then(asText) : result;
  }
}

function asText(res: pg.QueryResult): pg.QueryResult {
  for (const field of res.fields ?? []) {
    if (field.dataTypeID === 18 || field.dataTypeID === 19) field.dataTypeID = 25;
  }
  return res;
}

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: path.join('prisma', 'schema.prisma'),
  migrations: { path: path.join('prisma', 'migrations') },
  adapter: async () => {
    const url = new URL(process.env.DATABASE_URL as string);
    return new PrismaPg({
      host: url.hostname,
      port: Number(url.port || 5432),
      user: decodeURIComponent(url.username),
      password: decodeURIComponent(url.password),
      database: url.pathname.slice(1),
      Client: TextNamesClient,
    });
  },
});
