import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { openSync, closeSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { agentHome } from '../agent-home';
import { findMount, listMounts, mountLogFile, mountsDirFor, type MountView } from '../mount/state';
import { processAlive } from '../transfers/transfer-records';
import { action, intArg } from './command';
import type { CliContext, CliIO } from './context';
import { CliError, ExitCode, usage } from './errors';
import { formatSize, formatTable, formatTime } from './output';

/** The mount process's own exit code when FUSE is missing on this machine (src/mount/main.ts). */
export const MOUNT_EXIT_NO_FUSE = 3;

/** Where the mount process's entry point is: TRIBUTARY_MOUNT_MAIN (tests), else beside this build. */
export function mountMain(env: NodeJS.ProcessEnv): string {
  return env.TRIBUTARY_MOUNT_MAIN ?? path.join(__dirname, '..', 'mount', 'main.js');
}

/** A timeout in seconds for the mount process (decimals allowed, 0.1 to 3600). */
function secondsArg(name: string): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!/^\d+(\.\d+)?$/.test(value.trim()) || n < 0.1 || n > 3600)
      throw new InvalidArgumentError(`${name} must be a number of seconds from 0.1 to 3600`);
    return n;
  };
}

interface MountCommandOptions {
  foreground?: boolean;
  list?: boolean;
  timeout?: number;
  metadataTimeout?: number;
  dataTimeout?: number;
}

/** mount, unmount, mounts: the FUSE mount runs as its own process; these start, find and stop it. */
export function registerMount(program: Command, io: CliIO): void {
  program
    .command('mount')
    .argument('[remote]', 'the collection to mount, e.g. / or /projects/coast')
    .argument('[local-dir]', 'an empty local directory')
    .option('--foreground', 'stay attached: the mount runs until Ctrl-C')
    .option('--list', 'list mounts (same as `trib mounts`)')
    .option(
      '--timeout <seconds>',
      'how long to wait for the mount to come up (default 30)',
      intArg('--timeout', 1, 600),
    )
    .option(
      '--metadata-timeout <seconds>',
      'longest wait for the site to answer a stat or a listing, and to show signs of life while it commits a change (default 5)',
      secondsArg('--metadata-timeout'),
    )
    .option(
      '--data-timeout <seconds>',
      'longest time a read or write may make no progress (default 30)',
      secondsArg('--data-timeout'),
    )
    .description("mount a collection on a local directory with FUSE (the seed's petafs)")
    .addHelpText(
      'after',
      '\nExamples:\n  trib mount / ~/federation\n  trib mount /projects/coast /mnt/coast --foreground\n  trib unmount ~/federation',
    )
    .action(
      action(io, async (ctx: CliContext, options: MountCommandOptions, remote?: string, local?: string) => {
        if (options.list) return showMounts(ctx);
        if (!remote || !local)
          throw usage('give the remote collection and the local directory: trib mount <remote> <local-dir>');
        await mount(ctx, await ctx.remote(remote), path.resolve(ctx.cwd, local), options);
      }),
    );
  program
    .command('unmount')
    .alias('umount')
    .argument('<local-dir>')
    .option(
      '--timeout <seconds>',
      'how long to wait for the mount to stop (default 15)',
      intArg('--timeout', 1, 600),
    )
    .description('stop a mount started by `trib mount`')
    .action(
      action(io, async (ctx: CliContext, options: { timeout?: number }, local: string) => {
        await unmount(ctx, path.resolve(ctx.cwd, local), (options.timeout ?? 15) * 1000);
      }),
    );
  program
    .command('mounts')
    .description('mounts on this machine and their state')
    .action(action(io, (ctx: CliContext) => showMounts(ctx)));
}

async function showMounts(ctx: CliContext): Promise<void> {
  const mounts = await listMounts(ctx.env);
  ctx.result(mounts, () =>
    mounts.length === 0
      ? 'No mounts.\n'
      : formatTable(mounts, [
          { header: 'MOUNTPOINT', value: (m) => m.mountpoint },
          { header: 'REMOTE', value: (m) => m.remote },
          { header: 'SITE', value: (m) => m.site },
          { header: 'STATE', value: (m) => describeState(m) },
          { header: 'READ', value: (m) => formatSize(m.stats.bytesRead), align: 'right' },
          { header: 'WRITTEN', value: (m) => formatSize(m.stats.bytesWritten), align: 'right' },
          { header: 'SINCE', value: (m) => formatTime(m.startedAt) },
        ]),
  );
}

