import { InvalidArgumentError, type Command } from 'commander';
import {
  MAX_ERASURE_K,
  MAX_ERASURE_M,
  MAX_RULE_COPIES,
  type CopyDto,
  type PlacementRuleDto,
  type VerifyReportDto,
} from '@tributary/shared';
import { action, intArg } from './command';
import type { CliContext, CliIO } from './context';
import { CliError, ExitCode, usage } from './errors';
import { formatFields, formatSize, formatTable, formatTime } from './output';

/** rule, copies, verify: where an object's copies live (docs/placement.md). */
export function registerPlacement(program: Command, io: CliIO): void {
  registerRule(program, io);
  registerCopies(program, io);
  registerVerify(program, io);
}

const RELATIVE = /^(\d{1,6})([mhdw])$/;
const UNIT_MS: Record<string, number> = { m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/**
 * `--expires`: an ISO 8601 time (`2027-01-31`, `2027-01-31T12:00:00Z`; a date alone is midnight
 * UTC) or a time from now (`90m`, `12h`, `30d`, `8w`). The site refuses a time in the past.
 */
export function parseExpiry(value: string, now = Date.now()): string {
  const text = value.trim();
  const relative = RELATIVE.exec(text);
  if (relative) return new Date(now + Number(relative[1]) * UNIT_MS[relative[2]!]!).toISOString();
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : text;
  const at = /^\d{4}-\d{2}-\d{2}T/.test(iso) ? Date.parse(iso) : NaN;
  if (Number.isNaN(at)) {
    throw new InvalidArgumentError(
      '--expires must be a date or time (2027-01-31, 2027-01-31T12:00:00Z) or a time from now (12h, 30d, 8w)',
    );
  }
  return new Date(at).toISOString();
}

/** `--sites a,b`: site ids, comma-separated. */
export function parseSites(value: string): string[] {
  const sites = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0);
  if (sites.length === 0) throw new InvalidArgumentError('--sites must name at least one site (a,b)');
  return sites;
}

function checkRuleId(id: string): string {
  if (!/^[1-9]\d{0,18}$/.test(id))
    throw usage(`"${id}" is not a rule id (a positive number; see \`trib rule ls <path>\`)`);
  return id;
}

const ruleColumns = [
  { header: 'ID', value: (r: PlacementRuleDto) => r.id },
  {
    header: 'COPIES',
    // An erasure rule keeps k+m shards instead (docs/erasure.md).
    value: (r: PlacementRuleDto) => (r.erasure ? `${r.erasure.k}+${r.erasure.m} shards` : String(r.copies)),
    align: 'right' as const,
  },
  { header: 'SITES', value: (r: PlacementRuleDto) => r.sites?.join(',') ?? 'any' },
  { header: 'WHERE', value: (r: PlacementRuleDto) => r.condition ?? '-' },
  {
    header: 'EXPIRES',
    value: (r: PlacementRuleDto) =>
      r.expiresAt
        ? formatTime(r.expiresAt) + (Date.parse(r.expiresAt) <= Date.now() ? ' (expired)' : '')
        : '-',
  },
  { header: 'OWNER', value: (r: PlacementRuleDto) => r.owner ?? '-' },
  { header: 'ON', value: (r: PlacementRuleDto) => r.inheritedFrom ?? 'here' },
];

function registerRule(program: Command, io: CliIO): void {
  const rule = program
    .command('rule')
    .description('placement rules: how many copies of a collection to keep, and at which sites');
  rule
    .command('add')
    .argument('<path>', 'the collection (the rule covers everything below it, now and later)')
    .option('-c, --copies <n>', 'how many whole copies', intArg('--copies', 1, MAX_RULE_COPIES))
    .option(
      '--erasure <k+m>',
      'keep the objects as k data + m parity shards instead of copies, each at another site (docs/erasure.md)',
      parseErasure,
    )
    .option(
      '--by <domain>',
      'with --erasure: each shard at another site (default) or storage resource',
      parseDomain,
    )
    .option('-s, --sites <a,b>', 'the sites to choose from (default: any site)', parseSites)
    .option('-w, --where <condition>', 'only objects matching this metadata condition (as `trib query`)')
    .option(
      '-e, --expires <time>',
      'the rule stops counting then: 2027-01-31, or 30d, 12h, 8w from now',
      (v) => parseExpiry(v),
    )
    .description('keep copies of a collection at several sites (needs own on it)')
    .addHelpText(
      'after',
      '\nExamples:\n  trib rule add /projects/coast --copies 2\n  trib rule add raw --copies 2 --sites lsu,tulane --where "filetype = fits" --expires 90d\n  trib rule add /projects/archive --erasure 4+2',
    )
    .action(
      action(
        io,
        async (
          ctx: CliContext,
          options: {
            copies?: number;
            erasure?: { k: number; m: number };
            by?: 'site' | 'resource';
            sites?: string[];
            where?: string;
            expires?: string;
          },
          input: string,
        ) => {
          if ((options.copies === undefined) === (options.erasure === undefined))
            throw usage('give either --copies N or --erasure k+m');
          if (options.by && !options.erasure) throw usage('--by goes with --erasure');
          const service = await ctx.service();
          const created = await service.client.addPlacementRule({
            path: await ctx.remote(input),
            ...(options.copies !== undefined ? { copies: options.copies } : {}),
            ...(options.erasure
              ? { erasure: { ...options.erasure, ...(options.by ? { domain: options.by } : {}) } }
              : {}),
            ...(options.sites ? { sites: options.sites } : {}),
            ...(options.where !== undefined ? { condition: options.where } : {}),
            ...(options.expires ? { expiresAt: options.expires } : {}),
          });
          ctx.result(created, () => formatTable([created], ruleColumns));
          ctx.note(
            `Rule ${created.id} on ${created.path}: the sites' movers copy what it wants (see \`trib copies <path>\`).`,
          );
        },
      ),
    );
  rule
    .command('ls')
    .alias('list')
    .argument('<path>', 'a collection')
    .description('the rules on a collection and those it inherits from the collections above it')
    .action(
      action(io, async (ctx: CliContext, _o: object, input: string) => {
        const service = await ctx.service();
        const path = await ctx.remote(input);
        const rules: PlacementRuleDto[] = [];
        let cursor: string | undefined;
        do {
          const page = await service.client.placementRules({ path, limit: 1000, cursor });
          rules.push(...page.items);
          cursor = page.nextCursor;
        } while (cursor);
        ctx.result(rules, () =>
          rules.length === 0
            ? `No placement rules cover ${path}: its objects keep the copies they have.\n`
            : formatTable(rules, ruleColumns),
        );
      }),
    );
  rule
    .command('rm')
    .alias('remove')
    .argument('<ids...>')
    .description('remove rules by id (see `trib rule ls`); copies no longer wanted are trimmed')
    .action(
      action(io, async (ctx: CliContext, _o: object, ids: string[]) => {
        const service = await ctx.service();
        for (const id of ids) checkRuleId(id);
        for (const id of ids) await service.client.removePlacementRule(id);
        ctx.result({ removed: ids }, () => `Removed ${ids.length} rule${ids.length === 1 ? '' : 's'}.\n`);
      }),
    );
}

