import type { Command } from 'commander';
import {
  CONFLICT_KINDS,
  CONFLICT_STATUS_FILTERS,
  METADATA_VALUE_TYPES,
  TOKEN_SCOPES,
  type ConflictDecisionRequest,
  type ConflictDto,
  type MetadataHitDto,
  type MetadataValueType,
  type TokenScope,
  type TripleDto,
} from '@tributary/shared';
import { action, choiceArg, intArg } from './command';
import type { CliContext, CliIO } from './context';
import { CliError, ExitCode, usage } from './errors';
import { formatDuration, formatFields, formatTable, formatTime, sanitize } from './output';

/** meta, query, group, token, conflicts: the catalog beyond the namespace. */
export function registerCatalog(program: Command, io: CliIO): void {
  registerMeta(program, io);
  registerQuery(program, io);
  registerGroup(program, io);
  registerToken(program, io);
  registerConflicts(program, io);
}

const tripleColumns = [
  { header: 'ID', value: (t: TripleDto) => t.id },
  { header: 'ATTRIBUTE', value: (t: TripleDto) => t.attribute },
  { header: 'VALUE', value: (t: TripleDto) => String(t.value) },
  { header: 'UNIT', value: (t: TripleDto) => t.unit ?? '' },
  { header: 'TYPE', value: (t: TripleDto) => t.type },
];

function registerMeta(program: Command, io: CliIO): void {
  const meta = program
    .command('meta')
    .description('metadata triples (attribute, value, unit) on objects and collections');
  meta
    .command('add')
    .argument('<path>')
    .argument('<attribute>')
    .argument('<value>')
    .argument('[unit]')
    .option(
      '-t, --type <type>',
      'text, number or time (default: text)',
      choiceArg('--type', METADATA_VALUE_TYPES),
    )
    .description('add a triple, e.g. `trib meta add run1/a.fits resolution 0.5 arcsec -t number`')
    .action(
      action(
        io,
        async (
          ctx: CliContext,
          options: { type?: MetadataValueType },
          input: string,
          attribute: string,
          value: string,
          unit?: string,
        ) => {
          const service = await ctx.service();
          const path = await ctx.remote(input);
          const added = await service.client.addMetadata(path, [
            { attribute, value, type: options.type, unit: unit ?? null },
          ]);
          ctx.result(added, () => formatTable(added, tripleColumns));
        },
      ),
    );
  meta
    .command('ls')
    .alias('list')
    .argument('<path>')
    .description('the triples of one object or collection')
    .action(
      action(io, async (ctx: CliContext, _o: object, input: string) => {
        const service = await ctx.service();
        const result = await service.client.metadata(await ctx.remote(input));
        ctx.result(result, () =>
          result.triples.length === 0
            ? `No metadata on ${sanitize(result.path)}.\n`
            : formatTable(result.triples, tripleColumns),
        );
      }),
    );
  meta
    .command('rm')
    .argument('<path>')
    .argument('<attribute>', 'the attribute whose triples go')
    .argument('[value]', 'only the triples with this value')
    .option('--id <id>', 'remove exactly this triple (see `trib meta ls`)')
    .description('remove triples by attribute (and value), or one by id')
    .action(
      action(
        io,
        async (
          ctx: CliContext,
          options: { id?: string },
          input: string,
          attribute: string,
          value?: string,
        ) => {
          const service = await ctx.service();
          const current = await service.client.metadata(await ctx.remote(input));
          const doomed = current.triples.filter((t) =>
            options.id
              ? t.id === options.id
              : t.attribute === attribute && (value === undefined || String(t.value) === value),
          );
          if (doomed.length === 0) {
            throw new CliError(
              `no triple ${options.id ? `with id ${options.id}` : `${attribute}${value !== undefined ? `=${value}` : ''}`} on ${current.path}`,
              ExitCode.NotFound,
              `see \`trib meta ls ${input}\``,
              'NOT_FOUND',
            );
          }
          for (const t of doomed) await service.client.removeTriple(t.id);
          ctx.result(
            { removed: doomed },
            () => `Removed ${doomed.length} triple${doomed.length === 1 ? '' : 's'}.\n`,
          );
        },
      ),
    );
}

