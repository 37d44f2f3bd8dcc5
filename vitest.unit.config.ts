import { defineConfig } from 'vitest/config';
import { junitInCi, sharedConfig } from './vitest.shared';

/**
 * Fast tests without a database: pure functions and small units, in Node. The portal's component
 * tests (the `.test.tsx` files under `apps/portal/src`) render React into a DOM: each such file asks
 * for one with a `// @vitest-environment happy-dom` comment, so every other test keeps Node's.
 */
export default defineConfig({
  ...sharedConfig,
  test: {
    include: [
      'packages/*/src/**/*.test.ts',
      'apps/*/src/**/*.test.ts',
      'apps/portal/src/**/*.test.tsx',
      'bench/src/**/*.test.ts',
    ],
    pool: 'forks',
    ...junitInCi('unit'),
    maxWorkers: 2,
  },
});
