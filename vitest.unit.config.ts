import path from 'node:path';
import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';

/**
 * Fast tests without a database: pure functions and small units. Nest decorators need swc
 * (legacy decorators and their metadata), which esbuild/oxc do not emit.
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
    // At run time the package's default export is dist/ (a build); tests use the sources.
    alias: { '@tributary/shared': path.resolve(__dirname, 'packages/shared/src/index.ts') },
  },
  test: {
    include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
  },
});
