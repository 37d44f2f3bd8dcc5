/**
 * `@tributary/agent/embedding`: what code outside the agent may use in its process (the benchmarks
 * in `bench/`): `trib` run in the calling process. Everything else in the agent is internal, except
 * the mount's process entry, which package.json exports as `@tributary/agent/mount` for starting a
 * mount as a child process (`require.resolve` it; see mount/main.ts for its options). Built to
 * `dist/embedding.js` with its declarations.
 */
export { runCli, ExitCode, type CliIO } from './cli';
