import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalFsDriver } from './local-fs.driver';
import { StagingError } from './storage-driver';

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

describe('LocalFsDriver.adopt (committing a file already written, in place)', () => {
  let root: string;
  let driver: LocalFsDriver;
  let file: string;
  const bytes = Buffer.from('bytes that arrived chunk by chunk');

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'tributary-fs-'));
    driver = new LocalFsDriver(root);
    await driver.init();
    await mkdir(path.join(root, '.uploads'));
    file = path.join(root, '.uploads', 'session');
    await writeFile(file, bytes);
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('renames the file under the key: the same inode, no copy', async () => {
    const { ino } = await stat(file);
    const staged = await driver.adopt(file, { size: bytes.length, sha256: sha256(bytes) });
    expect(staged).toMatchObject({ size: bytes.length, sha256: sha256(bytes) });
    await staged.commit('1234.v1');
    expect((await stat(driver.resolve('1234.v1'))).ino).toBe(ino);
    expect(await readdir(path.join(root, '.uploads'))).toEqual([]);
    // Discarded after the commit (the catalog refused it): the bytes go back to the caller.
    await staged.discard();
    expect(await readFile(file)).toEqual(bytes);
    await expect(stat(driver.resolve('1234.v1'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('leaves the file where it was when discarded before a commit', async () => {
    const staged = await driver.adopt(file, { size: bytes.length, sha256: sha256(bytes) });
    await staged.discard();
    expect(await readFile(file)).toEqual(bytes);
    expect(await readdir(path.join(root, '.staging'))).toEqual([]);
  });

  it('refuses a file whose size is not the one measured, and files outside its own areas', async () => {
    await expect(
      driver.adopt(file, { size: bytes.length + 1, sha256: sha256(bytes) }),
    ).rejects.toBeInstanceOf(StagingError);
    expect(await readFile(file)).toEqual(bytes);
    const outside = path.join(os.tmpdir(), `tributary-outside-${process.pid}`);
    await writeFile(outside, bytes);
    try {
      await expect(driver.adopt(outside, { size: bytes.length, sha256: sha256(bytes) })).rejects.toThrow(
        /not a file this storage resource can adopt/,
      );
    } finally {
      await rm(outside, { force: true });
    }
    const staged = await driver.adopt(file, { size: bytes.length, sha256: sha256(bytes) });
    await staged.commit('77.v1');
    await expect(
      driver.adopt(driver.resolve('77.v1'), { size: bytes.length, sha256: sha256(bytes) }),
    ).rejects.toThrow(/not a file this storage resource can adopt/);
  });
});
