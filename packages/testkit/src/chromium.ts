/**
 * The flags the tests start Debian's Chromium with (Playwright cannot download its own browsers
 * here): the agent's local UI test and the end-to-end tests. Without the networking flags Chromium
 * keeps dialling out to services this machine cannot reach. Its own entry
 * (`@tributary/testkit/chromium`), so the Playwright config can import it without vitest.
 */
export const CHROMIUM_ARGS: readonly string[] = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  '--disable-sync',
];
