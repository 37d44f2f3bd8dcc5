import type { Command } from 'commander';
import {
  ApiError,
  ErrorCode,
  formatMode,
  joinPath,
  type EntryDetailDto,
  type EntryDto,
  type ErasureLayoutDto,
  type ReplicaDto,
  type TrashEntryDto,
} from '@tributary/shared';
import { action, choiceArg } from './command';
import type { CliContext, CliIO } from './context';
import { CliError, ExitCode, usage } from './errors';
import { formatFields, formatSize, formatTable, formatTime, sanitize } from './output';
import { baseName, endsWithSlash } from './paths';
import { copyObject, ensureCollection } from './tree-transfer';
import { parallel } from './service';

/** ls, stat, mkdir, mv, cp, rm, trash, restore: the namespace. */
export function registerFs(program: Command, io: CliIO): void {
  program
    .command('ls')
    .argument('[paths...]', 'collections or objects (default: the working collection)')
    .option('-l, --long', 'mode, size, file time, owner, site and name (with the target of a link)')
    .option('-R, --recursive', 'list everything below, with paths')
    .option(
      '--sort <key>',
      'name, size or modified',
      choiceArg('--sort', ['name', 'size', 'modified'] as const),
    )
    .option('-r, --reverse', 'reverse the order')
    .description("list collections (the seed's pls)")
    .action(action(io, ls));

  program
    .command('stat')
    .argument('<paths...>')
    .description('one collection or object in detail, with its replicas')
    .action(
      action(io, async (ctx: CliContext, _o: object, inputs: string[]) => {
        const service = await ctx.service();
        const entries: Array<EntryDetailDto & { erasure?: ErasureLayoutDto }> = [];
        for (const input of inputs) {
          const entry = await service.client.stat(await ctx.remote(input));
          // An erasure-coded object's layout (docs/erasure.md): k, m and where each shard is.
          const erasure =
            entry.kind === 'object'
              ? await service.client
                  .objectShards(entry.path)
                  .then((s) => s.erasure)
                  .catch(() => null)
              : null;
          entries.push(erasure ? { ...entry, erasure } : entry);
        }
        ctx.result(inputs.length === 1 ? entries[0] : entries, () =>
          entries
            .map((e) =>
              formatFields([
                ['path', e.path],
                ['kind', e.kind],
                ...(e.kind === 'symlink' ? [['target', e.linkTarget] as [string, string | null]] : []),
                [
                  'size',
                  e.kind === 'object'
                    ? `${e.size} (${formatSize(e.size)})`
                    : e.kind === 'symlink'
                      ? String(e.size)
                      : '-',
                ],
                ['mode', `${formatMode(e.kind, e.mode)} (${e.mode.toString(8).padStart(4, '0')})`],
                ['mtime', e.mtime],
                ['checksum', e.checksum],
                ['owner', e.owner],
                ['group', e.group],
                ['access', e.access],
                ['version', e.version],
                ['created', formatTime(e.createdAt)],
                ['modified', `${formatTime(e.modifiedAt)} (the catalog record)`],
                [
                  'replicas',
                  e.replicas
                    .map((r) => `${r.site}:${r.resource} (${r.status}${tierText(r.tier)})`)
                    .join(', ') || '-',
                ],
                ...(e.erasure ? erasureFields(e.erasure) : []),
              ]),
            )
            .join('\n'),
        );
      }),
    );

  program
    .command('mkdir')
    .argument('<paths...>')
    .option('-p, --parents', 'create missing parents too; an existing collection is fine')
    .description("create collections (the seed's pmkdir)")
    .action(
      action(io, async (ctx: CliContext, options: { parents?: boolean }, inputs: string[]) => {
        const service = await ctx.service();
        const created: EntryDto[] = [];
        for (const input of inputs) {
          const path = await ctx.remote(input);
          if (options.parents) {
            await ensureCollection(service, path, true);
            created.push(await service.client.stat(path));
          } else created.push(await service.client.createCollection(path, false));
        }
        ctx.result(created, () => '');
      }),
    );

  program
    .command('mv')
    .usage('[options] <source...> <target>')
    .argument('<sources...>', 'what to move or rename, then the target')
    .description(
      "rename or move collections and objects; into a collection when the target is one (the seed's pmv)",
    )
    .action(
      action(io, async (ctx: CliContext, _o: object, args: string[]) => {
        if (args.length < 2) throw usage('give a source and a target: trib mv <source...> <target>');
        const service = await ctx.service();
        const target = await ctx.remote(args[args.length - 1]!);
        const sources = await Promise.all(args.slice(0, -1).map((s) => ctx.remote(s)));
        const into = await isCollectionTarget(ctx, args[args.length - 1]!, target, sources.length);
        const moved: EntryDto[] = [];
        for (const from of sources)
          moved.push(await service.client.move(from, into ? joinPath(target, baseName(from)) : target));
        ctx.result(moved, () => '');
      }),
    );

  program
    .command('cp')
    .usage('[options] <source...> <target>')
    .argument('<sources...>', 'objects (collections with -r), then the target')
    .option('-r, --recursive', 'copy collections with everything in them')
    .option('-f, --force', 'replace objects that exist at the target')
    .description(
      "copy inside the federation: the bytes stream from the holding site to the target, checksum checked (the seed's pcp)",
    )
    .action(action(io, cp));

  program
    .command('rm')
    .argument('<paths...>')
    .option('-r, --recursive', 'remove collections with what they hold')
    .option('-f, --force', 'no error for paths that do not exist')
    .description('move collections and objects to the trash (restore with `trib restore`)')
    .action(
      action(
        io,
        async (ctx: CliContext, options: { recursive?: boolean; force?: boolean }, inputs: string[]) => {
          const service = await ctx.service();
          const trashed: TrashEntryDto[] = [];
          for (const input of inputs) {
            const path = await ctx.remote(input);
            let entry: EntryDto;
            try {
              entry = await service.client.stat(path);
            } catch (err) {
              if (options.force && err instanceof ApiError && err.code === ErrorCode.NotFound) continue;
              throw err;
            }
            if (entry.kind === 'collection' && !options.recursive) {
              throw usage(`${path} is a collection: pass -r to move it and everything in it to the trash`);
            }
            trashed.push(await service.client.remove(path));
          }
          ctx.result(trashed, () =>
            trashed.map((t) => `trashed ${sanitize(t.originalPath)} (trash id ${t.id})\n`).join(''),
          );
        },
      ),
    );

  const trash = program.command('trash').description('what you moved to the trash');
  trash
    .command('list', { isDefault: true })
    .alias('ls')
    .description('entries in the trash, newest first')
    .action(
      action(io, async (ctx: CliContext) => {
        const items = await allTrash(ctx);
        ctx.result(items, () =>
          items.length === 0
            ? 'The trash is empty.\n'
            : formatTable(items, [
                { header: 'ID', value: (t) => t.id },
                { header: 'KIND', value: (t) => t.kind },
                { header: 'DELETED', value: (t) => formatTime(t.deletedAt) },
                { header: 'BY', value: (t) => t.deletedBy },
                { header: 'PURGE', value: (t) => (t.purgeAllowed ? 'yes' : 'not yet') },
                { header: 'PATH', value: (t) => t.originalPath },
              ]),
        );
      }),
    );
  trash
    .command('purge')
    .argument('<ids...>', 'trash ids (see `trib trash list`)')
    .description('delete trash entries for good (allowed once every site has applied the delete)')
    .action(
      action(io, async (ctx: CliContext, _o: object, ids: string[]) => {
        const service = await ctx.service();
        for (const id of ids) await service.client.purge(checkId(id));
        ctx.result(
          { purged: ids },
          () => `Purged ${ids.length} trash entr${ids.length === 1 ? 'y' : 'ies'}.\n`,
        );
      }),
    );

  program
    .command('restore')
    .argument(
      '<targets...>',
      'trash ids, or the original paths of trashed entries (the latest delete of that path)',
    )
    .description('bring entries back from the trash to where they were')
    .action(
      action(io, async (ctx: CliContext, _o: object, targets: string[]) => {
        const service = await ctx.service();
        let trashList: TrashEntryDto[] | undefined;
        const restored: EntryDto[] = [];
        for (const target of targets) {
          let id = target;
          if (!/^\d+$/.test(target)) {
            const original = await ctx.remote(target);
            trashList ??= await allTrash(ctx);
            const match = trashList
              .filter((t) => t.originalPath === original)
              .sort((a, b) => b.deletedAt.localeCompare(a.deletedAt))[0];
            if (!match)
              throw new CliError(
                `nothing in the trash was at ${original}`,
                ExitCode.NotFound,
                'see `trib trash list`',
                'NOT_FOUND',
              );
            id = match.id;
          }
          restored.push(await service.client.restore(checkId(id)));
        }
        ctx.result(restored, () => restored.map((e) => `restored ${sanitize(e.path)}\n`).join(''));
      }),
    );
}

