import type { ConflictDto, EntryDetailDto, Page, TrashEntryDto } from '@tributary/shared';
import { describe, expect, it } from 'vitest';
import { testBytes, uniqueName } from '@tributary/testkit';
import type { FederationSite } from '@tributary/testkit';
import { expectStatus } from '../test/test-site';
import { useTwoSites } from '../test/two-sites';

/**
 * Symbolic links, file times and permission bits between two real site processes (issue 25;
 * docs/attributes.md, docs/conflicts.md). The cycle is an hour long: each test makes its changes,
 * then runs the exchange and checks both sites.
 */
describe('symbolic links and attributes between sites', () => {
  let lsu: FederationSite;
  let tulane: FederationSite;
  const { exchange } = useTwoSites((sites) => ({ lsu, tulane } = sites));

  async function newDir(prefix: string): Promise<string> {
    const dir = `/projects/${uniqueName(prefix)}`;
    await lsu.client.createCollection(dir);
    return dir;
  }

  async function conflictsAbout(site: FederationSite, path: string): Promise<ConflictDto[]> {
    return expectStatus(
      await site.http.get<Page<ConflictDto>>('/api/v1/conflicts', { query: { path, status: 'all' } }),
      200,
    ).body.items;
  }

  /** What both sites must agree on about an entry. */
  const attrs = (e: EntryDetailDto) => ({
    kind: e.kind,
    path: e.path,
    mode: e.mode,
    mtime: e.mtime,
    linkTarget: e.linkTarget,
    size: e.size,
    checksum: e.checksum,
    version: e.version,
  });

  it(
    'a symlink and attributes made at one site reach the other; a rename, trash and restore there come back',
    { timeout: 120_000 },
    async () => {
      const dir = await newDir('links');
      await lsu.client.upload(`${dir}/run.sh`, testBytes(100, 1), {
        mode: 0o755,
        mtime: '2001-02-03T04:05:06.123456789Z',
      });
      const link = await lsu.client.createSymlink(`${dir}/latest`, 'run.sh', '2002-01-01T00:00:00Z');
      expect(link).toMatchObject({ kind: 'symlink', linkTarget: 'run.sh', mode: 0o777 });
      await lsu.client.setAttributes(dir, { mode: '2775', mtime: 0 });
      await exchange();

      expect(await tulane.client.stat(`${dir}/latest`)).toMatchObject({
        kind: 'symlink',
        linkTarget: 'run.sh',
        mode: 0o777,
        mtime: '2002-01-01T00:00:00.000000000Z',
        replicas: [],
      });
      expect(await tulane.client.stat(`${dir}/run.sh`)).toMatchObject({
        kind: 'object',
        mode: 0o755,
        mtime: '2001-02-03T04:05:06.123456789Z',
      });
      expect(await tulane.client.stat(dir)).toMatchObject({
        mode: 0o2775,
        mtime: '1970-01-01T00:00:00.000000000Z',
      });
      // Data routes refuse it at the other site too.
      const read = await tulane.http.get('/api/v1/data', { query: { path: `${dir}/latest` } });
      expect(read.status).toBe(409);

      await tulane.client.move(`${dir}/latest`, `${dir}/current`);
      const trashed = await tulane.client.remove(`${dir}/current`);
      expect(trashed.kind).toBe('symlink');
      await exchange();
      expect(
        (await lsu.http.get('/api/v1/namespace/stat', { query: { path: `${dir}/current` } })).status,
      ).toBe(404);
      const trash = expectStatus(await lsu.http.get<Page<TrashEntryDto>>('/api/v1/trash'), 200).body.items;
      expect(trash.find((t) => t.id === trashed.id)?.kind).toBe('symlink');
      // Restored at lsu: forwarded to tulane, where it was deleted.
      expect(await lsu.client.restore(trashed.id)).toMatchObject({ kind: 'symlink', linkTarget: 'run.sh' });
      await exchange();
      for (const site of [lsu, tulane]) {
        expect(await site.client.stat(`${dir}/current`), site.id).toMatchObject({
          kind: 'symlink',
          linkTarget: 'run.sh',
          mtime: '2002-01-01T00:00:00.000000000Z',
        });
      }
    },
  );

  it(
    'concurrent attribute changes at two sites end the same at both, the latest standing, with nothing to decide',
    { timeout: 120_000 },
    async () => {
      const dir = await newDir('concurrent');
      await lsu.client.upload(`${dir}/f`, testBytes(10, 2));
      await lsu.client.createSymlink(`${dir}/l`, 'f');
      await exchange();

      // One cycle: chmod at lsu, touch at tulane; on the folder and the link too.
      await lsu.client.setAttributes(`${dir}/f`, { mode: 0o700 });
      await lsu.client.setAttributes(dir, { mtime: '2011-11-11T11:11:11Z' });
      await tulane.client.setAttributes(`${dir}/l`, { mtime: '2012-12-12T12:12:12Z' });
      await lsu.client.setAttributes(`${dir}/l`, { mtime: '2013-01-01T00:00:00Z' });
      await tulane.client.setAttributes(`${dir}/f`, {
        mtime: '1999-09-09T09:09:09.999999999Z',
        mode: '0640',
      });
      await tulane.client.setAttributes(dir, { mode: 0o750 });
      await exchange();

      for (const path of [dir, `${dir}/f`, `${dir}/l`]) {
        const [a, b] = await Promise.all([lsu.client.stat(path), tulane.client.stat(path)]);
        expect(attrs(a), path).toEqual(attrs(b));
      }
      // The later change at each entry stands whole.
      expect(await lsu.client.stat(`${dir}/f`)).toMatchObject({
        mode: 0o640,
        mtime: '1999-09-09T09:09:09.999999999Z',
      });
      expect((await lsu.client.stat(dir)).mode).toBe(0o750);
      expect((await lsu.client.stat(`${dir}/l`)).mtime).toBe('2013-01-01T00:00:00.000000000Z');
      for (const site of [lsu, tulane]) expect(await conflictsAbout(site, dir), site.id).toEqual([]);
      // The engine's own log still shows them (administrators' replication view).
      const logged = await lsu.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM repl_conflicts WHERE tbl IN ('data_objects', 'collections')
          AND row_key IN (SELECT id::text FROM data_objects WHERE name IN ('f', 'l') AND collection_id =
                            (SELECT id FROM collections WHERE path = $1)
                          UNION SELECT id::text FROM collections WHERE path = $1)`,
        [dir],
      );
      expect(logged.rows[0]!.n).toBeGreaterThan(0);
    },
  );

  it(
    'an overwrite made at a site that does not hold the bytes carries its file time and mode to the site that does',
    { timeout: 120_000 },
    async () => {
      const dir = await newDir('forwarded');
      await lsu.client.upload(`${dir}/f`, testBytes(10, 5));
      await exchange();
      const v2 = await tulane.client.upload(`${dir}/f`, testBytes(20, 6), {
        overwrite: true,
        mtime: '2005-05-05T05:05:05.000000005Z',
        mode: 0o700,
      });
      // The holding site's answer: applied there, with the attributes.
      expect(v2).toMatchObject({
        version: 2,
        site: 'lsu',
        mode: 0o700,
        mtime: '2005-05-05T05:05:05.000000005Z',
      });
      await exchange();
      for (const site of [lsu, tulane]) {
        expect(await site.client.stat(`${dir}/f`), site.id).toMatchObject({
          version: 2,
          size: 20,
          mode: 0o700,
          mtime: '2005-05-05T05:05:05.000000005Z',
        });
      }
      // Without attributes, the file time of a forwarded overwrite becomes now and the mode stays.
      const before = Date.now();
      const v3 = await tulane.client.upload(`${dir}/f`, testBytes(5, 7), { overwrite: true });
      expect(v3.mode).toBe(0o700);
      expect(Date.parse(v3.mtime)).toBeGreaterThanOrEqual(before - 1000);
      // A link has no bytes to replace, at either site.
      await lsu.client.createSymlink(`${dir}/l`, 'f');
      await exchange();
      const refused = await tulane.http.request('PUT', '/api/v1/data', {
        query: { path: `${dir}/l`, overwrite: 'true' },
        headers: { 'content-type': 'application/octet-stream' },
        body: 'x',
      });
      expect(refused.status).toBe(409);
      expect((refused.body as { error: { code: string } }).error.code).toBe('IS_A_SYMLINK');
    },
  );

  it(
    'an attribute change that meets a content update made at another site: one outcome at both, told as a conflict',
    { timeout: 120_000 },
    async () => {
      const dir = await newDir('content');
      await lsu.client.upload(`${dir}/data.bin`, testBytes(50, 3));
      await exchange();
      await tulane.client.setAttributes(`${dir}/data.bin`, { mode: 0o600 });
      const v2 = await lsu.client.upload(`${dir}/data.bin`, testBytes(60, 4), { overwrite: true });
      expect(v2.version).toBe(2);
      await exchange();
      const [a, b] = await Promise.all([
        lsu.client.stat(`${dir}/data.bin`),
        tulane.client.stat(`${dir}/data.bin`),
      ]);
      expect(attrs(a)).toEqual(attrs(b));
      // The record changed in two ways at once: people are told, as for a rename against an update.
      for (const site of [lsu, tulane]) {
        const found = await conflictsAbout(site, dir);
        expect(
          found.map((c) => c.kind),
          site.id,
        ).toEqual(['update']);
        expect(found[0]!.changedFields).toEqual(expect.arrayContaining(['mode']));
      }
    },
  );
});
