import type { Command } from 'commander';
import type { CacheChangeDto, CacheEntryDto, StageStatusDto, SubscriptionDto } from '@tributary/shared';
import { action, intArg } from './command';
import type { CliContext, CliIO } from './context';
import { usage } from './errors';
import { formatFields, formatSize, formatTable, formatTime } from './output';
import { parseSites } from './commands-placement';

/**
 * cache, stage, subscribe, unsubscribe, subscriptions: this site's cache of objects read here,
 * staging ahead, and sites following a publisher's collection (docs/caching.md).
 */
export function registerCaching(program: Command, io: CliIO): void {
  registerCache(program, io);
  registerStage(program, io);
  registerSubscriptions(program, io);
}

const entryColumns = [
  { header: 'SIZE', value: (e: CacheEntryDto) => formatSize(e.size), align: 'right' as const },
  {
    header: 'STATE',
    value: (e: CacheEntryDto) => e.state + (e.state === 'good' && !e.current ? ' (old bytes)' : ''),
  },
  { header: 'PINNED', value: (e: CacheEntryDto) => (e.pinned ? 'yes' : 'no') },
  { header: 'READ', value: (e: CacheEntryDto) => formatTime(e.lastReadAt) },
  { header: 'PATH', value: (e: CacheEntryDto) => e.path },
];

function changed(verb: string, change: CacheChangeDto): string {
  const lines = [`${verb} ${change.changed} cached cop${change.changed === 1 ? 'y' : 'ies'}.`];
  for (const k of change.kept) lines.push(`kept ${k.path}: ${k.reason}`);
  return lines.join('\n') + '\n';
}

function progressLine(s: StageStatusDto): string {
  return (
    `${s.readyObjects} of ${s.objects} objects (${formatSize(s.readyBytes)} of ${formatSize(s.bytes)}) at ${s.site}` +
    (s.pendingObjects ? `, ${s.pendingObjects} on their way` : '') +
    (s.failedObjects ? `, ${s.failedObjects} failed (retried)` : '')
  );
}

function registerCache(program: Command, io: CliIO): void {
  const cache = program
    .command('cache')
    .description("this site's cache: objects read here are kept (cached copies) until evicted");
  cache
    .command('ls')
    .alias('list')
    .argument('[path]', 'only cached objects below this collection (default: all you may read)', '/')
    .option('-n, --limit <n>', 'show at most this many', intArg('--limit', 1, 1000), 100)
    .description('the cached copies at this site, most recently read first')
    .action(
      action(io, async (ctx: CliContext, options: { limit: number }, input: string) => {
        const service = await ctx.service();
        const path = await ctx.remote(input);
        const list = await service.client.cacheEntries({ path, limit: options.limit });
        ctx.result(list, () =>
          list.total === 0
            ? `No cached copies below ${path} at this site.\n`
            : formatTable(list.items, entryColumns) +
              `${list.total} cached cop${list.total === 1 ? 'y' : 'ies'}, ${formatSize(list.bytes)}` +
              (list.items.length < list.total ? ` (${list.items.length} shown)` : '') +
              '\n',
        );
      }),
    );
  cache
    .command('status')
    .description("this site's cache: limit, bytes used, hits, misses, evictions (administrators)")
    .action(
      action(io, async (ctx: CliContext) => {
        const service = await ctx.service();
        const s = await service.client.cacheStatus();
        ctx.result(s, () =>
          formatFields([
            ['site', s.site],
            ['cache', s.enabled ? `at most ${formatSize(s.limitBytes)}` : 'off (CACHE_MAX_BYTES is 0)'],
            [
              'used',
              `${formatSize(s.usedBytes)} in ${s.copies} copies (${formatSize(s.pinnedBytes)} pinned)`,
            ],
            ['hits', String(s.hits)],
            ['misses', String(s.misses)],
            ['faulted in', formatSize(s.bytesIn)],
            ['evictions', String(s.evictions)],
          ]),
        );
      }),
    );
  cache
    .command('pin')
    .argument('<path>', 'an object or a collection')
    .description("keep it in this site's cache (brought in first if need be) until unpinned")
    .action(
      action(io, async (ctx: CliContext, _o: object, input: string) => {
        const service = await ctx.service();
        const s = await service.client.pin(await ctx.remote(input));
        ctx.result(s, () => `Pinned ${s.path}: ${progressLine(s)}.\n`);
      }),
    );
  cache
    .command('unpin')
    .argument('<path>', 'an object or a collection')
    .description('let eviction take its cached copies again')
    .action(
      action(io, async (ctx: CliContext, _o: object, input: string) => {
        const service = await ctx.service();
        const change = await service.client.unpin(await ctx.remote(input));
        ctx.result(change, () => changed('Unpinned', change));
      }),
    );
  cache
    .command('evict')
    .argument('<path>', 'an object or a collection')
    .description('remove its cached copies from this site now (never a pinned, wanted or last good copy)')
    .action(
      action(io, async (ctx: CliContext, _o: object, input: string) => {
        const service = await ctx.service();
        const change = await service.client.evict(await ctx.remote(input));
        ctx.result(change, () => changed('Evicted', change));
      }),
    );
}

