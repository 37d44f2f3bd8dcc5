import type { ApiConnection } from '@tributary/buffer';
import type { EntryDto } from '@tributary/shared';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { testEntry } from '../testing/entries';
import { BATCH_FILES, parseBatch, READ_AHEAD_TTL_MS, ReadAhead } from './read-ahead';

const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

function file(path: string, bytes: Buffer): EntryDto {
  return testEntry(path, { size: bytes.length, checksum: `sha256:${sha(bytes)}` });
}

/** A site that answers batch-read from `files`, counting the requests and the paths asked for. */
function site(files: Map<string, Buffer>) {
  const asked: string[][] = [];
  const api = {
    bytes: (request: { body: string }) => {
      const { paths } = JSON.parse(request.body) as { paths: string[] };
      asked.push(paths);
      const parts: Buffer[] = [];
      for (const p of paths) {
        const b = files.get(p);
        if (!b) return Promise.reject(new Error('404'));
        parts.push(Buffer.from(JSON.stringify({ path: p, size: b.length, sha256: sha(b) }) + '\n'), b);
      }
      return Promise.resolve({ response: {}, body: new Uint8Array(Buffer.concat(parts)) });
    },
  } as unknown as ApiConnection;
  return { api, asked };
}

describe('ReadAhead', () => {
  const bytes = (i: number): Buffer => Buffer.from(`file ${i} `.repeat(i + 1));
  const files = new Map(Array.from({ length: 100 }, (_, i) => [`/d/f${i}`, bytes(i)] as const));
  const entries = [...files].map(([p, b]) => file(p, b));

  it('reads a file and the ones listed after it in one request, and answers their opens from memory', async () => {
    const { api, asked } = site(files);
    const ahead = new ReadAhead(api);
    expect(await ahead.read(entries[0]!, entries.slice(1))).toEqual(bytes(0));
    expect(asked).toHaveLength(1);
    expect(asked[0]).toHaveLength(BATCH_FILES);
    for (let i = 1; i < BATCH_FILES; i++) expect(ahead.take(entries[i]!)).toEqual(bytes(i));
    // Taken once.
    expect(ahead.take(entries[1]!)).toBeUndefined();
    expect(ahead.take(entries[BATCH_FILES]!)).toBeUndefined();
  });

  it('does not answer with bytes of another version, or kept too long', async () => {
    let now = 0;
    const { api } = site(files);
    const ahead = new ReadAhead(api, () => now);
    await ahead.read(entries[0]!, entries.slice(1, 4));
    expect(ahead.take({ ...entries[1]!, checksum: 'sha256:' + '0'.repeat(64) })).toBeUndefined();
    now += READ_AHEAD_TTL_MS + 1;
    expect(ahead.take(entries[2]!)).toBeUndefined();
    expect(ahead.keptFiles).toBe(1);
    ahead.clear();
    expect(ahead.keptFiles).toBe(0);
  });

  it('reads as usual when the batch fails (a file gone meanwhile), and does not try that folder again at once', async () => {
    let now = 0;
    const { api, asked } = site(new Map([...files].slice(0, 3)));
    const ahead = new ReadAhead(api, () => now);
    expect(await ahead.read(entries[0]!, entries.slice(1, 10))).toBeUndefined();
    expect(ahead.keptFiles).toBe(0);
    expect(await ahead.read(entries[1]!, entries.slice(2, 10))).toBeUndefined();
    expect(asked).toHaveLength(1);
    now += READ_AHEAD_TTL_MS + 1;
    expect(await ahead.read(entries[1]!, entries.slice(2, 3))).toEqual(bytes(1));
    expect(asked).toHaveLength(2);
  });

  it('parses the answer and refuses a short one', () => {
    const a = Buffer.from('abc');
    const body = Buffer.concat([
      Buffer.from(JSON.stringify({ path: '/x', size: 3, sha256: sha(a) }) + '\n'),
      a,
    ]);
    expect(parseBatch(body).get('/x')?.bytes).toEqual(a);
    expect(() => parseBatch(body.subarray(0, body.length - 1))).toThrow(/ended inside/);
  });
});