function registerQuery(program: Command, io: CliIO): void {
  program
    .command('query')
    .argument('<condition>', 'the text form, e.g. "filetype = fits and size > 1e6"')
    .option('--scope <path>', 'only below this collection (default: everything)')
    .option('--collections', 'find collections instead of objects')
    .option('-n, --limit <n>', 'most results (default 100; 0 only counts)', intArg('--limit', 0, 100_000))
    .option('--triples', "show each result's triples (with --json)")
    .option('--exact', 'count every match exactly (a broad result is otherwise estimated: "about N")')
    .description('find objects by metadata (docs/metadata.md has the grammar)')
    .addHelpText(
      'after',
      '\nExamples:\n  trib query "filetype = fits and resolution < 1"\n  trib query "project = coast" --scope /projects --json',
    )
    .action(
      action(
        io,
        async (
          ctx: CliContext,
          options: {
            scope?: string;
            collections?: boolean;
            limit?: number;
            triples?: boolean;
            exact?: boolean;
          },
          q: string,
        ) => {
          const service = await ctx.service();
          const want = options.limit ?? 100;
          const items: MetadataHitDto[] = [];
          let cursor: string | undefined;
          let total: number | undefined;
          let estimate = false;
          do {
            const page = await service.client.queryMetadata({
              q,
              scope: options.scope ? await ctx.remote(options.scope) : '/',
              kind: options.collections ? 'collection' : 'object',
              limit: Math.min(1000, want - items.length),
              cursor,
              withTriples: options.triples === true,
              count: total === undefined,
              exact: options.exact === true,
            });
            if (total === undefined && page.total !== undefined) {
              total = page.total;
              estimate = page.totalIsEstimate === true;
            }
            items.push(...page.items);
            cursor = page.nextCursor;
          } while (cursor && items.length < want);
          ctx.result(
            { total: total ?? items.length, totalIsEstimate: estimate, items },
            () =>
              items.map((i) => `${sanitize(i.path)}${i.kind === 'collection' ? '/' : ''}\n`).join('') +
              (ctx.options.quiet
                ? ''
                : items.length < (total ?? 0)
                  ? `(${items.length} of ${estimate ? `about ${total!.toLocaleString('en-US')}` : total} shown: raise --limit${estimate ? ', --exact for the exact count' : ''})\n`
                  : ''),
          );
        },
      ),
    );
}

function registerGroup(program: Command, io: CliIO): void {
  const group = program.command('group').description("project groups (the seed's pchangeuser)");
  group
    .command('list', { isDefault: true })
    .alias('ls')
    .description('your groups; * marks the active one')
    .action(
      action(io, async (ctx: CliContext) => {
        const service = await ctx.service();
        const me = await service.client.me();
        const rows = me.groups.map((name) => ({ name, active: name === me.activeGroup }));
        ctx.result(
          { active: me.activeGroup, groups: me.groups },
          () =>
            rows.map((r) => `${r.active ? '*' : ' '} ${r.name}\n`).join('') ||
            'You are in no project group.\n',
        );
      }),
    );
  group
    .command('switch')
    .argument('<name>')
    .description('make a group active: what you create from now on belongs to it')
    .action(
      action(io, async (ctx: CliContext, _o: object, name: string) => {
        const service = await ctx.service();
        const me = await service.client.switchGroup(name);
        ctx.result({ active: me.activeGroup }, () => `Active group: ${me.activeGroup}.\n`);
      }),
    );
}