function checkId(id: string): string {
  if (!/^[1-9]\d{0,18}$/.test(id))
    throw usage(`"${id}" is not a trash id (a positive number; see \`trib trash list\`)`);
  return id;
}

async function allTrash(ctx: CliContext): Promise<TrashEntryDto[]> {
  const service = await ctx.service();
  const items: TrashEntryDto[] = [];
  let cursor: string | undefined;
  do {
    const page = await service.client.listTrash(1000, cursor);
    items.push(...page.items);
    cursor = page.nextCursor;
  } while (cursor);
  return items;
}

/** Whether a mv/cp target means "into this collection": it ends with '/', there are several sources, or it is one. */
async function isCollectionTarget(
  ctx: CliContext,
  input: string,
  target: string,
  sources: number,
): Promise<boolean> {
  const service = await ctx.service();
  let existing: EntryDto | undefined;
  try {
    existing = await service.client.stat(target);
  } catch (err) {
    if (!(err instanceof ApiError && err.code === ErrorCode.NotFound)) throw err;
  }
  if (existing?.kind === 'collection') return true;
  if (endsWithSlash(input) || sources > 1) {
    throw new CliError(
      existing ? `${target} is not a collection` : `no collection ${target}`,
      existing ? ExitCode.Conflict : ExitCode.NotFound,
      existing ? undefined : `create it first with \`trib mkdir ${target}\``,
      existing ? 'NOT_A_COLLECTION' : 'NOT_FOUND',
    );
  }
  return false;
}

