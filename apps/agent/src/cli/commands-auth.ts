import os from 'node:os';
import type { Command } from 'commander';
import type { UserDto } from '@tributary/shared';
import { normalizeSiteUrl, updateConfig, type SiteProfile } from '../config/config';
import { action } from './command';
import type { CliContext, CliIO } from './context';
import { CliError, ExitCode, usage } from './errors';
import { formatFields, formatTable } from './output';
import { resolveRemote } from './paths';
import { connect } from './service';

interface LoginOptions {
  site?: string;
  token?: string;
  name?: string;
}

/** login, logout, whoami, site, cd, pwd: choosing the site and who you are there. */
export function registerAuth(program: Command, io: CliIO): void {
  program
    .command('login')
    .description('log in to a site with an API token (create one in the portal under Tokens)')
    .option('--site <url>', 'the site URL, e.g. http://127.0.0.1:8080')
    .option(
      '--token <token>',
      'the API token; "-" reads it from standard input (keeps it out of shell history)',
    )
    .option('--name <name>', 'a short name for the site (default: the site id it reports)')
    .addHelpText(
      'after',
      '\nExamples:\n  trib login --site http://127.0.0.1:8080 --token - < token.txt\n  TRIBUTARY_TOKEN=trib_... trib login --site https://data.example.org --name lsu',
    )
    .action(action(io, login));

  program
    .command('logout')
    .description(
      'forget the token of the current site (revoke it with `trib token revoke` first if you want it dead)',
    )
    .action(
      action(io, async (ctx: CliContext) => {
        const site = await ctx.site();
        await updateConfig((config) => {
          const profile = config.sites[site.name];
          if (profile) delete profile.token;
        }, ctx.env);
        ctx.result({ site: site.name, loggedOut: true }, () => `Logged out of ${site.name}.\n`);
      }),
    );

  program
    .command('whoami')
    .description('the account behind the token, its groups and the site')
    .action(
      action(io, async (ctx: CliContext) => {
        const service = await ctx.service();
        const me = await service.client.me();
        ctx.result({ site: service.site.name, url: service.site.url, user: me }, () =>
          formatFields([
            ['user', me.username],
            ['name', me.displayName],
            ['site', `${service.site.name} (${service.site.url})`],
            ['group', me.activeGroup],
            ['groups', me.groups.join(', ')],
            ['home', me.homePath],
            ['admin', me.isAdmin ? 'yes' : 'no'],
          ]),
        );
      }),
    );

  const site = program
    .command('site')
    .description('the sites you have logged in to, and which one commands use');
  site
    .command('show', { isDefault: true })
    .description('the site commands talk to now')
    .action(
      action(io, async (ctx: CliContext) => {
        const active = await ctx.site();
        const data = {
          name: active.name,
          url: active.url,
          source: active.source,
          loggedIn: Boolean(active.token),
          user: active.profile?.username ?? null,
          cwd: active.profile?.cwd ?? active.profile?.home ?? '/',
        };
        ctx.result(data, () =>
          formatFields([
            ['site', data.name],
            ['url', data.url],
            ['user', data.user],
            ['logged in', data.loggedIn ? 'yes' : 'no'],
            ['from', data.source === 'env' ? 'TRIBUTARY_SITE/TRIBUTARY_TOKEN' : 'config.json'],
            ['cwd', data.cwd],
          ]),
        );
      }),
    );
  site
    .command('list')
    .alias('ls')
    .description('every saved site')
    .action(
      action(io, async (ctx: CliContext) => {
        const config = await ctx.config();
        const rows = Object.entries(config.sites).map(([name, p]) => ({
          name,
          url: p.url,
          user: p.username ?? null,
          loggedIn: Boolean(p.token),
          current: name === config.current,
        }));
        ctx.result(rows, () =>
          rows.length === 0
            ? 'No sites yet: trib login --site <url> --token <token>\n'
            : formatTable(rows, [
                { header: '', value: (r) => (r.current ? '*' : '') },
                { header: 'NAME', value: (r) => r.name },
                { header: 'URL', value: (r) => r.url },
                { header: 'USER', value: (r) => r.user ?? '-' },
                { header: 'TOKEN', value: (r) => (r.loggedIn ? 'yes' : 'no') },
              ]),
        );
      }),
    );
  site
    .command('use')
    .argument('<name>', 'a saved site name (see `trib site list`)')
    .description('make a saved site the current one (the seed pcommands\' "choose the site")')
    .action(
      action(io, async (ctx: CliContext, _o: object, name: string) => {
        const config = await ctx.config();
        if (!config.sites[name]) {
          throw new CliError(
            `no saved site named "${name}"`,
            ExitCode.NotFound,
            'see `trib site list`, or `trib login --site <url> --name ' + name + '`',
            'NOT_FOUND',
          );
        }
        await updateConfig((c) => (c.current = name), ctx.env);
        ctx.result({ current: name }, () => `Now using ${name} (${config.sites[name]!.url}).\n`);
      }),
    );
  site
    .command('remove')
    .argument('<name>')
    .description('forget a saved site and its token')
    .action(
      action(io, async (ctx: CliContext, _o: object, name: string) => {
        const config = await ctx.config();
        if (!config.sites[name])
          throw new CliError(`no saved site named "${name}"`, ExitCode.NotFound, undefined, 'NOT_FOUND');
        await updateConfig((c) => {
          delete c.sites[name];
          if (c.current === name) c.current = Object.keys(c.sites)[0];
        }, ctx.env);
        ctx.result({ removed: name }, () => `Removed ${name}.\n`);
      }),
    );

  program
    .command('pwd')
    .description('the remote working collection relative paths start from')
    .action(
      action(io, async (ctx: CliContext) => {
        const cwd = await ctx.remote('.');
        ctx.result({ cwd }, () => cwd + '\n');
      }),
    );
  program
    .command('cd')
    .argument('[path]', 'a collection (default: your home)')
    .description('change the remote working collection (kept per site in config.json)')
    .action(
      action(io, async (ctx: CliContext, _o: object, input?: string) => {
        const site = await ctx.site();
        const service = await ctx.service();
        const target = input
          ? await ctx.remote(input)
          : (site.profile?.home ?? (await service.client.me()).homePath);
        const entry = await service.client.stat(target);
        if (entry.kind !== 'collection')
          throw new CliError(
            `${target} is not a collection`,
            ExitCode.Conflict,
            undefined,
            'NOT_A_COLLECTION',
          );
        if (!site.profile)
          throw usage(
            '`trib cd` needs a saved site: log in first (TRIBUTARY_SITE given as a URL has nowhere to keep it)',
          );
        await updateConfig((c) => {
          const p = c.sites[site.name];
          if (p) p.cwd = target;
        }, ctx.env);
        ctx.result({ cwd: target }, () => target + '\n');
      }),
    );
}

