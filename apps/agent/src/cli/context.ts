import { activeSite, loadConfig, type ActiveSite, type AgentConfig } from '../config/config';
import { CliError, ExitCode } from './errors';
import type { OutputStream } from './output';
import { resolveRemote } from './paths';
import { SiteService } from './service';

/** What runCli reads and writes: the process's streams and environment, or a test's. */
export interface CliIO {
  stdout: OutputStream;
  stderr: OutputStream;
  /** Read by `trib login --token -` (token on standard input). */
  stdin?: NodeJS.ReadableStream & { isTTY?: boolean };
  /** Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Local working directory for relative local paths; default process.cwd(). */
  cwd?: string;
  /** Cancels running transfers (main.ts aborts it on SIGINT). */
  signal?: AbortSignal;
}

/** Options every command accepts. */
export interface GlobalOptions {
  json?: boolean;
  quiet?: boolean;
  site?: string;
  progress?: boolean;
}

/** One command's view of the world: output helpers, configuration and the site. */
export class CliContext {
  readonly env: NodeJS.ProcessEnv;
  readonly cwd: string;
  private configPromise: Promise<AgentConfig> | undefined;
  private serviceInstance: SiteService | undefined;

  constructor(
    readonly io: CliIO,
    readonly options: GlobalOptions,
  ) {
    this.env = io.env ?? process.env;
    this.cwd = io.cwd ?? process.cwd();
  }

  get json(): boolean {
    return this.options.json === true;
  }

  /** Progress bars: only on a terminal, and not with --json, --quiet or --no-progress. */
  get showProgress(): boolean {
    return (
      this.io.stderr.isTTY === true && !this.json && !this.options.quiet && this.options.progress !== false
    );
  }

  out(text: string): void {
    this.io.stdout.write(text);
  }

  /** A message for people (stderr), silenced by --quiet and --json. */
  note(text: string): void {
    if (!this.options.quiet && !this.json) this.io.stderr.write(text.endsWith('\n') ? text : text + '\n');
  }

  warn(text: string): void {
    this.io.stderr.write(`trib: ${text}\n`);
  }

  /** The result of a command: JSON with --json, otherwise what `human` renders. */
  result(data: unknown, human: () => string): void {
    if (this.json) this.out(JSON.stringify(data, null, 2) + '\n');
    else this.out(human());
  }

  config(): Promise<AgentConfig> {
    this.configPromise ??= loadConfig(this.env);
    return this.configPromise;
  }

  /** Forgets the cached configuration (after a command changed it). */
  reloadConfig(): void {
    this.configPromise = undefined;
    this.serviceInstance = undefined;
  }

  async site(): Promise<ActiveSite> {
    const site = activeSite(await this.config(), this.env, this.options.site);
    if (!site) {
      throw new CliError(
        'no site chosen',
        ExitCode.Auth,
        'log in with `trib login --site <url> --token <token>` (or set TRIBUTARY_SITE and TRIBUTARY_TOKEN)',
        'NOT_LOGGED_IN',
      );
    }
    return site;
  }

  /** The API of the active site, with a token (or an error that says how to log in). */
  async service(): Promise<SiteService> {
    if (this.serviceInstance) return this.serviceInstance;
    const site = await this.site();
    if (!site.token) {
      throw new CliError(
        `not logged in to ${site.name}`,
        ExitCode.Auth,
        `run \`trib login --site ${site.url} --token <token>\` (create a token in the portal)`,
        'NOT_LOGGED_IN',
      );
    }
    this.serviceInstance = new SiteService(site, site.token);
    return this.serviceInstance;
  }

  /** A remote path from the command line, relative ones against `trib cd`'s collection or home. */
  async remote(input: string): Promise<string> {
    const site = await this.site().catch(() => undefined);
    const base = site?.profile?.cwd ?? site?.profile?.home ?? '/';
    return resolveRemote(input, base);
  }
}
