import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sendFile } from '../storage/file-io';
import { storageHasher } from './storage-hasher';

describe('storageHasher', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'tributary-hasher-'));
    await writeFile(path.join(dir, 'k'), Buffer.alloc(3 * 1024 * 1024, 7));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });
  const hasher = storageHasher<{ key: string }>({
    send: (key, range, out) => sendFile(path.join(dir, key), range, out),
  });

  it('hashes a file piece by piece, and answers null for one that is not there', async () => {
    const pieces: number[] = [];
    const result = await hasher.hash(
      { key: 'k' },
      (n) => {
        pieces.push(n);
        return Promise.resolve();
      },
      new AbortController().signal,
    );
    expect(result?.bytes).toBe(3 * 1024 * 1024);
    expect(pieces.reduce((a, b) => a + b, 0)).toBe(3 * 1024 * 1024);
    expect(
      await hasher.hash({ key: 'none' }, () => Promise.resolve(), new AbortController().signal),
    ).toBeNull();
  });

  it('a stop mid-file rejects the hash with the stop, and nothing is left uncaught', async () => {
    const stop = new AbortController();
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown): void => void uncaught.push(err);
    process.on('uncaughtException', onUncaught);
    try {
      const hashing = hasher.hash(
        { key: 'k' },
        () => {
          stop.abort(new Error('scrub stopped'));
          return Promise.resolve();
        },
        stop.signal,
      );
      await expect(hashing).rejects.toThrow('scrub stopped');
      await new Promise((r) => setTimeout(r, 50));
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', onUncaught);
    }
  });
});