async function login(ctx: CliContext, options: LoginOptions): Promise<void> {
  const config = await ctx.config();
  const siteInput = options.site ?? ctx.options.site ?? ctx.env.TRIBUTARY_SITE;
  if (!siteInput) throw usage('give the site: trib login --site <url> --token <token>');
  const url = config.sites[siteInput]?.url ?? normalizeSiteUrl(siteInput);
  let token = options.token ?? ctx.env.TRIBUTARY_TOKEN;
  if (token === '-') token = (await readAll(ctx.io.stdin)).trim();
  if (!token && ctx.io.stdin?.isTTY && ctx.io.stderr.isTTY)
    token = (await promptHidden(ctx, 'API token: ')).trim();
  if (!token) {
    throw usage(
      'give a token: --token <token>, --token - (standard input), TRIBUTARY_TOKEN, or type it when asked on a terminal',
      'create a token in the portal (Tokens), or with `trib token create` on a machine already logged in',
    );
  }
  if (/\s/.test(token)) throw usage('the token contains white space: copy it again');
  // Who is this? Checks the URL and the token in one go, and learns the site's own id.
  const health = await fetch(`${url}/api/health`).then(
    async (res) => ((await res.json().catch(() => ({}))) as { site?: string }).site,
    (err: unknown) => {
      throw new CliError(
        `the site did not answer at ${url} (${err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err)})`,
        ExitCode.Unreachable,
        'check the URL and that the site is running',
        'UNREACHABLE',
      );
    },
  );
  const me: UserDto = await connect(url, token).client.me();
  const name =
    options.name ??
    Object.entries(config.sites).find(([, p]) => p.url === url)?.[0] ??
    health ??
    new URL(url).host;
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/.test(name))
    throw usage(`"${name}" is not a usable site name: letters, digits, ".", "_" or "-"`);
  await updateConfig((c) => {
    const previous: SiteProfile | undefined = c.sites[name];
    c.sites[name] = {
      url,
      token,
      username: me.username,
      home: me.homePath,
      cwd: previous?.username === me.username ? previous.cwd : undefined,
    };
    c.current = name;
  }, ctx.env);
  ctx.result(
    { site: name, url, user: me.username, home: me.homePath },
    () =>
      `Logged in to ${name} (${url}) as ${me.username} from ${os.hostname()}. Relative paths start at ${resolveRemote('.', me.homePath)}.\n`,
  );
}

async function readAll(stream: NodeJS.ReadableStream | undefined): Promise<string> {
  if (!stream) return '';
  const chunks: Buffer[] = [];
  for await (const chunk of stream as AsyncIterable<Buffer | string>) chunks.push(Buffer.from(chunk));
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads a line from the terminal without echoing it (the token stays off the screen and out of history). */
function promptHidden(ctx: CliContext, question: string): Promise<string> {
  const stdin = ctx.io.stdin as NodeJS.ReadStream;
  ctx.io.stderr.write(question);
  stdin.setRawMode(true);
  stdin.setEncoding('utf8');
  stdin.resume();
  return new Promise((resolve, reject) => {
    let value = '';
    const finish = (error?: Error) => {
      stdin.off('data', onData);
      stdin.setRawMode(false);
      stdin.pause();
      ctx.io.stderr.write('\n');
      if (error) reject(error);
      else resolve(value);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n' || ch === '\u0004') return finish();
        if (ch === '\u0003') return finish(new DOMException('interrupted', 'AbortError'));
        value = ch === '\u007f' || ch === '\b' ? value.slice(0, -1) : value + ch;
      }
    };
    stdin.on('data', onData);
  });
}
