import path from 'node:path';
import swc from 'unplugin-swc';
import type { ViteUserConfig } from 'vitest/config';

/**
 * What the unit and integration configs share. Nest decorators need swc (legacy decorators and
 * their metadata), which Vite's own transform does not emit; and at run time the shared package's
 * default export is dist/ (a build), so tests use its sources (the same for the other packages).
 */
export const sharedConfig: Pick<ViteUserConfig, 'plugins' | 'resolve'> = {
  plugins: [
    swc.vite({
      tsconfigFile: false,
      // The portal's React components (.tsx) get the transform below.
      exclude: ['**/node_modules/**', '**/*.tsx'],
      jsc: {
        target: 'es2022',
        keepClassNames: true,
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
      },
    }),
    // React components in the portal's component tests: TSX with the automatic JSX runtime.
    swc.vite({
      tsconfigFile: false,
      include: ['**/*.tsx'],
      exclude: ['**/node_modules/**'],
      jsc: {
        target: 'es2022',
        parser: { syntax: 'typescript', tsx: true },
        transform: { react: { runtime: 'automatic' } },
      },
    }),
  ],
  resolve: {
    alias: {
      '@tributary/shared': path.resolve(__dirname, 'packages/shared/src/index.ts'),
      // Before the package itself: an alias also matches the paths under its name.
      '@tributary/replication/testing': path.resolve(__dirname, 'packages/replication/src/testing/index.ts'),
      '@tributary/replication': path.resolve(__dirname, 'packages/replication/src/index.ts'),
      '@tributary/buffer': path.resolve(__dirname, 'packages/buffer/src/index.ts'),
      '@tributary/placement': path.resolve(__dirname, 'packages/placement/src/index.ts'),
      '@tributary/testkit/delay-proxy': path.resolve(__dirname, 'packages/testkit/src/delay-proxy.ts'),
      '@tributary/testkit/request-counts': path.resolve(__dirname, 'packages/testkit/src/request-counts.ts'),
      '@tributary/testkit/prng': path.resolve(__dirname, 'packages/testkit/src/prng.ts'),
      '@tributary/testkit/chromium': path.resolve(__dirname, 'packages/testkit/src/chromium.ts'),
      '@tributary/testkit': path.resolve(__dirname, 'packages/testkit/src/index.ts'),
    },
  },
};

/**
 * In CI (`CI` set, as .ci/run does) the run also writes a JUnit report, test-results/junit-<suite>.xml,
 * for CI tools that read test results from files rather than from the log.
 */
export function junitInCi(suite: string): { reporters?: string[]; outputFile?: { junit: string } } {
  if (!process.env.CI) return {};
  return { reporters: ['default', 'junit'], outputFile: { junit: `test-results/junit-${suite}.xml` } };
}
