import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { measureScrubVsSha256 } from './scrub-throughput';

describe('measureScrubVsSha256', () => {
  let dir: string;
  const files = ['a.bin', 'b.bin', 'sub dir/c.bin', 'empty.bin'];

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'scrub-throughput-'));
    await writeFile(path.join(dir, 'a.bin'), Buffer.alloc(3 * 1024 * 1024, 7));
    await writeFile(path.join(dir, 'b.bin'), Buffer.from('hello\n'));
    await mkdir(path.join(dir, 'sub dir'));
    await writeFile(path.join(dir, 'sub dir/c.bin'), Buffer.alloc(100_000, 1));
    await writeFile(path.join(dir, 'empty.bin'), Buffer.alloc(0));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('hashes every file both ways and reports both throughputs and their ratio', async () => {
    const r = await measureScrubVsSha256(dir, files, { rounds: 2 });
    expect(r).toMatchObject({ files: 4, bytes: 3 * 1024 * 1024 + 6 + 100_000, rounds: 2 });
    expect(r.scrubSeconds).toBeGreaterThan(0);
    expect(r.sha256sumSeconds).toBeGreaterThan(0);
    expect(r.ratio).toBeCloseTo(r.sha256sumSeconds / r.scrubSeconds, 10);
    expect(r.scrubMiBs).toBeCloseTo(r.bytes / 1024 / 1024 / r.scrubSeconds, 6);
  });

  it('fails when a file is missing', async () => {
    await expect(measureScrubVsSha256(dir, ['a.bin', 'nope.bin'])).rejects.toThrow();
  });
});
