import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Command } from 'commander';
import { ApiError, ErrorCode, joinPath, type EntryDto } from '@tributary/shared';
import { TransferJournal } from '../transfers/transfer-records';
import { action, intArg } from './command';
import type { CliContext, CliIO } from './context';
import { CliError, describeError, ExitCode, usage } from './errors';
import { formatSize } from './output';
import { baseName, endsWithSlash } from './paths';
import { TransferTracker } from './progress';
import type { SiteService } from './service';
import {
  downloadObjects,
  ensureCollection,
  uploadFiles,
  walkLocal,
  type LocalFile,
  type TransferSummary,
} from './tree-transfer';

interface TransferOptions {
  recursive?: boolean;
  force?: boolean;
  parallel?: number;
  chunkMib?: number;
}

/** put and get: local files to the federation and back (the seed's pput/pget). */
export function registerTransfer(program: Command, io: CliIO): void {
  const common = (command: Command) =>
    command
      .option('-r, --recursive', 'directories (collections) with everything in them')
      .option('-f, --force', 'replace targets whose content differs (identical ones are always skipped)')
      .option(
        '-j, --parallel <n>',
        'files in flight at once (default: the parallel setting, 16)',
        intArg('--parallel', 1, 64),
      )
      .option(
        '--chunk-mib <n>',
        'chunk size of large files in MiB (default 8)',
        intArg('--chunk-mib', 1, 256),
      );

  common(
    program
      .command('put')
      .usage('[options] <local...> <remote>')
      .argument('<sources...>', 'local files (directories with -r), then the remote target')
      .description('upload local files; checksummed, parallel, and large files resume where they stopped')
      .addHelpText(
        'after',
        '\nExamples:\n  trib put data.h5 /home/alice/run1/\n  trib put -r ./run1 /home/alice/        # creates /home/alice/run1\n  trib put -r ./run1 /home/alice/run1-copy # into a new collection of that name',
      ),
  ).action(action(io, put));

  common(
    program
      .command('get')
      .usage('[options] <remote...> <local>')
      .argument('<sources...>', 'remote objects (collections with -r), then the local target')
      .description(
        'download objects; checksummed against the catalog, parallel ranged requests for large ones',
      )
      .addHelpText(
        'after',
        '\nExamples:\n  trib get /home/alice/run1/data.h5 .\n  trib get -r /home/alice/run1 ./copies/',
      ),
  ).action(action(io, get));
}

async function startJournal(
  ctx: CliContext,
  service: SiteService,
  direction: 'put' | 'get',
  source: string,
  target: string,
) {
  return TransferJournal.start({ direction, source, target, site: service.site.name }, ctx.env).catch(
    () => undefined,
  );
}

async function settingsOf(ctx: CliContext, options: TransferOptions) {
  const config = await ctx.config();
  return {
    parallel: options.parallel ?? config.settings.parallel,
    force: options.force === true,
    chunkBytes: options.chunkMib ? options.chunkMib * 1024 * 1024 : undefined,
    signal: ctx.io.signal,
    env: ctx.env,
  };
}

/** Runs a transfer with its tracker and journal, and prints the summary. */
async function tracked(
  ctx: CliContext,
  service: SiteService,
  direction: 'put' | 'get',
  source: string,
  target: string,
  run: (tracker: TransferTracker) => Promise<TransferSummary>,
): Promise<void> {
  const journal = await startJournal(ctx, service, direction, source, target);
  const tracker = new TransferTracker(ctx.io.stderr, ctx.showProgress, journal, (text) => ctx.note(text));
  let summary: TransferSummary;
  try {
    summary = await run(tracker);
  } catch (err) {
    tracker.stop();
    const failure = describeError(err);
    await journal?.finish(
      failure.exitCode === ExitCode.Interrupted ? 'interrupted' : 'failed',
      failure.message,
    );
    throw err;
  }
  tracker.stop();
  await journal?.finish('done');
  const rate = summary.seconds > 0 ? summary.bytes / summary.seconds : 0;
  ctx.result({ ...summary, direction, source, target, bytesPerSecond: Math.round(rate) }, () => '');
  ctx.note(
    `${direction === 'put' ? 'Uploaded' : 'Downloaded'} ${summary.transferred} of ${summary.files} file${summary.files === 1 ? '' : 's'}` +
      (summary.unchanged > 0 ? ` (${summary.unchanged} already identical)` : '') +
      `, ${formatSize(summary.bytes)} in ${summary.seconds.toFixed(2)} s (${formatSize(rate)}/s).`,
  );
}

