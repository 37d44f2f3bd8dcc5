import path from 'node:path';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

/**
 * The API against a real PostgreSQL: one embedded server for the whole run (globalSetup), one
 * database per test site, cloned from a migrated template.
 */
export default defineConfig({
  plugins: [
    swc.vite({
      tsconfigFile: false,
      jsc: {
        target: 'es2022',
        keepClassNames: true,
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
      },
    }),
  ],
  resolve: {
    alias: { '@tributary/shared': path.resolve(__dirname, 'packages/shared/src/index.ts') },
  },
  test: {
    include: ['apps/api/src/**/*.itest.ts'],
    globalSetup: ['apps/api/src/test/global-setup.ts'],
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
