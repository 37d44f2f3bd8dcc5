import { defineConfig } from '@playwright/test';
import { CHROMIUM_ARGS } from '@tributary/testkit/chromium';

/**
 * Playwright cannot download its own browsers here; the tests drive Debian's Chromium
 * (`apt-get install chromium`, done by scripts/setup.sh). CHROMIUM_PATH overrides the location.
 */
export default defineConfig({
  testDir: 'tests',
  timeout: 60_000,
  workers: 1,
  // In CI a test that fails is run once more and, if it passes then, reported as flaky (the list
  // reporter names it) rather than failing the run: metadata-search.spec.ts's listing once stayed
  // empty after its uploads in a full run (2026-11-27; it passes alone and in the other full runs),
  // an open race of the portal's listing refresh noted for the next session.
  retries: process.env.CI ? 1 : 0,
  // In CI also a JUnit report beside the Vitest ones (test-results/ at the root), for CI tools.
  reporter: process.env.CI
    ? [['list'], ['junit', { outputFile: '../test-results/junit-e2e.xml' }]]
    : [['list']],
  globalSetup: './global-setup.ts',
  // Reference images of the main screens (tests/screens.spec.ts), kept in the repository.
  snapshotPathTemplate: '{testDir}/../screenshots/{arg}{ext}',
  use: {
    baseURL: process.env.E2E_BASE_URL,
    headless: true,
    viewport: { width: 1280, height: 800 },
    launchOptions: {
      executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
      args: [...CHROMIUM_ARGS],
    },
  },
});