function registerToken(program: Command, io: CliIO): void {
  const token = program.command('token').description('API tokens for scripts and other machines');
  token
    .command('create')
    .argument('<name>')
    .option('-s, --scope <scope>', 'read, write or admin (default: read)', choiceArg('--scope', TOKEN_SCOPES))
    .option('-c, --collection <path>', 'confine it to this collection')
    .option('-d, --days <n>', 'valid for this many days (default 90, at most 365)', intArg('--days', 1, 365))
    .description('create a token; its secret is printed once, on standard output')
    .action(
      action(
        io,
        async (
          ctx: CliContext,
          options: { scope?: TokenScope; collection?: string; days?: number },
          name: string,
        ) => {
          const service = await ctx.service();
          const created = await service.client.createToken({
            name,
            scope: options.scope ?? 'read',
            collection: options.collection ? await ctx.remote(options.collection) : undefined,
            expiresAt: options.days
              ? new Date(Date.now() + options.days * 86_400_000).toISOString()
              : undefined,
          });
          ctx.result(created, () => `${created.secret}\n`);
          ctx.note(
            `Token "${created.name}" (id ${created.id}, ${created.scope}) expires ${formatTime(created.expiresAt)}. The secret above is shown only now.`,
          );
        },
      ),
    );
  token
    .command('list', { isDefault: true })
    .alias('ls')
    .description('your tokens (never their secrets)')
    .action(
      action(io, async (ctx: CliContext) => {
        const service = await ctx.service();
        const tokens = await service.client.listTokens();
        ctx.result(tokens, () =>
          formatTable(tokens, [
            { header: 'ID', value: (t) => t.id },
            { header: 'NAME', value: (t) => t.name },
            { header: 'SCOPE', value: (t) => t.scope },
            { header: 'COLLECTION', value: (t) => t.collection ?? '-' },
            { header: 'EXPIRES', value: (t) => formatTime(t.expiresAt) },
            { header: 'LAST USED', value: (t) => formatTime(t.lastUsedAt) },
            {
              header: 'STATE',
              value: (t) =>
                t.revokedAt
                  ? 'revoked'
                  : t.expiresAt && t.expiresAt < new Date().toISOString()
                    ? 'expired'
                    : 'active',
            },
          ]),
        );
      }),
    );
  token
    .command('revoke')
    .argument('<ids...>')
    .description('revoke tokens by id (see `trib token list`)')
    .action(
      action(io, async (ctx: CliContext, _o: object, ids: string[]) => {
        const service = await ctx.service();
        for (const id of ids) {
          if (!/^[1-9]\d{0,18}$/.test(id))
            throw usage(`"${id}" is not a token id (a positive number; see \`trib token list\`)`);
          await service.client.revokeToken(id);
        }
        ctx.result({ revoked: ids }, () => `Revoked ${ids.length} token${ids.length === 1 ? '' : 's'}.\n`);
      }),
    );
}

