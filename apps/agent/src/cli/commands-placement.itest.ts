import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { ObjectCopiesDto, PlacementRuleDto, VerifyReportDto } from '@tributary/shared';
import type { SiteProcess, TestUser } from '@tributary/testkit';
import { describe, expect, it } from 'vitest';
import { useCliSite } from '../testing/cli-site';
import { ExitCode } from './errors';

/**
 * `trib rule`, `trib copies` and `trib verify` against a real site process: rules set, listed with
 * what is inherited and removed; the site's refusals as exit codes with the field named; an object's
 * copies and an on-demand check.
 */
describe('trib rule, copies and verify', () => {
  let site: SiteProcess;
  let alice: TestUser;
  let work: string;
  let env: NodeJS.ProcessEnv;
  let proj: string;
  let file: string;

  const { trib, ok } = useCliSite('cli-placement', async (cli) => {
    ({ site, alice, work, env } = cli);
    Object.assign(env, { TRIBUTARY_SITE: site.url, TRIBUTARY_TOKEN: cli.token });
    proj = `${alice.user.homePath}/placed`;
    file = `${proj}/sub/data.txt`;
    await fs.writeFile(path.join(work, 'data.txt'), 'some bytes\n');
    await ok('mkdir', '-p', `${proj}/sub`);
    await ok('put', path.join(work, 'data.txt'), file);
  });

  it('adds a rule, lists it where it is inherited, and removes it', async () => {
    const before = Date.now();
    const rule = (
      await ok('rule', 'add', proj, '--copies', '1', '--where', 'kind = raw', '--expires', '30d', '--json')
    ).json<PlacementRuleDto>();
    expect(rule).toMatchObject({ path: proj, copies: 1, sites: null, condition: 'kind = raw' });
    const expires = Date.parse(rule.expiresAt!);
    expect(expires).toBeGreaterThanOrEqual(before + 30 * 86_400_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 30 * 86_400_000 + 1000);

    const listed = (await ok('rule', 'ls', `${proj}/sub`, '--json')).json<PlacementRuleDto[]>();
    expect(listed.map((r) => [r.id, r.inheritedFrom])).toEqual([[rule.id, proj]]);
    const table = (await ok('rule', 'ls', `${proj}/sub`)).stdout.split('\n');
    expect(table[0]).toMatch(/^ID\s+COPIES\s+SITES\s+WHERE\s+EXPIRES\s+OWNER\s+ON$/);
    expect(table[1]).toContain(rule.id);
    expect(table[1]).toContain('kind = raw');
    expect(table[1]).toContain(alice.username);
    expect(table[1]).toMatch(new RegExp(`${proj}$`));
    expect((await ok('rule', 'ls', proj)).stdout).toMatch(/\shere\n$/);

    expect((await ok('rule', 'rm', rule.id)).stdout).toBe('Removed 1 rule.\n');
    expect((await ok('rule', 'ls', proj)).stdout).toContain('No placement rules cover');
    const again = await trib('rule', 'rm', rule.id);
    expect(again.code).toBe(ExitCode.NotFound);
  });

  it('reports what the site or the command line refuses, with the exit code for it', async () => {
    // One site in the catalog: two copies cannot be placed.
    const tooMany = await trib('rule', 'add', proj, '--copies', '2');
    expect(tooMany.code).toBe(ExitCode.Usage);
    expect(tooMany.stderr).toMatch(/copies: must be at most the number of usable sites \(1\)/);

    const unknown = await trib('rule', 'add', proj, '--copies', '1', '--sites', 'lsu,nowhere');
    expect(unknown.code).toBe(ExitCode.Usage);
    expect(unknown.stderr).toContain('unknown site: nowhere');

    const badWhere = await trib('rule', 'add', proj, '--copies', '1', '--where', 'size >');
    expect(badWhere.code).toBe(ExitCode.Usage);
    expect(badWhere.stderr).toContain('condition:');

    const past = await trib('rule', 'add', proj, '--copies', '1', '--expires', '2001-01-01');
    expect(past.code).toBe(ExitCode.Usage);
    expect(past.stderr).toContain('expiresAt: must be in the future');

    // Erasure-coded (docs/erasure.md): 4+2 shards need six sites; this catalog has one.
    const shards = await trib('rule', 'add', proj, '--erasure', '4+2');
    expect(shards.code).toBe(ExitCode.Usage);
    expect(shards.stderr).toMatch(/erasure: k \+ m = 6 shards need 6 different sites; the rule can use 1/);

    for (const argv of [
      ['rule', 'add', proj, '--erasure', '4'],
      ['rule', 'add', proj, '--erasure', '4+9'],
      ['rule', 'add', proj, '--erasure', '4+2', '--copies', '1'],
      ['rule', 'add', proj, '--copies', '1', '--by', 'resource'],
      ['rule', 'add', proj, '--copies', '0'],
      ['rule', 'add', proj, '--copies', '1', '--expires', 'soon'],
      ['rule', 'add', proj],
      ['rule', 'rm', 'abc'],
    ]) {
      expect((await trib(...argv)).code, argv.join(' ')).toBe(ExitCode.Usage);
    }

    const elsewhere = await trib('rule', 'add', `${proj}/nothing`, '--copies', '1', '--json');
    expect(elsewhere.code).toBe(ExitCode.NotFound);
    expect(JSON.parse(elsewhere.stderr)).toMatchObject({ error: { code: 'NOT_FOUND' } });
    expect((await trib('rule', 'ls', file)).code).toBe(ExitCode.Usage);
  });

  it("shows an object's copies and verifies this site's copy", async () => {
    const copies = (await ok('copies', file, '--json')).json<ObjectCopiesDto>();
    expect(copies.path).toBe(file);
    expect(copies.copies.map((c) => [c.site, c.state, c.current])).toEqual([['lsu', 'good', true]]);
    const shown = (await ok('copies', file)).stdout;
    expect(shown).toMatch(/^path:\s+\S+placed\/sub\/data\.txt$/m);
    expect(shown).toMatch(/^lsu\s+good\s/m);

    const report = (await ok('verify', file, '--json')).json<VerifyReportDto>();
    expect(report).toMatchObject({ path: file, local: 'ok' });
    expect((await ok('verify', file)).stdout).toContain('matches the checksum');

    expect((await trib('copies', `${proj}/missing.txt`)).code).toBe(ExitCode.NotFound);
  });
});