function registerStage(program: Command, io: CliIO): void {
  program
    .command('stage')
    .argument('<path>', 'an object or a collection (everything below it)')
    .option('-w, --wait', 'wait until every object is here, showing progress')
    .option(
      '--interval <ms>',
      'with --wait: time between progress checks',
      intArg('--interval', 100, 60_000),
      1000,
    )
    .description("bring data into this site's cache in the background, ahead of a job")
    .addHelpText(
      'after',
      '\nExamples:\n  trib stage /projects/coast/run7 --wait\n  trib stage run7 && trib cache ls run7',
    )
    .action(
      action(io, async (ctx: CliContext, options: { wait?: boolean; interval: number }, input: string) => {
        const service = await ctx.service();
        const path = await ctx.remote(input);
        let s = await service.client.stage(path);
        while (options.wait && !s.done) {
          ctx.note(progressLine(s));
          await new Promise((resolve) => setTimeout(resolve, options.interval));
          s = await service.client.stageStatus(path);
        }
        ctx.result(s, () => `${s.done ? 'Staged' : 'Staging'} ${s.path}: ${progressLine(s)}.\n`);
        if (!options.wait && !s.done) ctx.note('See how far it is with `trib stage <path> --wait`.');
      }),
    );
}

const subscriptionColumns = [
  { header: 'ID', value: (s: SubscriptionDto) => s.id },
  { header: 'SUBSCRIBER', value: (s: SubscriptionDto) => s.site },
  { header: 'WHERE', value: (s: SubscriptionDto) => s.condition ?? '-' },
  { header: 'OWNER', value: (s: SubscriptionDto) => s.owner ?? '-' },
  { header: 'SINCE', value: (s: SubscriptionDto) => formatTime(s.createdAt) },
  { header: 'PUBLISHER', value: (s: SubscriptionDto) => s.path },
];

function checkId(id: string): string {
  if (!/^[1-9]\d{0,18}$/.test(id))
    throw usage(`"${id}" is not a subscription id (a positive number; see \`trib subscriptions\`)`);
  return id;
}

function registerSubscriptions(program: Command, io: CliIO): void {
  program
    .command('subscribe')
    .argument('<path>', "the publisher's collection: everything below it, now and later")
    .option('--subscriber <site>', 'the subscribing site id (default: the site you use)')
    .option('-w, --where <condition>', 'only objects matching this metadata condition (as `trib query`)')
    .description('copy every object of a collection to a site as it is published (needs own on it)')
    .addHelpText(
      'after',
      '\nExamples:\n  trib subscribe /projects/survey/published\n  trib subscribe /projects/survey --subscriber tulane --where "filetype = fits"',
    )
    .action(
      action(io, async (ctx: CliContext, options: { subscriber?: string; where?: string }, input: string) => {
        const service = await ctx.service();
        const site = options.subscriber === undefined ? undefined : parseSites(options.subscriber);
        if (site && site.length !== 1) throw usage('--subscriber names one site');
        const created = await service.client.subscribe({
          path: await ctx.remote(input),
          ...(site ? { site: site[0] } : {}),
          ...(options.where !== undefined ? { condition: options.where } : {}),
        });
        ctx.result(created, () => formatTable([created], subscriptionColumns));
        ctx.note(
          `${created.site} now follows ${created.path}: its mover copies what is there and what comes.`,
        );
      }),
    );
  program
    .command('subscriptions')
    .argument('[path]', 'only subscriptions to this collection or below it', '/')
    .option('--subscriber <site>', "only this subscriber's (a site id)")
    .description('who subscribes to what')
    .action(
      action(io, async (ctx: CliContext, options: { subscriber?: string }, input: string) => {
        const service = await ctx.service();
        const path = await ctx.remote(input);
        const list = await service.client.subscriptions({
          path,
          ...(options.subscriber ? { site: options.subscriber } : {}),
        });
        ctx.result(list.items, () =>
          list.items.length === 0
            ? `No subscriptions to ${path} or below it.\n`
            : formatTable(list.items, subscriptionColumns),
        );
      }),
    );
  program
    .command('unsubscribe')
    .argument('<ids...>')
    .description('end subscriptions by id (see `trib subscriptions`); the copies made stay')
    .action(
      action(io, async (ctx: CliContext, _o: object, ids: string[]) => {
        const service = await ctx.service();
        for (const id of ids) checkId(id);
        for (const id of ids) await service.client.unsubscribe(id);
        ctx.result(
          { removed: ids },
          () => `Ended ${ids.length} subscription${ids.length === 1 ? '' : 's'}.\n`,
        );
      }),
    );
}
