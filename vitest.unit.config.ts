import swc from 'unplugin-swc';
import { defineConfig } from 'vitest/config';
import { sharedConfig } from './vitest.shared';

/**
 * Fast tests without a database: pure functions and small units, in Node. The portal's component
 * tests (the `.test.tsx` files under `apps/portal/src`) render React into a DOM: each file asks for one with a
 * `// @vitest-environment happy-dom` comment, so every other test keeps the node environment.
 */
export default defineConfig({
  ...sharedConfig,
  plugins: [
    ...(sharedConfig.plugins ?? []),
    swc.vite({
      tsconfigFile: false,
      include: [/\.tsx$/],
      exclude: [/node_modules/],
      jsc: {
        target: 'es2022',
        parser: { syntax: 'typescript', tsx: true },
        transform: { react: { runtime: 'automatic' } },
      },
    }),
  ],
  test: {
    include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts', 'apps/portal/src/**/*.test.tsx'],
    pool: 'forks',
    maxWorkers: 2,
  },
});
