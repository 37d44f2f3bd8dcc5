#!/usr/bin/env node
/**
 * The mount process: `node dist/mount/main.js --site <url> --remote <path> --mountpoint <dir>
 * [--buffer-mib N] [--cache-ttl-ms N] [--metadata-timeout S] [--data-timeout S]`, token in
 * TRIBUTARY_TOKEN. Runs in the foreground until
 * SIGINT or SIGTERM, then unmounts and exits 0. Exit codes: 2 bad arguments, 3 FUSE unavailable,
 * 1 anything else (one line on stderr).
 */
import { parseArgs } from 'node:util';
import { normalizePath } from '@tributary/shared';
import { fuseAvailability } from './availability';
import { mountNamespace, type MountHandle } from './mount';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
export const EXIT_NO_FUSE = 3;

const USAGE =
  'usage: main.js --site <url> --remote <path> --mountpoint <dir> [--buffer-mib N] [--cache-ttl-ms N] [--metadata-timeout SECONDS] [--data-timeout SECONDS] (token in TRIBUTARY_TOKEN)';

function fail(code: number, message: string): never {
  process.stderr.write(`tributary mount: ${message}\n`);
  process.exit(code);
}

function integer(name: string, value: string | undefined, min: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value) || Number(value) < min)
    fail(EXIT_USAGE, `--${name} must be an integer >= ${min}\n${USAGE}`);
  return Number(value);
}

/** A timeout in seconds (decimals allowed, 0.1 to 3600), as milliseconds. */
function seconds(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!/^\d+(\.\d+)?$/.test(value) || n < 0.1 || n > 3600)
    fail(EXIT_USAGE, `--${name} must be a number of seconds from 0.1 to 3600\n${USAGE}`);
  return Math.round(n * 1000);
}

async function main(): Promise<void> {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      options: {
        site: { type: 'string' },
        remote: { type: 'string' },
        mountpoint: { type: 'string' },
        'buffer-mib': { type: 'string' },
        'cache-ttl-ms': { type: 'string' },
        'metadata-timeout': { type: 'string' },
        'data-timeout': { type: 'string' },
      },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    fail(EXIT_USAGE, `${(err as Error).message}\n${USAGE}`);
  }
  const { site, remote, mountpoint } = values;
  if (!site || !remote || !mountpoint)
    fail(EXIT_USAGE, `--site, --remote and --mountpoint are required\n${USAGE}`);
  try {
    const url = new URL(site);
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new Error('not http(s)');
  } catch {
    fail(EXIT_USAGE, `--site must be an http(s) URL, not "${site}"`);
  }
  try {
    normalizePath(remote);
  } catch (err) {
    fail(EXIT_USAGE, `--remote: ${(err as Error).message}`);
  }
  const bufferMiB = integer('buffer-mib', values['buffer-mib'], 1);
  const cacheTtlMs = integer('cache-ttl-ms', values['cache-ttl-ms'], 0);
  const metadataTimeoutMs = seconds('metadata-timeout', values['metadata-timeout']);
  const dataTimeoutMs = seconds('data-timeout', values['data-timeout']);
  const token = process.env.TRIBUTARY_TOKEN;
  if (!token)
    fail(EXIT_USAGE, 'set TRIBUTARY_TOKEN to an API token (it is never taken from the command line)');

  const availability = await fuseAvailability();
  if (!availability.available) fail(EXIT_NO_FUSE, availability.reason ?? 'FUSE is not available');

  let handle: MountHandle | undefined;
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    const done = handle ? handle.unmount() : Promise.resolve();
    done.then(
      () => process.exit(0),
      (err: unknown) => fail(EXIT_FAILURE, `unmounting failed: ${(err as Error).message}`),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  try {
    handle = await mountNamespace({
      site,
      token,
      remote,
      mountpoint,
      bufferMiB,
      cacheTtlMs,
      metadataTimeoutMs,
      dataTimeoutMs,
    });
  } catch (err) {
    fail(EXIT_FAILURE, `mounting ${remote} at ${mountpoint} failed: ${(err as Error).message}`);
  }
  if (stopping) {
    await handle.unmount().catch(() => undefined);
    process.exit(0);
  }
  process.stdout.write(`mounted ${site}${remote} at ${handle.mountpoint} (id ${handle.id})\n`);
}

void main();