interface LsOptions {
  long?: boolean;
  recursive?: boolean;
  sort?: 'name' | 'size' | 'modified';
  reverse?: boolean;
}

async function ls(ctx: CliContext, options: LsOptions, inputs: string[]): Promise<void> {
  const service = await ctx.service();
  const paths = await Promise.all((inputs.length > 0 ? inputs : ['.']).map((p) => ctx.remote(p)));
  const listings: Array<{ path: string; entries: Array<EntryDto & { relative?: string }> }> = [];
  for (const path of paths) {
    const entry = await service.client.stat(path);
    if (entry.kind !== 'collection') {
      listings.push({ path, entries: [entry] });
      continue;
    }
    let entries: Array<EntryDto & { relative?: string }> = options.recursive
      ? await service.walk(path, ctx.io.signal)
      : await service.children(path, ctx.io.signal);
    entries = sortEntries(
      entries,
      options.sort ?? 'name',
      options.reverse === true,
      options.recursive === true,
    );
    listings.push({ path, entries });
  }
  const data = listings.length === 1 ? listings[0]!.entries : listings;
  ctx.result(data, () =>
    listings
      .map((l) => {
        const head = listings.length > 1 ? `${sanitize(l.path)}:\n` : '';
        const name = (e: EntryDto & { relative?: string }) =>
          (options.recursive ? (e.relative ?? e.name) : e.name) + (e.kind === 'collection' ? '/' : '');
        if (!options.long) return head + l.entries.map((e) => sanitize(name(e)) + '\n').join('');
        return (
          head +
          formatTable(
            l.entries,
            [
              { header: 'MODE', value: (e) => formatMode(e.kind, e.mode) },
              {
                header: 'SIZE',
                value: (e) =>
                  e.kind === 'collection' ? '-' : e.kind === 'symlink' ? String(e.size) : formatSize(e.size),
                align: 'right',
              },
              // As ls -l: the file time (set by writers, touch -d, rsync -a), not the catalog's.
              { header: 'MODIFIED', value: (e) => formatTime(e.mtime) },
              { header: 'OWNER', value: (e) => e.owner },
              { header: 'SITE', value: (e) => e.site ?? '-' },
              {
                header: 'NAME',
                value: (e) =>
                  e.kind === 'symlink' ? `${name(e)} -> ${sanitize(e.linkTarget ?? '')}` : name(e),
              },
            ],
            true,
          )
        );
      })
      .join('\n'),
  );
}

