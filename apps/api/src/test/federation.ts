import { sleep, startFederation, type Federation, type FederationOptions } from '@tributary/testkit';
import { afterAll, beforeAll, beforeEach } from 'vitest';

/**
 * Real site processes started with `options` before the suite (the federation handed to
 * `started`), closed after it; when a test fails, the last `outputChars` of every site's output
 * are printed. Call it in a `describe`. `startMs`: how long starting them may take.
 */
export function useFederation(
  options: FederationOptions,
  started: (fed: Federation) => void,
  outputChars = 20000,
  startMs = 120_000,
): void {
  let fed: Federation | undefined;

  beforeAll(async () => {
    fed = await startFederation(options);
    started(fed);
  }, startMs);

  afterAll(async () => {
    await fed?.close();
  }, 60_000);

  beforeEach(({ onTestFailed }) => {
    onTestFailed(() => console.error(fed?.outputs(outputChars)));
  });
}

/** Polls `check` every `everyMs` (a throw counts as false) until it holds (true) or `timeoutMs` passes (false). */
export async function until(
  check: () => Promise<boolean>,
  timeoutMs: number,
  everyMs = 200,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check().catch(() => false)) return true;
    if (Date.now() > deadline) return false;
    await sleep(everyMs);
  }
}
