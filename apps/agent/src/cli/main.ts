#!/usr/bin/env node
import { runCli } from './index';

/** The `trib` executable: runs one command, Ctrl-C cancels transfers cleanly, exits with its code. */
const controller = new AbortController();
let interrupts = 0;
process.on('SIGINT', () => {
  if (++interrupts > 1) process.exit(130);
  controller.abort(new DOMException('interrupted', 'AbortError'));
});
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  // `trib ls | head`: the reader went away.
  if (err.code === 'EPIPE') process.exit(0);
});

runCli(process.argv.slice(2), {
  stdout: process.stdout,
  stderr: process.stderr,
  stdin: process.stdin,
  signal: controller.signal,
}).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`trib: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