function registerConflicts(program: Command, io: CliIO): void {
  const conflicts = program
    .command('conflicts')
    .description('conflicts between sites that need a person (docs/conflicts.md)');
  conflicts
    .command('list', { isDefault: true })
    .alias('ls')
    .option(
      '--status <status>',
      'open, decided, final, closed or all (default open)',
      choiceArg('--status', CONFLICT_STATUS_FILTERS),
    )
    .option('--kind <kind>', 'update, delete or same-name', choiceArg('--kind', CONFLICT_KINDS))
    .option('--path <path>', 'only at or below this path')
    .option('--all-users', 'not only the ones about your records or changes')
    .description('conflicts about your records (all of them with --all-users)')
    .action(
      action(
        io,
        async (
          ctx: CliContext,
          options: {
            status?: (typeof CONFLICT_STATUS_FILTERS)[number];
            kind?: (typeof CONFLICT_KINDS)[number];
            path?: string;
            allUsers?: boolean;
          },
        ) => {
          const service = await ctx.service();
          const items: ConflictDto[] = [];
          let cursor: string | undefined;
          do {
            const page = await service.listConflicts({
              status: options.status ?? 'open',
              kind: options.kind,
              path: options.path ? await ctx.remote(options.path) : undefined,
              involving: options.allUsers ? undefined : 'me',
              limit: 500,
              cursor,
            });
            items.push(...page.items);
            cursor = page.nextCursor;
          } while (cursor);
          ctx.result(items, () =>
            items.length === 0
              ? 'No conflicts need you.\n'
              : formatTable(items, [
                  { header: 'ID', value: (c) => c.id },
                  { header: 'KIND', value: (c) => c.kind },
                  { header: 'STATUS', value: (c) => c.status },
                  {
                    header: 'DEADLINE',
                    value: (c) =>
                      c.status === 'open' ? `in ${formatDuration(Date.parse(c.deadline) - Date.now())}` : '-',
                  },
                  {
                    header: 'SITES',
                    value: (c) => c.versions.map((v) => v.site + (v.provisionalWinner ? '*' : '')).join(','),
                  },
                  { header: 'WHAT', value: (c) => c.path ?? `${c.table} ${c.recordId}` },
                ]),
          );
        },
      ),
    );
  conflicts
    .command('show')
    .argument('<id>')
    .description('one conflict with its versions side by side')
    .action(
      action(io, async (ctx: CliContext, _o: object, id: string) => {
        const service = await ctx.service();
        const c = await service.conflict(checkConflictId(id));
        ctx.result(
          c,
          () =>
            formatFields([
              ['id', c.id],
              ['kind', c.kind],
              ['status', c.status],
              ['what', c.path ?? `${c.table} ${c.recordId}`],
              ['opened', formatTime(c.openedAt)],
              ['deadline', formatTime(c.deadline)],
              ['differs in', c.changedFields.join(', ')],
              ['you decide', c.canDecide ? 'yes' : 'no'],
            ]) +
            c.versions
              .map(
                (v) =>
                  `\nversion ${v.index}: ${v.site} at ${formatTime(v.at)} by ${v.by ?? '?'}${v.provisionalWinner ? ' (provisional winner)' : ''}${v.deleted ? ' (deleted)' : ''}\n` +
                  c.changedFields
                    .map((f) => `  ${f}: ${sanitize(JSON.stringify(v.values?.[f] ?? null))}\n`)
                    .join(''),
              )
              .join(''),
        );
      }),
    );
  conflicts
    .command('decide')
    .argument('<id>')
    .argument(
      '<action>',
      'keep (the provisional winner stands), choose <version>, or rename <name> (same-name)',
    )
    .argument('[value]', 'the version index for choose, the new name for rename')
    .description('decide a conflict; the decision replicates to every site')
    .addHelpText(
      'after',
      '\nExamples:\n  trib conflicts decide 3f2a... keep\n  trib conflicts decide 3f2a... choose 1\n  trib conflicts decide 3f2a... rename results_lsu.csv',
    )
    .action(
      action(io, async (ctx: CliContext, _o: object, id: string, decision: string, value?: string) => {
        const service = await ctx.service();
        let body: ConflictDecisionRequest;
        if (decision === 'keep') body = { action: 'keep' };
        else if (decision === 'choose') {
          if (value === undefined || !/^\d{1,4}$/.test(value))
            throw usage(
              'choose needs the version index: trib conflicts decide <id> choose <version> (see `trib conflicts show <id>`)',
            );
          body = { action: 'choose', version: Number(value) };
        } else if (decision === 'rename') {
          if (!value) throw usage('rename needs the new name: trib conflicts decide <id> rename <name>');
          body = { action: 'rename', name: value };
        } else throw usage(`unknown decision "${decision}": use keep, choose <version> or rename <name>`);
        const result = await service.decideConflict(checkConflictId(id), body);
        ctx.result(result, () => `Decided ${id}: ${decision}${value !== undefined ? ` ${value}` : ''}.\n`);
      }),
    );
}

function checkConflictId(id: string): string {
  if (!/^[0-9a-f]{32}$/.test(id))
    throw usage(`"${id}" is not a conflict id (32 hexadecimal digits; see \`trib conflicts list\`)`);
  return id;
}