const copyColumns = [
  { header: 'SITE', value: (c: CopyDto) => c.site },
  {
    header: 'STATE',
    value: (c: CopyDto) => c.state + (c.state === 'good' && !c.current ? ' (old bytes)' : ''),
  },
  { header: 'WANTED', value: (c: CopyDto) => (c.wanted ? 'yes' : 'no') },
  { header: 'CACHED', value: (c: CopyDto) => (c.cached ? (c.pinned ? 'pinned' : 'yes') : 'no') },
  { header: 'VERIFIED', value: (c: CopyDto) => formatTime(c.verifiedAt) },
  { header: 'ERROR', value: (c: CopyDto) => c.error ?? '' },
];

function registerCopies(program: Command, io: CliIO): void {
  program
    .command('copies')
    .argument('<path>', 'an object')
    .description("an object's copies: at which sites, in which state, and which the rules want")
    .action(
      action(io, async (ctx: CliContext, _o: object, input: string) => {
        const service = await ctx.service();
        const copies = await service.client.objectCopies(await ctx.remote(input));
        ctx.result(
          copies,
          () =>
            formatFields([
              ['path', copies.path],
              ['size', formatSize(copies.size)],
              ['checksum', copies.checksum],
              [
                'wanted at',
                copies.wantedSites.length > 0 ? copies.wantedSites.join(', ') : 'no rule covers it',
              ],
              ['rules', copies.rules.length > 0 ? copies.rules.join(', ') : '-'],
            ]) +
            '\n' +
            formatTable(copies.copies, copyColumns),
        );
      }),
    );
}

const LOCAL_FOUND: Record<VerifyReportDto['local'], string> = {
  ok: 'this site re-hashed its copy: it matches the checksum',
  missing: "this site's copy is missing",
  mismatch: "this site's copy differs from the checksum",
  none: 'this site holds no copy',
};

function registerVerify(program: Command, io: CliIO): void {
  program
    .command('verify')
    .argument('<path>', 'an object')
    .description("re-hash this site's copy of an object now and show every copy's state")
    .addHelpText('after', "\nExit code 7 when this site's copy is missing or differs (the mover repairs it).")
    .action(
      action(io, async (ctx: CliContext, _o: object, input: string) => {
        const service = await ctx.service();
        const report = await service.client.verifyObject(await ctx.remote(input));
        ctx.result(
          report,
          () =>
            formatFields([
              ['path', report.path],
              ['here', LOCAL_FOUND[report.local]],
            ]) +
            '\n' +
            formatTable(report.copies, copyColumns),
        );
        if (report.local === 'missing' || report.local === 'mismatch') {
          throw new CliError(
            `${report.path}: ${LOCAL_FOUND[report.local]}`,
            ExitCode.Integrity,
            'the copy is marked suspect; the mover copies it again from a good copy',
            'CHECKSUM_MISMATCH',
          );
        }
      }),
    );
}

/** `--erasure 4+2`: k data and m parity shards. */
function parseErasure(value: string): { k: number; m: number } {
  const match = /^\s*(\d{1,2})\s*\+\s*(\d{1,2})\s*$/.exec(value);
  const k = Number(match?.[1]);
  const m = Number(match?.[2]);
  if (!match || k < 1 || k > MAX_ERASURE_K || m < 1 || m > MAX_ERASURE_M)
    throw new InvalidArgumentError(
      `--erasure must be k+m, k from 1 to ${MAX_ERASURE_K} and m from 1 to ${MAX_ERASURE_M}, like 4+2`,
    );
  return { k, m };
}

function parseDomain(value: string): 'site' | 'resource' {
  if (value !== 'site' && value !== 'resource')
    throw new InvalidArgumentError('--by must be site or resource');
  return value;
}
