import { promises as fs } from 'node:fs';
import path from 'node:path';
import { agentHome } from '../agent-home';

/** Settings the local UI and the command-line tools share (persisted in config.json). */
export interface AgentSettings {
  /** Advance buffer of the mount, per open file (MiB). */
  bufferMiB: number;
  /** How long the mount trusts cached attributes and listings (seconds). */
  cacheTtlSeconds: number;
  /** Files transferred at once by `trib put`/`trib get` of a directory. */
  parallel: number;
}

export const DEFAULT_SETTINGS: AgentSettings = { bufferMiB: 32, cacheTtlSeconds: 5, parallel: 16 };

/** Bounds the UI and `trib config set` enforce. */
export const SETTING_LIMITS: Record<keyof AgentSettings, { min: number; max: number; what: string }> = {
  bufferMiB: { min: 1, max: 1024, what: 'advance buffer per open file, MiB' },
  cacheTtlSeconds: { min: 0, max: 3600, what: 'mount cache lifetime, seconds' },
  parallel: { min: 1, max: 64, what: 'files transferred at once' },
};

/** One site the user has logged in to. The token never leaves config.json (mode 0600). */
export interface SiteProfile {
  url: string;
  token?: string;
  /** Who the token belongs to (shown by `trib site list`). */
  username?: string;
  /** The user's home collection; relative remote paths are resolved against `cwd`, else this. */
  home?: string;
  /** The remote working collection (`trib cd`). */
  cwd?: string;
}

export interface AgentConfig {
  /** Name of the site commands talk to. */
  current?: string;
  sites: Record<string, SiteProfile>;
  settings: AgentSettings;
}

export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(agentHome(env), 'config.json');
}

export function emptyConfig(): AgentConfig {
  return { sites: {}, settings: { ...DEFAULT_SETTINGS } };
}

/** Reads config.json; a missing file is an empty configuration, a damaged one an error that says where. */
export async function loadConfig(env: NodeJS.ProcessEnv = process.env): Promise<AgentConfig> {
  const file = configPath(env);
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyConfig();
    throw err;
  }
  let raw: Partial<AgentConfig>;
  try {
    raw = JSON.parse(text) as Partial<AgentConfig>;
  } catch {
    throw new ConfigError(`${file} is not valid JSON: fix or delete it (then log in again)`);
  }
  return {
    current: typeof raw.current === 'string' ? raw.current : undefined,
    sites: raw.sites && typeof raw.sites === 'object' ? raw.sites : {},
    settings: normalizeSettings((raw.settings ?? {}) as Partial<Record<string, unknown>>),
  };
}

/** Writes config.json atomically with mode 0600 (it holds tokens). */
export async function saveConfig(config: AgentConfig, env: NodeJS.ProcessEnv = process.env): Promise<void> {
  const file = configPath(env);
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${process.pid}.${Date.now()}.tmp`;
  await fs.writeFile(tmp, JSON.stringify(config, null, 2) + '\n', { mode: 0o600 });
  await fs.chmod(tmp, 0o600);
  await fs.rename(tmp, file);
}

/** Reads, changes and writes config.json. */
export async function updateConfig(
  change: (config: AgentConfig) => void,
  env: NodeJS.ProcessEnv = process.env,
): Promise<AgentConfig> {
  const config = await loadConfig(env);
  change(config);
  await saveConfig(config, env);
  return config;
}

export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

/** Checks one setting; returns the value or throws a message that says the allowed range. */
export function checkSetting(name: string, value: unknown): [keyof AgentSettings, number] {
  if (!(name in SETTING_LIMITS)) {
    throw new ConfigError(`unknown setting "${name}": use one of ${Object.keys(SETTING_LIMITS).join(', ')}`);
  }
  const key = name as keyof AgentSettings;
  const limits = SETTING_LIMITS[key];
  const number = typeof value === 'number' ? value : typeof value === 'string' ? Number(value) : NaN;
  if (!Number.isInteger(number) || number < limits.min || number > limits.max) {
    throw new ConfigError(
      `${name} (${limits.what}) must be a whole number from ${limits.min} to ${limits.max}`,
    );
  }
  return [key, number];
}

function normalizeSettings(raw: Partial<Record<string, unknown>>): AgentSettings {
  const settings = { ...DEFAULT_SETTINGS };
  for (const key of Object.keys(SETTING_LIMITS) as (keyof AgentSettings)[]) {
    try {
      if (raw[key] !== undefined) settings[key] = checkSetting(key, raw[key])[1];
    } catch {
      // A bad value on disk falls back to the default; `trib config` shows what is in effect.
    }
  }
  return settings;
}

/** The site commands talk to: `TRIBUTARY_SITE`/`TRIBUTARY_TOKEN` override config.json. */
export interface ActiveSite {
  name: string;
  url: string;
  token?: string;
  profile?: SiteProfile;
  /** Where the URL and the token came from, for `trib site` and error messages. */
  source: 'env' | 'config';
}

/**
 * Picks the site: `TRIBUTARY_SITE` (a URL, or the name of a saved site) wins over `--site`, which
 * wins over the current site in config.json; `TRIBUTARY_TOKEN` wins over the saved token.
 */
export function activeSite(
  config: AgentConfig,
  env: NodeJS.ProcessEnv,
  flag?: string,
): ActiveSite | undefined {
  const chosen = env.TRIBUTARY_SITE || flag || config.current;
  if (!chosen) {
    if (env.TRIBUTARY_TOKEN) return undefined;
    return undefined;
  }
  const fromEnv = Boolean(env.TRIBUTARY_SITE);
  const byName = config.sites[chosen];
  let site: ActiveSite;
  if (byName) {
    site = {
      name: chosen,
      url: byName.url,
      token: byName.token,
      profile: byName,
      source: fromEnv ? 'env' : 'config',
    };
  } else if (/^https?:\/\//.test(chosen)) {
    const url = normalizeSiteUrl(chosen);
    const entry = Object.entries(config.sites).find(([, p]) => p.url === url);
    site = entry
      ? { name: entry[0], url, token: entry[1].token, profile: entry[1], source: fromEnv ? 'env' : 'config' }
      : { name: url, url, source: fromEnv ? 'env' : 'config' };
  } else {
    throw new ConfigError(
      `no site named "${chosen}": log in with \`trib login --site <url> --name ${chosen}\`, or see \`trib site list\``,
    );
  }
  if (env.TRIBUTARY_TOKEN) site = { ...site, token: env.TRIBUTARY_TOKEN, source: 'env' };
  return site;
}

/** `http://host:port/` and `http://host:port/api/v1` both become `http://host:port`. */
export function normalizeSiteUrl(input: string): string {
  let url: URL;
  try {
    url = new URL(input);
  } catch {
    throw new ConfigError(`"${input}" is not a URL: give the site's address, e.g. http://127.0.0.1:8080`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new ConfigError(`"${input}" must start with http:// or https://`);
  }
  let pathname = url.pathname.replace(/\/+$/, '');
  pathname = pathname.replace(/\/api(\/v1)?$/, '');
  return `${url.protocol}//${url.host}${pathname}`;
}
