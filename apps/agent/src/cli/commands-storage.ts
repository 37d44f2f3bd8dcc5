import type { Command } from 'commander';
import type { StorageMoveDto, StorageResourceDto } from '@tributary/shared';
import { action, intArg } from './command';
import type { CliContext, CliIO } from './context';
import { usage } from './errors';
import { formatSize, formatTable, formatTime } from './output';

/**
 * storage resources, storage move, storage moves: the site's storage resources and moving a
 * collection's copies between them (administrators; docs/storage.md).
 */
export function registerStorage(program: Command, io: CliIO): void {
  const storage = program
    .command('storage')
    .description(
      "the site's storage resources (local disks, S3 buckets) and moves between them (administrators)",
    );

  storage
    .command('resources')
    .alias('ls')
    .description("this site's storage resources: kind, where, default, health, copies held")
    .action(
      action(io, async (ctx: CliContext) => {
        const service = await ctx.service();
        const list = await service.client.storageResources();
        ctx.result(list, () => formatTable(list.items, resourceColumns));
      }),
    );

  storage
    .command('move')
    .argument('<path>', 'a collection: every copy this site holds below it moves')
    .argument('<resource>', 'the resource they go to (see `trib storage resources`)')
    .option('-w, --wait', 'wait until every copy is there, showing progress')
    .option(
      '--interval <ms>',
      'with --wait: time between progress checks',
      intArg('--interval', 100, 60_000),
      1000,
    )
    .description(
      "move this site's copies under a collection to another storage resource, verified by checksum",
    )
    .addHelpText('after', '\nExamples:\n  trib storage move /projects/survey/2019 archive --wait')
    .action(
      action(
        io,
        async (
          ctx: CliContext,
          options: { wait?: boolean; interval: number },
          input: string,
          resource: string,
        ) => {
          const service = await ctx.service();
          let move = await service.client.moveToResource(await ctx.remote(input), resource);
          while (options.wait && move.status === 'running') {
            ctx.note(progressLine(move));
            await new Promise((r) => setTimeout(r, options.interval));
            move = await service.client.storageMove(move.id);
          }
          ctx.result(
            move,
            () => `Move ${move.id} of ${move.path} to ${move.resource}: ${progressLine(move)}.\n`,
          );
          if (move.status === 'failed')
            throw new Error(`the move failed: ${move.error ?? 'no reason given'}`);
          if (!options.wait) ctx.note(`Follow it with \`trib storage moves ${move.id}\`.`);
        },
      ),
    );

  storage
    .command('moves')
    .argument('[id]', 'one move')
    .description('the latest moves between storage resources and their progress')
    .action(
      action(io, async (ctx: CliContext, _options: object, id?: string) => {
        const service = await ctx.service();
        if (id !== undefined) {
          if (!/^[1-9]\d{0,18}$/.test(id))
            throw usage(`"${id}" is not a move id (see \`trib storage moves\`)`);
          const move = await service.client.storageMove(id);
          ctx.result(move, () => formatTable([move], moveColumns));
          return;
        }
        const list = await service.client.storageMoves();
        ctx.result(list, () =>
          list.items.length === 0
            ? 'No moves between storage resources yet.\n'
            : formatTable(list.items, moveColumns),
        );
      }),
    );
}

function progressLine(m: StorageMoveDto): string {
  return (
    `${m.status}, ${m.objectsMoved} of ${m.objectsTotal} objects (${formatSize(m.bytesMoved)} of ${formatSize(m.bytesTotal)})` +
    (m.error ? `; ${m.status === 'failed' ? 'error' : 'last error'}: ${m.error}` : '')
  );
}

const resourceColumns = [
  { header: 'NAME', value: (r: StorageResourceDto) => r.name + (r.default ? ' (default)' : '') },
  { header: 'KIND', value: (r: StorageResourceDto) => r.kind },
  { header: 'STATUS', value: (r: StorageResourceDto) => (r.configured ? r.status : 'not configured') },
  { header: 'OBJECTS', value: (r: StorageResourceDto) => String(r.objects), align: 'right' as const },
  { header: 'SIZE', value: (r: StorageResourceDto) => formatSize(r.bytes), align: 'right' as const },
  { header: 'WHERE', value: (r: StorageResourceDto) => r.location },
  { header: 'ERROR', value: (r: StorageResourceDto) => r.error ?? '' },
];

const moveColumns = [
  { header: 'ID', value: (m: StorageMoveDto) => m.id },
  { header: 'STATUS', value: (m: StorageMoveDto) => m.status },
  {
    header: 'DONE',
    value: (m: StorageMoveDto) => `${m.objectsMoved}/${m.objectsTotal}`,
    align: 'right' as const,
  },
  { header: 'SIZE', value: (m: StorageMoveDto) => formatSize(m.bytesTotal), align: 'right' as const },
  { header: 'TO', value: (m: StorageMoveDto) => m.resource },
  { header: 'STARTED', value: (m: StorageMoveDto) => formatTime(m.createdAt) },
  { header: 'PATH', value: (m: StorageMoveDto) => m.path },
  { header: 'ERROR', value: (m: StorageMoveDto) => m.error ?? '' },
];
