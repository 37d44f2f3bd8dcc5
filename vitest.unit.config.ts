import { defineConfig } from 'vitest/config';
import { sharedConfig } from './vitest.shared';

/** Fast tests without a database: pure functions and small units. */
export default defineConfig({
  ...sharedConfig,
  test: {
    include: ['packages/*/src/**/*.test.ts', 'apps/*/src/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
  },
});
