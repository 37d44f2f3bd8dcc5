import type { Command } from 'commander';
import type { UsageDto } from '@tributary/shared';
import { action, intArg } from './command';
import type { CliContext, CliIO } from './context';
import { formatSize, formatTable } from './output';

/** du: objects and bytes below a collection, per child collection and per site (docs/usage.md). */
export function registerUsage(program: Command, io: CliIO): void {
  program
    .command('du')
    .alias('usage')
    .argument('[path]', 'a collection (default: the working collection)')
    .option(
      '-n, --children <n>',
      'child collections to list, largest first (0 to 500)',
      intArg('--children', 0, 500),
      20,
    )
    .description(
      'storage used below a collection: objects and bytes, per child collection and per site holding copies',
    )
    .addHelpText('after', '\nExamples:\n  trib du /projects/survey\n  trib du -n 0 --json /projects')
    .action(
      action(io, async (ctx: CliContext, options: { children: number }, input?: string) => {
        const service = await ctx.service();
        const path = await ctx.remote(input ?? '.');
        const usage = await service.client.usage({ path, children: options.children });
        ctx.result(usage, () => describe(usage));
      }),
    );
}

function describe(u: UsageDto): string {
  const lines = [
    `${u.path}: ${count(u.objects)}, ${formatSize(u.bytes)} (directly in it: ${count(u.here.objects)}, ${formatSize(u.here.bytes)})`,
  ];
  if (u.children.length > 0) {
    lines.push(
      '',
      formatTable(u.children, [
        { header: 'SIZE', value: (c) => formatSize(c.bytes), align: 'right' as const },
        { header: 'OBJECTS', value: (c) => String(c.objects), align: 'right' as const },
        { header: 'COLLECTION', value: (c) => c.path },
      ]).trimEnd(),
    );
    if (u.childrenTruncated) lines.push('(more child collections: --children N lists more)');
  }
  if (u.sites.length > 0) {
    lines.push(
      '',
      formatTable(u.sites, [
        { header: 'SITE', value: (s) => s.site },
        { header: 'COPIES', value: (s) => String(s.copies), align: 'right' as const },
        { header: 'SIZE', value: (s) => formatSize(s.bytes), align: 'right' as const },
        { header: 'CACHED', value: (s) => formatSize(s.cachedBytes), align: 'right' as const },
      ]).trimEnd(),
    );
  }
  return `${lines.join('\n')}\n`;
}

const count = (n: number): string => `${n} object${n === 1 ? '' : 's'}`;