async function put(ctx: CliContext, options: TransferOptions, args: string[]): Promise<void> {
  if (args.length < 2) throw usage('give local sources and a remote target: trib put <file...> <remote>');
  const service = await ctx.service();
  const settings = await settingsOf(ctx, options);
  const targetInput = args[args.length - 1]!;
  const target = await ctx.remote(targetInput);
  const sources = args.slice(0, -1).map((s) => path.resolve(ctx.cwd, s));
  const stats = await Promise.all(sources.map((s) => fs.stat(s)));
  stats.forEach((s, i) => {
    if (s.isDirectory() && !options.recursive)
      throw usage(`${args[i]} is a directory: pass -r to upload it with what it holds`);
    if (!s.isDirectory() && !s.isFile()) throw usage(`${args[i]} is neither a file nor a directory`);
  });
  let existing: EntryDto | undefined;
  try {
    existing = await service.client.stat(target);
  } catch (err) {
    if (!(err instanceof ApiError && err.code === ErrorCode.NotFound)) throw err;
  }
  const into = existing?.kind === 'collection';
  if (!into && (sources.length > 1 || endsWithSlash(targetInput))) {
    throw new CliError(
      existing ? `${target} is not a collection` : `no collection ${target}`,
      existing ? ExitCode.Conflict : ExitCode.NotFound,
      existing ? undefined : `create it first with \`trib mkdir -p ${target}\``,
      existing ? 'NOT_A_COLLECTION' : 'NOT_FOUND',
    );
  }

  const items: Array<{ file: LocalFile; remote: string }> = [];
  const fresh = new Set<string>();
  const collections: string[] = [];
  for (const [i, source] of sources.entries()) {
    const stat = stats[i]!;
    const top = into ? joinPath(target, path.basename(source)) : target;
    if (stat.isFile()) {
      items.push({
        file: { relative: path.basename(source), absolute: source, size: stat.size, mtimeMs: stat.mtimeMs },
        remote: top,
      });
      continue;
    }
    const tree = await walkLocal(source);
    if (await ensureCollection(service, top, false)) fresh.add(top);
    collections.push(top);
    // Parents before children: one level at a time, each level in parallel.
    const byDepth = new Map<number, string[]>();
    for (const dir of tree.dirs) {
      const depth = dir.split('/').length;
      byDepth.set(depth, [...(byDepth.get(depth) ?? []), dir]);
    }
    for (const depth of [...byDepth.keys()].sort((a, b) => a - b)) {
      await Promise.all(
        byDepth.get(depth)!.map(async (dir) => {
          const remote = joinPath(top, dir);
          const parentFresh = fresh.has(remote.slice(0, remote.lastIndexOf('/')) || '/');
          // Under a collection created just now nothing can exist yet.
          const created = parentFresh
            ? (await service.client.createCollection(remote, false), true)
            : await ensureCollection(service, remote, false);
          if (created) fresh.add(remote);
          collections.push(remote);
        }),
      );
    }
    for (const file of tree.files) items.push({ file, remote: joinPath(top, file.relative) });
  }
  await tracked(ctx, service, 'put', args.slice(0, -1).join(' '), target, async (tracker) => ({
    ...(await uploadFiles(service, items, fresh, settings, tracker)),
    collections: collections.length,
  }));
}

async function get(ctx: CliContext, options: TransferOptions, args: string[]): Promise<void> {
  if (args.length < 2) throw usage('give remote sources and a local target: trib get <remote...> <local>');
  const service = await ctx.service();
  const settings = await settingsOf(ctx, options);
  const targetInput = args[args.length - 1]!;
  const target = path.resolve(ctx.cwd, targetInput);
  const sources = await Promise.all(args.slice(0, -1).map((s) => ctx.remote(s)));
  const localStat = await fs.stat(target).catch(() => undefined);
  const into = localStat?.isDirectory() === true;
  if (!into && (sources.length > 1 || targetInput.endsWith('/') || targetInput.endsWith(path.sep))) {
    throw new CliError(
      `no local directory ${target}`,
      ExitCode.NotFound,
      `create it first (mkdir -p ${target})`,
      'ENOENT',
    );
  }
  const entries = await Promise.all(sources.map((s) => service.client.stat(s)));
  const items: Array<{ entry: EntryDto; local: string }> = [];
  // Symbolic links come down as links (their target as written, never followed).
  const links: Array<{ entry: EntryDto; local: string }> = [];
  for (const entry of entries) {
    const top = into ? path.join(target, baseName(entry.path) || 'root') : target;
    if (entry.kind === 'object') {
      items.push({ entry, local: top });
      continue;
    }
    if (entry.kind === 'symlink') {
      links.push({ entry, local: top });
      continue;
    }
    if (!options.recursive)
      throw usage(`${entry.path} is a collection: pass -r to download it with what it holds`);
    const tree = await service.walk(entry.path, ctx.io.signal);
    await fs.mkdir(top, { recursive: true });
    for (const dir of tree.filter((e) => e.kind === 'collection'))
      await fs.mkdir(path.join(top, ...dir.relative.split('/')), { recursive: true });
    for (const object of tree.filter((e) => e.kind === 'object'))
      items.push({ entry: object, local: path.join(top, ...object.relative.split('/')) });
    for (const link of tree.filter((e) => e.kind === 'symlink'))
      links.push({ entry: link, local: path.join(top, ...link.relative.split('/')) });
  }
  for (const { entry, local } of links) {
    await fs.rm(local, { force: true });
    await fs.symlink(entry.linkTarget ?? '', local);
  }
  await tracked(ctx, service, 'get', sources.join(' '), target, (tracker) =>
    downloadObjects(service, items, settings, tracker),
  );
}
