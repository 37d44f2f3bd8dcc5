import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { UsageDto } from '@tributary/shared';
import type { SiteProcess, TestUser } from '@tributary/testkit';
import { describe, expect, it } from 'vitest';
import { useCliSite } from '../testing/cli-site';
import { ExitCode } from './errors';

/** `trib du` against a real site process: the sums as a table and as JSON, and refusals as exit codes. */
describe('trib du', () => {
  let site: SiteProcess;
  let alice: TestUser;
  let proj: string;

  const { trib, ok } = useCliSite('cli-usage', async (cli) => {
    ({ site, alice } = cli);
    Object.assign(cli.env, { TRIBUTARY_SITE: site.url, TRIBUTARY_TOKEN: cli.token });
    proj = `${alice.user.homePath}/du`;
    await fs.writeFile(path.join(cli.work, 'small'), 'x'.repeat(10));
    await fs.writeFile(path.join(cli.work, 'large'), 'y'.repeat(3000));
    await ok('mkdir', '-p', `${proj}/big/inner`, `${proj}/little`);
    await ok('put', path.join(cli.work, 'small'), `${proj}/top.txt`);
    await ok('put', path.join(cli.work, 'large'), `${proj}/big/inner/a.bin`);
    await ok('put', path.join(cli.work, 'small'), `${proj}/little/b.txt`);
  });

  it('prints the sums, the largest child collections and the copies per site', async () => {
    const json = (await ok('du', proj, '--json')).json<UsageDto>();
    expect(json).toMatchObject({ path: proj, objects: 3, bytes: 3020, here: { objects: 1, bytes: 10 } });
    expect(json.children.map((c) => [c.path, c.objects, c.bytes])).toEqual([
      [`${proj}/big`, 1, 3000],
      [`${proj}/little`, 1, 10],
    ]);
    expect(json.sites.map((s) => [s.copies, s.bytes, s.cachedBytes])).toEqual([[3, 3020, 0]]);
    const text = (await ok('du', proj, '-n', '1')).stdout;
    expect(text).toContain(`${proj}: 3 objects`);
    expect(text).toContain(`${proj}/big`);
    expect(text).not.toContain(`${proj}/little`);
    expect(text).toContain('--children N lists more');
    expect(text).toMatch(/SITE\s+COPIES\s+SIZE\s+CACHED/);
  });

  it('refuses a data object, a missing collection and a bad --children', async () => {
    const object = await trib('du', `${proj}/top.txt`);
    expect(object.code, object.stderr).toBe(ExitCode.Conflict);
    expect(object.stderr).toContain('collections');
    const missing = await trib('du', `${proj}/nothing`);
    expect(missing.code, missing.stderr).toBe(ExitCode.NotFound);
    const bad = await trib('du', proj, '-n', '501');
    expect(bad.code, bad.stderr).toBe(ExitCode.Usage);
    expect(bad.stderr).toContain('--children');
  });
});
