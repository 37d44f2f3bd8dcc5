import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

/** Small pieces the benchmarks share: waiting, statistics, test files, the disk's writeback. */

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Calls `check` every `everyMs` until it says true; throws naming `what` after `seconds`. */
export async function until(
  check: () => Promise<boolean>,
  seconds: number,
  what: string,
  everyMs = 100,
): Promise<void> {
  const t0 = performance.now();
  for (;;) {
    if (await check()) return;
    if (performance.now() - t0 > seconds * 1000)
      throw new Error(`timed out after ${seconds} s waiting for ${what}`);
    await sleep(everyMs);
  }
}

/** The nearest-rank percentile (`p` from 0 to 1); NaN for no values. */
export function percentile(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.max(0, Math.min(s.length - 1, Math.ceil(p * s.length) - 1))]!;
}

/** The median (the mean of the middle two for an even count); NaN for no values. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * Lets the disk catch up before a timed transfer (`sync`, then half a second), so that neither side
 * of a comparison pays for the other's writeback (measured in bench:dav: whichever side went first
 * in a round was 10 to 35 % slower without it).
 */
export async function settle(): Promise<void> {
  await new Promise<void>((resolve) => execFile('sync', () => resolve()));
  await sleep(500);
}

/**
 * A file of `bytes` random bytes, written in 8 MiB chunks that each differ (no two parts of an
 * object are the same bytes), fsynced.
 */
export async function writeRandomFile(file: string, bytes: number): Promise<void> {
  const handle = await fs.open(file, 'w');
  try {
    const chunk = randomBytes(8 * 1024 * 1024);
    for (let done = 0; done < bytes; done += chunk.length) {
      chunk.writeUInt32LE(done / chunk.length, 0);
      await handle.write(chunk, 0, Math.min(chunk.length, bytes - done));
    }
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The status of a GET of `route` at a site with a bearer token (0 when it could not be reached). */
export function probe(url: string, token: string, route: string): Promise<number> {
  return new Promise((resolve) => {
    const req = http.get(`${url}${route}`, { headers: { authorization: `Bearer ${token}` } });
    req.once('response', (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.once('error', () => resolve(0));
  });
}
