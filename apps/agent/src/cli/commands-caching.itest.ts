import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { CacheChangeDto, CacheListDto, SubscriptionDto } from '@tributary/shared';
import type { SiteProcess, TestUser } from '@tributary/testkit';
import { describe, expect, it } from 'vitest';
import { useCliSite } from '../testing/cli-site';
import { ExitCode } from './errors';

/**
 * `trib subscribe`, `subscriptions`, `unsubscribe`, `cache` and `stage` against a real site
 * process (one site, which keeps no cache: CACHE_MAX_BYTES unset). The cache's work across sites
 * is tested in apps/api/src/caching/caching-federation.itest.ts; here the commands, their output
 * and the site's refusals as exit codes.
 */
describe('trib subscribe, cache and stage', () => {
  let site: SiteProcess;
  let alice: TestUser;
  let work: string;
  let env: NodeJS.ProcessEnv;
  let proj: string;

  const { trib, ok } = useCliSite('cli-caching', async (cli) => {
    ({ site, alice, work, env } = cli);
    Object.assign(env, { TRIBUTARY_SITE: site.url, TRIBUTARY_TOKEN: cli.token });
    proj = `${alice.user.homePath}/published`;
    await fs.writeFile(path.join(work, 'data.txt'), 'some bytes\n');
    await ok('mkdir', '-p', `${proj}/sub`);
    await ok('put', path.join(work, 'data.txt'), `${proj}/sub/data.txt`);
  });

  it('subscribes this site to a collection, lists who subscribes to what, and ends it', async () => {
    const sub = (await ok('subscribe', proj, '--where', 'kind = raw', '--json')).json<SubscriptionDto>();
    expect(sub).toMatchObject({ path: proj, site: 'lsu', condition: 'kind = raw', owner: alice.username });
    // The same subscription again is the one there.
    expect((await ok('subscribe', proj, '--where', 'kind = raw', '--json')).json<SubscriptionDto>().id).toBe(
      sub.id,
    );

    const listed = (await ok('subscriptions', alice.user.homePath, '--json')).json<SubscriptionDto[]>();
    expect(listed.map((s) => [s.id, s.site, s.path])).toEqual([[sub.id, 'lsu', proj]]);
    const table = (await ok('subscriptions', proj)).stdout.split('\n');
    expect(table[0]).toMatch(/^ID\s+SUBSCRIBER\s+WHERE\s+OWNER\s+SINCE\s+PUBLISHER$/);
    expect(table[1]).toMatch(new RegExp(`^${sub.id}\\s+lsu\\s+kind = raw\\s+${alice.username}\\s.*${proj}$`));
    expect((await ok('subscriptions', proj, '--subscriber', 'nowhere')).stdout).toContain(
      'No subscriptions to',
    );
    // A subscription is a rule with the subscriber as its one site.
    expect((await ok('rule', 'ls', `${proj}/sub`)).stdout).toMatch(
      new RegExp(`^${sub.id}\\s+1\\s+lsu\\s`, 'm'),
    );

    expect((await ok('unsubscribe', sub.id)).stdout).toBe('Ended 1 subscription.\n');
    expect((await ok('subscriptions', proj)).stdout).toContain('No subscriptions to');
    expect((await trib('unsubscribe', sub.id)).code).toBe(ExitCode.NotFound);
    expect((await trib('unsubscribe', 'abc')).code).toBe(ExitCode.Usage);
    const unknown = await trib('subscribe', proj, '--subscriber', 'nowhere');
    expect(unknown.code, unknown.stdout + unknown.stderr).toBe(ExitCode.Usage);
    expect(unknown.stderr).toContain('unknown site: nowhere');
    expect((await trib('subscribe', `${proj}/sub/data.txt`)).code).toBe(ExitCode.Usage);
    expect((await trib('subscribe', `${proj}/none`)).code).toBe(ExitCode.NotFound);
  });

  it('lists, evicts and stages, and says so when the site keeps no cache', async () => {
    const list = (await ok('cache', 'ls', proj, '--json')).json<CacheListDto>();
    expect(list).toEqual({ items: [], total: 0, bytes: 0 });
    expect((await ok('cache', 'ls', proj)).stdout).toBe(`No cached copies below ${proj} at this site.\n`);
    expect((await ok('cache', 'evict', proj, '--json')).json<CacheChangeDto>()).toEqual({
      changed: 0,
      kept: [],
    });
    expect((await ok('cache', 'unpin', proj)).stdout).toBe('Unpinned 0 cached copies.\n');

    const staged = await trib('stage', proj);
    expect(staged.code).toBe(ExitCode.Conflict);
    expect(staged.stderr).toContain('keeps no cache');
    expect((await trib('cache', 'pin', proj)).code).toBe(ExitCode.Conflict);
    // The operators' view is for administrators.
    expect((await trib('cache', 'status')).code).toBe(ExitCode.Auth);
    expect((await trib('cache', 'ls', `${proj}/none`)).code).toBe(ExitCode.NotFound);
    expect((await trib('cache', 'ls', proj, '--limit', '0')).code).toBe(ExitCode.Usage);
  });
});
