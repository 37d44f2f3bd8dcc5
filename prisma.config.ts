// Prisma CLI configuration. The CLI runs fully offline with the WebAssembly schema engine and the
// `pg` driver adapter (see ../shared/docs/ENVIRONMENT.md); `prisma generate` and
// `prisma migrate diff` are all the project uses it for. Migrations are applied by the API's own
// runner (apps/api/src/database/migrator.ts), which sends each migration file as one query so
// trigger functions with `$$` bodies survive.
import path from 'node:path';
import { PrismaPg } from '@prisma/adapter-pg';
import { defineConfig } from 'prisma/config';

// Without a DATABASE_URL the CLI falls back to downloading native engines, which cannot work here.
process.env.DATABASE_URL ??= 'postgresql://postgres:postgres@127.0.0.1:5432/tributary';

export default defineConfig({
  experimental: { adapter: true },
  engine: 'js',
  schema: path.join('prisma', 'schema.prisma'),
  migrations: { path: path.join('prisma', 'migrations') },
  adapter: () => {
    // Discrete fields rather than a connection string, so a shadow database cannot resolve to the main one.
    const url = new URL(process.env.DATABASE_URL as string);
    return Promise.resolve(
      new PrismaPg({
        host: url.hostname,
        port: Number(url.port || 5432),
        user: decodeURIComponent(url.username),
        password: decodeURIComponent(url.password),
        database: url.pathname.slice(1),
      }),
    );
  },
});
