import { runCli } from '@tributary/agent/embedding';

/** Where `trib` runs: the site and token it uses, its agent home and working directory. */
export interface TribTarget {
  siteUrl: string;
  token: string;
  agentHome: string;
  cwd: string;
}

/**
 * Runs `trib --json <args>` in this process (the agent's embedding entry) against a site, its
 * output discarded; fails with what trib wrote to stderr when it exits non-zero.
 */
export async function runTrib(target: TribTarget, args: string[]): Promise<void> {
  let errors = '';
  const code = await runCli(['--json', ...args], {
    stdout: { write: () => true },
    stderr: { write: (chunk: string) => ((errors += chunk), true) },
    env: {
      ...process.env,
      TRIBUTARY_AGENT_HOME: target.agentHome,
      TRIBUTARY_SITE: target.siteUrl,
      TRIBUTARY_TOKEN: target.token,
    },
    cwd: target.cwd,
  });
  if (code !== 0) throw new Error(`trib ${args.join(' ')} exited with ${code}: ${errors.trim()}`);
}
