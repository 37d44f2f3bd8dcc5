import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import type { Command } from 'commander';
import { checkSetting, configPath, SETTING_LIMITS, updateConfig } from '../config/config';
import { startUiServer } from '../ui/server';
import { action, intArg } from './command';
import type { CliContext, CliIO } from './context';
import { CliError, ExitCode, usage } from './errors';
import { formatTable } from './output';

/** ui, config, completion: things on this machine. */
export function registerLocal(program: Command, io: CliIO): void {
  program
    .command('ui')
    .option('--port <port>', 'port on 127.0.0.1 (default: a free one)', intArg('--port', 0, 65535))
    .option('--open', "open it in Chromium's app mode (chromium --app=URL)")
    .description('serve the local UI on 127.0.0.1 (mounts, transfers, conflicts, settings) until Ctrl-C')
    .action(
      action(io, async (ctx: CliContext, options: { port?: number; open?: boolean }) => {
        const server = await startUiServer({ env: ctx.env, port: options.port });
        ctx.result({ url: server.url, origin: server.origin, port: server.port }, () => `${server.url}\n`);
        ctx.note("The URL carries this installation's UI secret: do not share it. Ctrl-C stops the UI.");
        if (options.open) {
          const browser = findBrowser(ctx.env);
          if (!browser) {
            await server.close();
            throw new CliError(
              'no Chromium found to open the UI',
              ExitCode.Unsupported,
              'install chromium, set TRIBUTARY_BROWSER, or open the URL yourself',
              'NO_BROWSER',
            );
          }
          spawn(browser, [`--app=${server.url}`, '--no-first-run'], {
            detached: true,
            stdio: 'ignore',
          }).unref();
        }
        await new Promise<void>((resolve) => {
          if (!ctx.io.signal) return;
          if (ctx.io.signal.aborted) resolve();
          ctx.io.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        await server.close();
      }),
    );

  const config = program
    .command('config')
    .description('settings of this agent, kept in config.json (the local UI changes the same ones)');
  config
    .command('list', { isDefault: true })
    .alias('ls')
    .description('every setting, its value and what it means')
    .action(
      action(io, async (ctx: CliContext) => {
        const { settings } = await ctx.config();
        const rows = (Object.keys(SETTING_LIMITS) as (keyof typeof SETTING_LIMITS)[]).map((key) => ({
          key,
          value: settings[key],
          meaning: `${SETTING_LIMITS[key].what} (${SETTING_LIMITS[key].min}-${SETTING_LIMITS[key].max})`,
        }));
        ctx.result({ file: configPath(ctx.env), settings }, () =>
          formatTable(rows, [
            { header: 'SETTING', value: (r) => r.key },
            { header: 'VALUE', value: (r) => String(r.value), align: 'right' },
            { header: 'MEANING', value: (r) => r.meaning },
          ]),
        );
      }),
    );
  config
    .command('get')
    .argument('<key>')
    .description('one setting')
    .action(
      action(io, async (ctx: CliContext, _o: object, key: string) => {
        const { settings } = await ctx.config();
        if (!(key in SETTING_LIMITS))
          throw usage(`unknown setting "${key}": use one of ${Object.keys(SETTING_LIMITS).join(', ')}`);
        const value = settings[key as keyof typeof settings];
        ctx.result({ [key]: value }, () => `${value}\n`);
      }),
    );
  config
    .command('set')
    .argument('<key>')
    .argument('<value>')
    .description('change a setting (the local UI changes the same ones)')
    .action(
      action(io, async (ctx: CliContext, _o: object, key: string, value: string) => {
        const [name, number] = checkSetting(key, value);
        const saved = await updateConfig((c) => (c.settings[name] = number), ctx.env);
        ctx.result(saved.settings, () => '');
      }),
    );

  program
    .command('completion')
    .argument('<shell>', 'bash or zsh')
    .description('print a shell completion script, e.g. `source <(trib completion bash)`')
    .action(
      action(io, async (ctx: CliContext, _o: object, shell: string) => {
        if (shell !== 'bash' && shell !== 'zsh') throw usage(`no completion for "${shell}": use bash or zsh`);
        ctx.out(completionScript(program, shell));
        return Promise.resolve();
      }),
    );
}

function findBrowser(env: NodeJS.ProcessEnv): string | undefined {
  const candidates = [
    env.TRIBUTARY_BROWSER,
    '/usr/bin/chromium',
    '/usr/bin/chromium-browser',
    '/usr/bin/google-chrome',
  ];
  return candidates.find((c): c is string => typeof c === 'string' && c.length > 0 && existsSync(c));
}

/** The words a shell may complete after `trib` and after each command, from commander's own tree. */
export function completionWords(program: Command): Map<string, string[]> {
  const words = new Map<string, string[]>();
  const optionsOf = (c: Command) =>
    c.options.flatMap((o) => [o.short, o.long].filter((f): f is string => Boolean(f)));
  words.set('', [...program.commands.map((c) => c.name()), ...optionsOf(program), '--help']);
  for (const command of program.commands) {
    words.set(command.name(), [...command.commands.map((c) => c.name()), ...optionsOf(command), '--help']);
    for (const sub of command.commands)
      words.set(`${command.name()} ${sub.name()}`, [...optionsOf(sub), '--help']);
  }
  return words;
}

export function completionScript(program: Command, shell: 'bash' | 'zsh'): string {
  const words = completionWords(program);
  const cases = [...words.entries()]
    .filter(([key]) => key !== '')
    .map(([key, list]) => `    "${key}") words="${list.join(' ')}" ;;`)
    .join('\n');
  const body = `_trib() {
  local cur key words
  cur="\${COMP_WORDS[COMP_CWORD]}"
  key=""
  local i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case "\${COMP_WORDS[i]}" in -*) ;; *) if [ -z "$key" ]; then key="\${COMP_WORDS[i]}"; elif [ "\${key#* }" = "$key" ]; then key="$key \${COMP_WORDS[i]}"; fi ;; esac
  done
  case "$key" in
    "") words="${words.get('')!.join(' ')}" ;;
${cases}
    *) words="" ;;
  esac
  if [ -z "$words" ]; then
    case "$key" in "\${key%% *}"|*) ;; esac
    COMPREPLY=($(compgen -f -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -W "$words" -- "$cur"))
  case "$cur" in -*) ;; *) COMPREPLY+=($(compgen -f -- "$cur")) ;; esac
}
`;
  if (shell === 'bash')
    return `# trib completion for bash: source <(trib completion bash)\n${body}complete -o default -F _trib trib\n`;
  return `# trib completion for zsh: source <(trib completion zsh)\nautoload -U +X bashcompinit && bashcompinit\n${body}complete -o default -F _trib trib\n`;
}
