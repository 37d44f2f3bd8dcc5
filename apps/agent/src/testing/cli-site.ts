import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { CreatedTokenDto } from '@tributary/shared';
import { startSite, type SiteProcess, type TestUser } from '@tributary/testkit';
import { afterAll, beforeAll, expect } from 'vitest';
import { tribInProcess, type CliRun } from './cli-harness';

export interface CliSite {
  site: SiteProcess;
  /** A user of the site, with a write token `token`. */
  alice: TestUser;
  token: string;
  /** The agent home (TRIBUTARY_AGENT_HOME) and the working directory, both new and empty. */
  home: string;
  work: string;
  /** The environment `trib` runs with: TRIBUTARY_AGENT_HOME only, until `started` adds to it. */
  env: NodeJS.ProcessEnv;
}

/**
 * A real site process (LOGIN_RATE_LIMIT 1000) with a user holding a write token named `tokenName`,
 * and an agent home and working directory for `trib`: made before the suite (then handed to
 * `started`, which may add to `env` and prepare more), closed and removed after it. Call it in a
 * `describe`; `trib` runs the CLI in this process with `env` in the working directory, `ok` also
 * requires it to succeed.
 */
export function useCliSite(
  tokenName: string,
  started: (cli: CliSite) => void | Promise<void>,
): { trib: (...argv: string[]) => Promise<CliRun>; ok: (...argv: string[]) => Promise<CliRun> } {
  let cli: CliSite | undefined;
  let site: SiteProcess | undefined;
  let home: string | undefined;
  let work: string | undefined;

  const trib = (...argv: string[]): Promise<CliRun> => {
    if (!cli) throw new Error('the site has not started');
    return tribInProcess(argv, { env: cli.env, cwd: cli.work });
  };
  const ok = async (...argv: string[]): Promise<CliRun> => {
    const run = await trib(...argv);
    expect(run.code, `trib ${argv.join(' ')}\n${run.stderr}`).toBe(0);
    return run;
  };

  beforeAll(async () => {
    site = await startSite({ env: { LOGIN_RATE_LIMIT: '1000' } });
    const alice = await site.createUser();
    const created = await alice.client.post<CreatedTokenDto>('/api/v1/tokens', {
      name: tokenName,
      scope: 'write',
    });
    expect(created.status).toBe(201);
    home = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-home-'));
    work = await fs.mkdtemp(path.join(os.tmpdir(), 'trib-work-'));
    cli = { site, alice, token: created.body.secret, home, work, env: { TRIBUTARY_AGENT_HOME: home } };
    await started(cli);
  });
  afterAll(async () => {
    await site?.close();
    if (home) await fs.rm(home, { recursive: true, force: true });
    if (work) await fs.rm(work, { recursive: true, force: true });
  });

  return { trib, ok };
}