function sortEntries<T extends EntryDto & { relative?: string }>(
  entries: T[],
  key: 'name' | 'size' | 'modified',
  reverse: boolean,
  byPath: boolean,
): T[] {
  const compare = (a: T, b: T): number => {
    if (key === 'size') return a.size - b.size || a.name.localeCompare(b.name);
    // The file time, as ls -t (ISO 8601 with nine fraction digits: text order is time order).
    if (key === 'modified') return a.mtime.localeCompare(b.mtime) || a.name.localeCompare(b.name);
    return byPath ? (a.relative ?? a.name).localeCompare(b.relative ?? b.name) : a.name.localeCompare(b.name);
  };
  const sorted = [...entries].sort(compare);
  return reverse ? sorted.reverse() : sorted;
}

async function cp(
  ctx: CliContext,
  options: { recursive?: boolean; force?: boolean },
  args: string[],
): Promise<void> {
  if (args.length < 2) throw usage('give a source and a target: trib cp <source...> <target>');
  const service = await ctx.service();
  const targetInput = args[args.length - 1]!;
  const target = await ctx.remote(targetInput);
  const sources = await Promise.all(args.slice(0, -1).map((s) => ctx.remote(s)));
  const into = await isCollectionTarget(ctx, targetInput, target, sources.length);
  const copied: EntryDto[] = [];
  const settings = (await ctx.config()).settings;
  for (const from of sources) {
    const entry = await service.client.stat(from);
    const to = into ? joinPath(target, baseName(from)) : target;
    if (entry.kind === 'object') {
      copied.push(await copyObject(service, entry, to, options.force === true, ctx.io.signal));
      continue;
    }
    if (entry.kind === 'symlink') {
      // A link is copied as a link (as cp -P does): its target as written, never followed.
      copied.push(await service.client.createSymlink(to, entry.linkTarget ?? '', entry.mtime));
      continue;
    }
    if (!options.recursive) throw usage(`${from} is a collection: pass -r to copy it with what it holds`);
    if (to === from || to.startsWith(from + '/')) throw usage(`cannot copy ${from} into itself (${to})`);
    const tree = await service.walk(from, ctx.io.signal);
    await ensureCollection(service, to, false);
    for (const dir of tree.filter((e) => e.kind === 'collection'))
      await ensureCollection(service, joinPath(to, dir.relative), false);
    for (const link of tree.filter((e) => e.kind === 'symlink'))
      copied.push(
        await service.client.createSymlink(joinPath(to, link.relative), link.linkTarget ?? '', link.mtime),
      );
    await parallel(
      tree.filter((e) => e.kind === 'object'),
      settings.parallel,
      async (object) => {
        copied.push(
          await copyObject(
            service,
            object,
            joinPath(to, object.relative),
            options.force === true,
            ctx.io.signal,
          ),
        );
      },
    );
  }
  ctx.result(copied, () =>
    ctx.options.quiet ? '' : `Copied ${copied.length} object${copied.length === 1 ? '' : 's'}.\n`,
  );
}

/**
 * A copy's tiers on a compound resource (docs/storage.md): `cached` or `archive only`, the archive
 * copy `archived` or `archiving`, and a staging's progress.
 */
function tierText(tier: ReplicaDto['tier']): string {
  if (!tier) return '';
  const parts = [
    tier.cache ? 'cached' : 'archive only',
    tier.archive === 'archived' ? 'archived' : 'archiving',
  ];
  if (tier.staging) {
    const { bytesStaged, bytesTotal } = tier.staging;
    parts.push(`staging ${bytesTotal > 0 ? Math.floor((100 * bytesStaged) / bytesTotal) : 0}%`);
  }
  if (tier.archiveError && tier.archive !== 'archived') parts.push(`archive failing: ${tier.archiveError}`);
  return `, ${parts.join(', ')}`;
}

/** `trib stat`'s lines for an erasure-coded object: the layout, then each shard's site and state. */
export function erasureFields(e: ErasureLayoutDto): Array<[string, string]> {
  return [
    [
      'erasure',
      `${e.k}+${e.m} (${e.k} data and ${e.m} parity shards by ${e.domain}, ${formatSize(e.chunk)} per shard per stripe; ` +
        `${e.goodShards} of ${e.k + e.m} good, any ${e.k} read it)`,
    ],
    [
      'shards',
      [...e.shards]
        .sort((a, b) => a.index - b.index || a.site.localeCompare(b.site))
        .map(
          (s) =>
            `${s.index}:${s.site} (${s.state}${s.current ? '' : ', not current'}${s.wanted ? '' : ', not wanted'})`,
        )
        .join(', ') || '-',
    ],
  ];
}
