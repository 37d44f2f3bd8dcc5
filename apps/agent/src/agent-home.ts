import os from 'node:os';
import path from 'node:path';

/**
 * Where the agent keeps its state on this workstation: `TRIBUTARY_AGENT_HOME` when set (tests and
 * several profiles), otherwise `$XDG_CONFIG_HOME/tributary` or `~/.config/tributary`.
 *
 * Layout (each part owned by one module):
 * - `config.json`: the chosen site, the token and settings (the command-line tools);
 * - `mounts/<id>.json`: one file per running mount, kept current by the mount process (src/mount);
 * - `ui-secret`: the local UI's per-install secret (src/ui).
 */
export function agentHome(env: NodeJS.ProcessEnv = process.env): string {
  if (env.TRIBUTARY_AGENT_HOME) return path.resolve(env.TRIBUTARY_AGENT_HOME);
  const base = env.XDG_CONFIG_HOME ? path.resolve(env.XDG_CONFIG_HOME) : path.join(os.homedir(), '.config');
  return path.join(base, 'tributary');
}
