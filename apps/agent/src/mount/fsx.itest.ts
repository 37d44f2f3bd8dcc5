import { execFile } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { useMountedFederation, type MountProcess } from '../testing/mount-harness';

/**
 * The fsx-style randomized test (testing/fsx.mjs): one random sequence of writes at random offsets,
 * truncations, appends, reads, fsyncs, renames and close/reopen (O_TRUNC, O_APPEND), applied to a
 * file on a real mount and to a local file with the same seed, sizes compared after every step,
 * bytes after every read, whole contents after every close. The exerciser runs in a child process
 * (the test process never touches the mount).
 *
 * FSX_SEED: the seed (default: random, printed); FSX_OPS: the number of operations (default below);
 * FSX_MULTI: with the default (on), a second descriptor is open on the same file at times, written
 * and read alternately with the first, and the file is renamed while open (issue 25 item 2: the
 * mount shares one view of a file between descriptors and follows a renamed file); FSX_MULTI=0
 * leaves them out.
 * See docs/mount.md, "Testing the mount".
 */

const SCRIPT = path.resolve(__dirname, '../testing/fsx.mjs');
const SEED = process.env.FSX_SEED ? Number(process.env.FSX_SEED) : Math.floor(Math.random() * 2 ** 31);
const OPS = process.env.FSX_OPS ? Number(process.env.FSX_OPS) : 10_000;
const MULTI = process.env.FSX_MULTI !== '0';
/** Measured at 10 to 25 ms an operation on the 2-core build machine (10,000 in 102 s); ample room above that. */
const TIMEOUT_MS = 120_000 + OPS * 60;

describe('fsx: random operations on the mount and on a local file', () => {
  let mount: MountProcess | undefined;
  let scratch: string;

  useMountedFederation({ federation: { ids: ['lsu'] }, scratchPrefix: 'tributary-fsx-' }, (suite) => {
    ({ mount, scratch } = suite);
  });

  it(
    `${OPS} operations, seed ${SEED}${MULTI ? ', two descriptors' : ''}: no difference in content or size`,
    async () => {
      const args = [
        SCRIPT,
        '--test-dir',
        `${mount!.mountpoint}/fsx-${SEED}`,
        '--ref-dir',
        path.join(scratch, `fsx-${SEED}`),
        '--seed',
        String(SEED),
        '--ops',
        String(OPS),
        ...(MULTI ? ['--multi'] : []),
      ];
      console.log(
        `fsx: seed ${SEED}, ${OPS} ops${MULTI ? ', two descriptors' : ''} (FSX_SEED=${SEED} to replay)`,
      );
      const run = await new Promise<{ code: number; out: string }>((resolve) => {
        execFile(
          process.execPath,
          args,
          { timeout: TIMEOUT_MS - 10_000, maxBuffer: 16 << 20 },
          (err, stdout, stderr) => {
            const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
            resolve({
              code,
              out: `${String(stdout)}${String(stderr)}${err?.killed ? '\nfsx: killed (timeout)' : ''}`,
            });
          },
        );
      });
      console.log(run.out.trim());
      const log = mount!.output().slice(-3000);
      expect(run.code, `${run.out}\nmount output:\n${log}`).toBe(0);
    },
    TIMEOUT_MS,
  );
});
