import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LocalFsDriver } from './local-fs.driver';
import { DraftGoneError, ObjectTooLargeError, StagingError } from './storage-driver';

const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex');

describe('LocalFsDriver drafts.adopt (committing a draft already written, in place)', () => {
  let root: string;
  let driver: LocalFsDriver;
  let file: string;
  const bytes = Buffer.from('bytes that arrived chunk by chunk');

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'tributary-fs-'));
    driver = new LocalFsDriver(root);
    await driver.init();
    await driver.drafts.create('session');
    await driver.drafts.write('session', Readable.from([bytes]), { start: 0 });
    file = path.join(root, '.uploads', 'session');
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('renames the draft under the key: the same inode, no copy', async () => {
    const { ino } = await stat(file);
    const staged = await driver.drafts.adopt('session', { size: bytes.length, sha256: sha256(bytes) });
    expect(staged).toMatchObject({ size: bytes.length, sha256: sha256(bytes) });
    await staged.commit('1234.v1');
    expect((await stat(driver.resolve('1234.v1'))).ino).toBe(ino);
    expect(await readdir(path.join(root, '.uploads'))).toEqual([]);
    // Discarded after the commit (the catalog refused it): the bytes go back to the caller.
    await staged.discard();
    expect(await readFile(file)).toEqual(bytes);
    await expect(stat(driver.resolve('1234.v1'))).rejects.toMatchObject({ code: 'ENOENT' });
  });

  it('leaves the draft where it was when discarded before a commit', async () => {
    const staged = await driver.drafts.adopt('session', { size: bytes.length, sha256: sha256(bytes) });
    await staged.discard();
    expect(await readFile(file)).toEqual(bytes);
    expect(await readdir(path.join(root, '.staging'))).toEqual([]);
  });

  it('refuses a draft whose size is not the one measured, and files outside its own areas', async () => {
    await expect(
      driver.drafts.adopt('session', { size: bytes.length + 1, sha256: sha256(bytes) }),
    ).rejects.toBeInstanceOf(StagingError);
    expect(await readFile(file)).toEqual(bytes);
    const outside = path.join(os.tmpdir(), `tributary-outside-${process.pid}`);
    await writeFile(outside, bytes);
    try {
      await expect(
        driver.drafts.adopt(outside, { size: bytes.length, sha256: sha256(bytes) }),
      ).rejects.toThrow(/not a file this storage resource can adopt/);
    } finally {
      await rm(outside, { force: true });
    }
    const staged = await driver.drafts.adopt('session', { size: bytes.length, sha256: sha256(bytes) });
    await staged.commit('77.v1');
    const object = path.relative(driver.drafts.dir, driver.resolve('77.v1'));
    await expect(driver.drafts.adopt(object, { size: bytes.length, sha256: sha256(bytes) })).rejects.toThrow(
      /not a file this storage resource can adopt/,
    );
  });
});

describe('LocalFsDriver drafts', () => {
  let root: string;
  let driver: LocalFsDriver;

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'tributary-fs-'));
    driver = new LocalFsDriver(root);
    await driver.init();
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('writes at an offset, composes, cuts back, reads and lists', async () => {
    await driver.drafts.create('a');
    expect(await driver.drafts.write('a', Readable.from([Buffer.from('hello')]), { start: 0 })).toBe(5);
    expect(await driver.drafts.write('a', Readable.from([Buffer.from('world')]), { start: 5 })).toBe(5);
    const writer = await driver.drafts.open('a');
    await writer.write(Buffer.from('W'), 0, 1, 5);
    await writer.truncate(9);
    await writer.close();
    const read = async (range?: { start: number; end: number }): Promise<string> => {
      const pieces: Buffer[] = [];
      for await (const piece of driver.drafts.read('a', range)) pieces.push(piece as Buffer);
      return Buffer.concat(pieces).toString();
    };
    expect(await read()).toBe('helloWorl');
    await driver.drafts.truncate('a', 5);
    expect(await read({ start: 1, end: 3 })).toBe('ell');
    expect(await driver.drafts.list()).toEqual(['a']);
    expect(await driver.drafts.exists('a')).toBe(true);
    await driver.drafts.remove('a');
    expect(await driver.drafts.exists('a')).toBe(false);
    expect(await driver.drafts.list()).toEqual([]);
  });

  it('tells a missing draft apart (DraftGoneError) and refuses ids that are not plain names', async () => {
    await expect(driver.drafts.truncate('gone', 0)).rejects.toBeInstanceOf(DraftGoneError);
    await expect(driver.drafts.open('gone')).rejects.toBeInstanceOf(DraftGoneError);
    await expect(
      driver.drafts.write('gone', Readable.from([Buffer.from('x')]), { start: 0 }),
    ).rejects.toBeInstanceOf(DraftGoneError);
    await expect(driver.drafts.create('../objects/x')).rejects.toThrow(/invalid draft id/);
    await expect(driver.drafts.remove('.hidden')).rejects.toThrow(/invalid draft id/);
  });
});

describe('LocalFsDriver stageAll and readSmall (many small objects at once)', () => {
  let root: string;
  let driver: LocalFsDriver;

  beforeEach(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'tributary-fs-'));
    driver = new LocalFsDriver(root);
    await driver.init();
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  // 3 (fsync each) and 40 (one flush of the file system) bodies.
  it.each([3, 40])(
    'stages %i bodies hashed, commits them under keys and reads them back whole',
    async (n) => {
      const bodies = Array.from({ length: n }, (_, i) => Buffer.from(`body ${i} `.repeat(i + 1)));
      const staged = await driver.stageAll(bodies);
      expect(staged.map((s) => [s.size, s.sha256])).toEqual(bodies.map((b) => [b.length, sha256(b)]));
      expect(await readdir(path.join(root, '.staging'))).toHaveLength(n);
      await Promise.all(staged.map((s, i) => s.commit(`k${i}`)));
      expect(await readdir(path.join(root, '.staging'))).toEqual([]);
      for (const [i, body] of bodies.entries())
        expect(await driver.readSmall(`k${i}`, body.length)).toEqual(body);
      // Staged bytes discarded before a commit leave nothing.
      const dropped = await driver.stageAll([Buffer.from('x')]);
      await dropped[0]!.discard();
      expect(await readdir(path.join(root, '.staging'))).toEqual([]);
    },
  );

  it('readSmall refuses a file larger than asked and a key that is not a plain name', async () => {
    const [staged] = await driver.stageAll([Buffer.alloc(100, 1)]);
    await staged!.commit('big');
    await expect(driver.readSmall('big', 99)).rejects.toBeInstanceOf(ObjectTooLargeError);
    await expect(driver.readSmall('../big', 1000)).rejects.toThrow(/invalid storage key/);
  });
});
