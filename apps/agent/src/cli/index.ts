import { Command, CommanderError } from 'commander';
import { registerAuth } from './commands-auth';
import { registerCaching } from './commands-caching';
import { registerCatalog } from './commands-catalog';
import { registerFs } from './commands-fs';
import { registerLocal } from './commands-local';
import { registerMount } from './commands-mount';
import { registerPlacement } from './commands-placement';
import { registerStorage } from './commands-storage';
import { registerTransfer } from './commands-transfer';
import { registerUsage } from './commands-usage';
import type { CliIO } from './context';
import { describeError, ExitCode } from './errors';

export type { CliIO } from './context';
export { ExitCode } from './errors';

const VERSION = '0.1.0';

/** Builds the `trib` command tree writing to `io` (a fresh one per run: commander keeps state). */
export function buildProgram(io: CliIO): Command {
  const program = new Command('trib');
  program
    .description(
      'Tributary from the command line: files, metadata, tokens, conflicts and mounts of a federation',
    )
    .version(VERSION, '-V, --version')
    .option('--json', 'machine-readable output on stdout')
    .option('-q, --quiet', 'no messages, only results and errors')
    .option('--site <name|url>', 'use this saved site (or URL) instead of the current one')
    .option('--no-progress', 'no progress bars (they are only shown on a terminal anyway)')
    .exitOverride()
    .configureOutput({
      writeOut: (s) => void io.stdout.write(s),
      writeErr: (s) => void io.stderr.write(s),
      outputError: (s, write) => write(`trib: ${s.replace(/^error: /, '')}`),
    })
    .showSuggestionAfterError(true)
    .showHelpAfterError('(add --help for usage)')
    .addHelpText(
      'after',
      `
Relative remote paths start at your working collection (trib cd; your home after login).
TRIBUTARY_SITE and TRIBUTARY_TOKEN override the saved site and token.

Exit codes: 0 ok, 1 error, 2 bad arguments, 3 not found, 4 not logged in or not allowed,
5 conflict (name taken, wrong kind, content differs), 6 site unreachable, 7 checksum mismatch,
8 not supported here (no FUSE, no browser), 130 interrupted.`,
    );
  registerAuth(program, io);
  registerFs(program, io);
  registerTransfer(program, io);
  registerCatalog(program, io);
  registerPlacement(program, io);
  registerCaching(program, io);
  registerStorage(program, io);
  registerUsage(program, io);
  registerMount(program, io);
  registerLocal(program, io);
  return program;
}

/**
 * Runs one `trib` command in this process and resolves to its exit code; nothing calls
 * process.exit. `argv` is what follows `trib` (e.g. `['put', '-r', 'dir', '/home/alice/']`).
 * Output goes to `io.stdout`/`io.stderr`; `io.env` replaces process.env (TRIBUTARY_AGENT_HOME,
 * TRIBUTARY_SITE, TRIBUTARY_TOKEN), `io.cwd` the working directory, `io.signal` cancels.
 */
export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  const program = buildProgram(io);
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ExitCode.Ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return ExitCode.Ok;
      // Help shown because a command group was given no subcommand: usage, except bare `trib`.
      if (err.code === 'commander.help') return argv.length === 0 ? ExitCode.Ok : ExitCode.Usage;
      // Commander has printed its message (unknown command or option, missing argument, bad value).
      return ExitCode.Usage;
    }
    const failure = describeError(err);
    const json = argv.includes('--json');
    if (json) {
      io.stderr.write(
        JSON.stringify({
          error: {
            code: failure.code,
            message: failure.message,
            hint: failure.hint,
            exitCode: failure.exitCode,
          },
        }) + '\n',
      );
    } else {
      io.stderr.write(`trib: ${failure.message}\n`);
      if (failure.hint) io.stderr.write(`  ${failure.hint}\n`);
    }
    return failure.exitCode;
  }
}
