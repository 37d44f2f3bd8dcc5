import { expect } from 'vitest';

/** Polls `condition` every 50 ms until it holds or `timeoutMs` passes; the last answer is returned. */
export async function waitFor(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await condition()) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return condition();
}

/**
 * For work that must wait on a lock another connection holds: checks that `waiting` (already
 * started) has not settled after `ms`, then runs `release` and returns what `waiting` gives.
 */
export async function expectToWaitUntil<T>(
  waiting: Promise<T>,
  release: () => Promise<unknown>,
  ms = 300,
): Promise<T> {
  let settled = false;
  const watched = waiting.finally(() => (settled = true));
  await new Promise((r) => setTimeout(r, ms));
  expect(settled, 'finished without waiting').toBe(false);
  await release();
  return watched;
}
