/**
 * `@tributary/agent/embedding`: what code outside the agent may use (the benchmarks in `bench/`):
 * `trib` run in the calling process, and the mount's entry for starting a mount as a child process.
 * Built to `dist/embedding.js` with its declarations; everything else in the agent is internal.
 */
import path from 'node:path';

export { runCli, ExitCode, type CliIO } from './cli';

/** The mount's process entry (`--site`, `--remote`, `--mountpoint`, `--buffer-mib`; see mount/main.ts). */
export const MOUNT_SCRIPT = path.join(__dirname, 'mount', 'main.js');