export function describeState(m: MountView): string {
  if (!m.alive && (m.state === 'mounting' || m.state === 'mounted' || m.state === 'unreachable'))
    return `${m.state} (process gone)`;
  return m.state;
}

async function mount(
  ctx: CliContext,
  remote: string,
  mountpoint: string,
  options: MountCommandOptions,
): Promise<void> {
  const service = await ctx.service();
  const stat = await fs.stat(mountpoint).catch((err: NodeJS.ErrnoException) =>
    // A mount whose process died ("Transport endpoint is not connected"): the mount process clears
    // it before mounting (see docs/mount.md), unless a live mount is registered there (below).
    err.code === 'ENOTCONN' ? ('stale' as const) : undefined,
  );
  if (stat !== 'stale' && !stat?.isDirectory())
    throw new CliError(
      `${mountpoint} is not a directory`,
      ExitCode.NotFound,
      `create it first (mkdir -p ${mountpoint})`,
      'ENOENT',
    );
  const already = await findMount(mountpoint, ctx.env);
  if (already && !already.alive) {
    // The record of a mount whose process died: the new mount replaces it.
    await fs.rm(path.join(mountsDirFor(ctx.env), `${already.id}.json`), { force: true });
  }
  if (already?.alive) {
    throw new CliError(
      `${mountpoint} is already mounted (${already.remote} at ${already.site})`,
      ExitCode.Conflict,
      `trib unmount ${mountpoint}`,
      'ALREADY_MOUNTED',
    );
  }
  // Check the collection before starting a process for it.
  const entry = await service.client.stat(remote);
  if (entry.kind !== 'collection')
    throw new CliError(`${remote} is not a collection`, ExitCode.Conflict, undefined, 'NOT_A_COLLECTION');
  const main = mountMain(ctx.env);
  const id = randomBytes(6).toString('hex');
  const settings = (await ctx.config()).settings;
  const env: NodeJS.ProcessEnv = {
    ...ctx.env,
    // The token goes in the environment, never on the command line (visible in ps).
    TRIBUTARY_TOKEN: service.site.token,
    TRIBUTARY_AGENT_HOME: agentHome(ctx.env),
    TRIBUTARY_MOUNT_ID: id,
  };
  // The trib config's buffer and cache settings, as flags (the mount process reads no environment for them).
  const args = [
    main,
    '--site',
    service.site.url,
    '--remote',
    remote,
    '--mountpoint',
    mountpoint,
    '--buffer-mib',
    String(settings.bufferMiB),
    '--cache-ttl-ms',
    String(settings.cacheTtlSeconds * 1000),
  ];
  if (options.metadataTimeout !== undefined) args.push('--metadata-timeout', String(options.metadataTimeout));
  if (options.dataTimeout !== undefined) args.push('--data-timeout', String(options.dataTimeout));
  if (options.foreground) {
    const child = spawn(process.execPath, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (d: Buffer) => ctx.io.stdout.write(d.toString()));
    child.stderr.on('data', (d: Buffer) => ctx.io.stderr.write(d.toString()));
    const onAbort = () => child.kill('SIGTERM');
    ctx.io.signal?.addEventListener('abort', onAbort, { once: true });
    const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)));
    ctx.io.signal?.removeEventListener('abort', onAbort);
    if (code === MOUNT_EXIT_NO_FUSE)
      throw new CliError(
        'FUSE is not available on this machine',
        ExitCode.Unsupported,
        'install FUSE (Debian: apt-get install fuse libfuse2)',
        'FUSE_UNAVAILABLE',
      );
    if (code !== 0 && !ctx.io.signal?.aborted)
      throw new CliError(
        `the mount process exited with code ${code}`,
        ExitCode.Error,
        undefined,
        'MOUNT_FAILED',
      );
    return;
  }

  const log = mountLogFile(id, ctx.env);
  await fs.mkdir(path.dirname(log), { recursive: true, mode: 0o700 });
  await fs.mkdir(mountsDirFor(ctx.env), { recursive: true, mode: 0o700 });
  const fd = openSync(log, 'a', 0o600);
  const child = spawn(process.execPath, args, { env, detached: true, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  let exited: number | null | undefined;
  child.on('exit', (code) => (exited = code ?? 1));
  child.on('error', () => (exited = 1));
  const deadline = Date.now() + (options.timeout ?? 30) * 1000;
  try {
    for (;;) {
      const state = (await listMounts(ctx.env)).find((m) => m.pid === child.pid || m.id === id);
      if (state?.state === 'mounted') {
        child.unref();
        ctx.result(state, () => `Mounted ${remote} (${service.site.name}) on ${mountpoint}. Log: ${log}\n`);
        return;
      }
      if (state?.state === 'failed')
        throw await mountFailure(`the mount failed: ${state.lastError ?? 'no reason given'}`, log, exited);
      if (exited !== undefined)
        throw await mountFailure(`the mount process exited with code ${exited} before mounting`, log, exited);
      if (Date.now() > deadline) {
        child.kill('SIGTERM');
        throw await mountFailure(`the mount did not come up within ${options.timeout ?? 30} s`, log, exited);
      }
      if (ctx.io.signal?.aborted) {
        child.kill('SIGTERM');
        throw new CliError('interrupted', ExitCode.Interrupted, undefined, 'INTERRUPTED');
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  } catch (err) {
    child.unref();
    throw err;
  }
}

async function mountFailure(
  message: string,
  log: string,
  exitCode: number | null | undefined,
): Promise<CliError> {
  const tail = await logTail(log);
  if (exitCode === MOUNT_EXIT_NO_FUSE) {
    return new CliError(
      `FUSE is not available on this machine${tail ? `:\n${tail}` : ''}`,
      ExitCode.Unsupported,
      'install FUSE (Debian: apt-get install fuse libfuse2)',
      'FUSE_UNAVAILABLE',
    );
  }
  return new CliError(
    tail ? `${message}; the end of its log (${log}):\n${tail}` : message,
    ExitCode.Error,
    undefined,
    'MOUNT_FAILED',
  );
}

/** The last lines of a log file (at most 20 lines, 4 KiB). */
export async function logTail(file: string, lines = 20): Promise<string> {
  try {
    const text = await fs.readFile(file, 'utf8');
    return text.slice(-4096).trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

async function unmount(ctx: CliContext, mountpoint: string, timeoutMs: number): Promise<void> {
  const found = await findMount(mountpoint, ctx.env);
  if (!found) {
    // Perhaps mounted by an earlier agent whose state is gone: ask FUSE directly.
    if (fusermount(mountpoint)) {
      ctx.result(
        { mountpoint, unmounted: true, via: 'fusermount' },
        () => `Unmounted ${mountpoint} (fusermount).\n`,
      );
      return;
    }
    throw new CliError(
      `nothing is mounted on ${mountpoint}`,
      ExitCode.NotFound,
      'see `trib mounts`',
      'NOT_MOUNTED',
    );
  }
  const stateFile = path.join(mountsDirFor(ctx.env), `${found.id}.json`);
  if (found.alive) {
    try {
      process.kill(found.pid, 'SIGTERM');
    } catch {
      // Gone meanwhile.
    }
    if (!(await waitStopped(ctx, found, timeoutMs))) {
      // The process could not unmount (a busy mount, a stuck filesystem): ask FUSE, then wait a little more.
      fusermount(mountpoint);
      if (!(await waitStopped(ctx, found, 5000))) {
        throw new CliError(
          `${mountpoint} did not unmount within ${Math.round(timeoutMs / 1000)} s`,
          ExitCode.Error,
          `close programs using it, then retry; or \`fusermount -u ${mountpoint}\``,
          'UNMOUNT_FAILED',
        );
      }
    }
  } else {
    // A state file left by a process that died: clear the mount and the file.
    fusermount(mountpoint);
    await fs.rm(stateFile, { force: true });
  }
  ctx.result({ mountpoint, unmounted: true, via: 'signal' }, () => `Unmounted ${mountpoint}.\n`);
}

async function waitStopped(ctx: CliContext, mount: MountView, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    // Done when the process has gone (it removes its state file first) or its file has.
    const now = (await listMounts(ctx.env)).find((m) => m.id === mount.id);
    if (!now || !processAlive(mount.pid)) {
      // A file its process left behind is stale.
      if (now) await fs.rm(path.join(mountsDirFor(ctx.env), `${mount.id}.json`), { force: true });
      return true;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return false;
}

function fusermount(mountpoint: string): boolean {
  const result = spawnSync('fusermount', ['-u', mountpoint], { stdio: 'ignore', timeout: 10_000 });
  return result.status === 0;
}
