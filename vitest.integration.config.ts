import { defineConfig } from 'vitest/config';
import { junitInCi, sharedConfig } from './vitest.shared';

/**
 * The API against a real PostgreSQL: one embedded server for the whole run (globalSetup), one
 * database per test site, cloned from a migrated template.
 */
export default defineConfig({
  ...sharedConfig,
  test: {
    include: ['apps/*/src/**/*.itest.ts', 'packages/*/src/**/*.itest.ts'],
    globalSetup: ['apps/api/src/test/global-setup.ts'],
    pool: 'forks',
    ...junitInCi(process.env.TRIBUTARY_TEST_STORAGE === 's3' ? 'integration-s3' : 'integration'),
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000,
  },
});
