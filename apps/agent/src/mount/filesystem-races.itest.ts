import { constants } from 'node:fs';
import { ApiConnection } from '@tributary/buffer';
import type { CreatedTokenDto, EntryDto } from '@tributary/shared';
import { startSite, type SiteProcess, type TestUser } from '@tributary/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { NamespaceFs } from './filesystem';

/**
 * The kernel sends RELEASE after close(2) has returned, so it may reach the mount while a later
 * operation on the same file is in progress: a rename of the closed file, or a new open of it. The
 * mount's operations are driven here directly (no FUSE), against a real site, in exactly those
 * interleavings, which a real mount meets only by chance (fsx found them: a size after close, rename,
 * open and ftruncate or write was the size before).
 */
describe('a release that arrives during a later operation on the same file', () => {
  let site: SiteProcess;
  let alice: TestUser;
  let fs: NamespaceFs;
  let home: string;

  beforeAll(async () => {
    site = await startSite({ env: { LOGIN_RATE_LIMIT: '1000' } });
    alice = await site.createUser();
    const token = await alice.client.post<CreatedTokenDto>('/api/v1/tokens', {
      name: 'races',
      scope: 'write',
    });
    expect(token.status).toBe(201);
    home = alice.user.homePath;
    fs = new NamespaceFs({
      api: new ApiConnection({ baseUrl: site.url, token: token.body.secret }),
      remoteRoot: home,
      cacheTtlMs: 3000,
      bufferBytes: 1 << 20,
    });
  });
  afterAll(async () => {
    await fs?.closeAll();
    await site?.close();
  });

  const entry = async (name: string): Promise<EntryDto | undefined> => {
    const res = await alice.client.get<EntryDto>('/api/v1/namespace/stat', {
      query: { path: `${home}/${name}` },
    });
    return res.status === 200 ? res.body : undefined;
  };
  const bytes = async (name: string): Promise<Buffer> => {
    const res = await alice.client.get('/api/v1/data', { query: { path: `${home}/${name}` } });
    expect(res.status).toBe(200);
    return res.bytes;
  };

  /** A file with `content`, written and flushed through the mount, still open: its handle. */
  async function written(name: string, content: string): Promise<number> {
    const fh = fs.create(`/${name}`);
    const data = Buffer.from(content);
    await fs.write(fh, data, data.length, 0);
    await fs.flush(fh);
    return fh;
  }

  it('during a rename of the closed file: the renamed file opens, truncates and grows as itself', async () => {
    const fh = await written('r1', 'abcdefghij');
    // close(2) has returned (flush); the rename and the late release run together.
    await Promise.all([fs.rename('/r1', '/r2'), fs.release(fh)]);
    // Released: the rename does not bring the closed file back as open under its new name.
    expect(fs.openFiles).toBe(0);
    const again = await fs.open('/r2', constants.O_RDWR);
    await fs.ftruncate(again, 4);
    expect((await fs.fgetattr('/r2', again)).size).toBe(4);
    expect((await fs.getattr('/r2')).size).toBe(4);
    const more = Buffer.from('XYZ');
    await fs.write(again, more, more.length, 8);
    expect((await fs.fgetattr('/r2', again)).size).toBe(11);
    expect((await fs.getattr('/r2')).size).toBe(11);
    await fs.flush(again);
    await fs.release(again);
    expect(fs.openHandles).toBe(0);
    expect(await bytes('r2')).toEqual(Buffer.from('abcd\0\0\0\0XYZ'));
    expect(await entry('r1')).toBeUndefined();
  });

  it('during a rename of the closed file: a truncation by path afterwards is committed', async () => {
    const fh = await written('t1', 'abcdefghij');
    await Promise.all([fs.rename('/t1', '/t2'), fs.release(fh)]);
    await fs.truncate('/t2', 3);
    expect((await fs.getattr('/t2')).size).toBe(3);
    expect((await entry('t2'))?.size).toBe(3);
    expect(await bytes('t2')).toEqual(Buffer.from('abc'));
  });

  it('during a new open of the closed file: the new descriptor writes the file everyone sees', async () => {
    const fh = await written('o1', '0123456789');
    const [again] = await Promise.all([fs.open('/o1', constants.O_RDWR), fs.release(fh)]);
    const data = Buffer.from('ab');
    await fs.write(again, data, data.length, 12);
    expect((await fs.fgetattr('/o1', again)).size).toBe(14);
    expect((await fs.getattr('/o1')).size).toBe(14);
    await fs.rename('/o1', '/o2');
    await fs.flush(again);
    await fs.release(again);
    expect(fs.openHandles).toBe(0);
    expect(await bytes('o2')).toEqual(Buffer.from('0123456789\0\0ab'));
    expect(await entry('o1')).toBeUndefined();
  });

  // pjdfstest chmod/00.t 4: a new empty file, closed, then chmod 0111 by path while the release runs.
  for (const order of ['chmod first', 'release first', 'together'] as const) {
    it(`during a chmod of the closed new file (${order}): the mode set is kept`, async () => {
      const name = `m-${order.replace(' ', '-')}`;
      const fh = fs.create(`/${name}`, 0o644);
      await fs.flush(fh);
      if (order === 'chmod first') {
        await fs.chmod(`/${name}`, 0o111);
        await fs.release(fh);
      } else if (order === 'release first') {
        await fs.release(fh);
        await fs.chmod(`/${name}`, 0o111);
      } else {
        await Promise.all([fs.chmod(`/${name}`, 0o111), fs.release(fh)]);
      }
      expect((await fs.getattr(`/${name}`)).mode & 0o7777).toBe(0o111);
      expect((await entry(name))?.mode).toBe(0o111);
    });
  }

  // The same under load (pjdfstest chmod/00.t 4): libfuse answers chmod with a getattr, which can
  // come while the release is still sending the mode the chmod left on the open file.
  it('a getattr while the release sends the mode a chmod left on the file: the new mode', async () => {
    const fh = fs.create('/m-during', 0o644);
    await fs.flush(fh);
    await fs.chmod('/m-during', 0o111);
    const releasing = fs.release(fh);
    await new Promise((r) => setImmediate(r));
    expect((await fs.getattr('/m-during')).mode & 0o7777).toBe(0o111);
    await releasing;
    expect((await fs.getattr('/m-during')).mode & 0o7777).toBe(0o111);
    expect((await entry('m-during'))?.mode).toBe(0o111);
  });
});
