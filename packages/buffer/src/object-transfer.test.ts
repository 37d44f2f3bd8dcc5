import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiConnection } from './http';
import type { TransferProgress, TransferRetry } from './progress';
import { ChecksumMismatchError, downloadFile, downloadRanges, type RangeReader } from './object-transfer';
import { closeServer, listenOnLoopback } from './testing/loopback-server';

/**
 * `downloadFile` against a real HTTP server on loopback that serves one object as the API does
 * (HEAD with its SHA-256 as ETag, ranged GETs honouring If-Range), and misbehaves on request.
 */
const KiB = 1024;
const quick = { retries: 3, baseDelayMs: 1, maxDelayMs: 2 };
let content = randomBytes(700 * KiB);
let etag = '';
const plan = {
  /** Ranged GETs whose body breaks off after this many bytes (one entry per GET, in order). */
  breakAfter: [] as (number | undefined)[],
  /** Ranged GETs that get one byte flipped (one entry per GET, in order). */
  corrupt: [] as boolean[],
};
const ranges: string[] = [];
let server: http.Server;
let api: ApiConnection;
let dir: string;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const headers = { etag, 'accept-ranges': 'bytes' };
    if (req.method === 'HEAD') {
      res.writeHead(200, { ...headers, 'content-length': String(content.length) });
      res.end();
      return;
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (!m || req.headers['if-range'] !== etag) {
      res.writeHead(200, { ...headers, 'content-length': String(content.length) });
      res.end(content);
      return;
    }
    ranges.push(req.headers.range!);
    const part = Buffer.from(content.subarray(Number(m[1]), Number(m[2]) + 1));
    if (plan.corrupt.shift()) part[part.length >> 1]! ^= 0x40;
    res.writeHead(206, { ...headers, 'content-length': String(part.length) });
    const cut = plan.breakAfter.shift();
    if (cut !== undefined) {
      res.write(part.subarray(0, cut), () => res.destroy());
      return;
    }
    res.end(part);
  });
  api = new ApiConnection({ baseUrl: await listenOnLoopback(server), token: 't' });
  dir = await mkdtemp(path.join(os.tmpdir(), 'tributary-download-'));
});

afterAll(async () => {
  await closeServer(server);
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  content = randomBytes(700 * KiB);
  etag = `"${createHash('sha256').update(content).digest('hex')}"`;
  plan.breakAfter = [];
  plan.corrupt = [];
  ranges.length = 0;
});

describe('downloadFile', () => {
  it('fetches the ranges in parallel into the file, hashing them in order, with progress up to the size', async () => {
    const local = path.join(dir, 'whole.bin');
    const progress: TransferProgress[] = [];
    const result = await downloadFile(api, '/home/a/f', local, {
      chunkBytes: 64 * KiB,
      streams: 4,
      onProgress: (p) => progress.push(p),
    });
    expect(result).toEqual({ size: content.length, sha256: etag.slice(1, -1) });
    expect((await readFile(local)).equals(content)).toBe(true);
    expect(ranges).toHaveLength(11);
    expect(progress.at(-1)).toMatchObject({ phase: 'transfer', bytes: content.length });
  });

  it('a range that breaks off resumes from its first missing byte', async () => {
    plan.breakAfter = [10 * KiB];
    const retries: TransferRetry[] = [];
    const local = path.join(dir, 'resumed.bin');
    await downloadFile(api, '/home/a/f', local, {
      chunkBytes: 256 * KiB,
      streams: 1,
      retry: quick,
      onRetry: (r) => retries.push(r),
    });
    expect((await readFile(local)).equals(content)).toBe(true);
    expect(ranges.slice(0, 2)).toEqual([`bytes=0-${256 * KiB - 1}`, `bytes=${10 * KiB}-${256 * KiB - 1}`]);
    expect(retries.map((r) => r.reason)).toEqual(['transient']);
  });

  it('downloads again when the whole object does not hash to the catalog checksum, then reports it', async () => {
    plan.corrupt = [false, true];
    const retries: TransferRetry[] = [];
    const local = path.join(dir, 'again.bin');
    await downloadFile(api, '/home/a/f', local, { chunkBytes: 256 * KiB, onRetry: (r) => retries.push(r) });
    expect((await readFile(local)).equals(content)).toBe(true);
    expect(retries.map((r) => r.reason)).toEqual(['checksum']);

    plan.corrupt = Array.from({ length: 20 }, () => true);
    await expect(
      downloadFile(api, '/home/a/f', path.join(dir, 'bad.bin'), {
        chunkBytes: 256 * KiB,
        checksumRetries: 1,
      }),
    ).rejects.toBeInstanceOf(ChecksumMismatchError);
  });

  it('stops with 409 when the object changes during the download (If-Range no longer matches)', async () => {
    const local = path.join(dir, 'changed.bin');
    let first = true;
    const failure = downloadFile(api, '/home/a/f', local, {
      chunkBytes: 64 * KiB,
      streams: 2,
      onProgress: () => {
        if (first) {
          first = false;
          etag = '"' + 'f'.repeat(64) + '"';
        }
      },
    });
    await expect(failure).rejects.toMatchObject({ status: 409, code: 'CHECKSUM_MISMATCH' });
  });

  it('stops when the caller cancels', async () => {
    const controller = new AbortController();
    const reason = new Error('cancelled by the user');
    const failure = downloadFile(api, '/home/a/f', path.join(dir, 'cancelled.bin'), {
      chunkBytes: 64 * KiB,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.bytes > 0) controller.abort(reason);
      },
    });
    await expect(failure).rejects.toBe(reason);
  });
});

describe('downloadRanges', () => {
  it('resumes after a prefix, writing ranges in order, and hashes the whole', async () => {
    const bytes = randomBytes(300 * KiB);
    const offset = 70 * KiB;
    const target = Buffer.alloc(bytes.length);
    bytes.copy(target, 0, 0, offset);
    const reads: number[] = [];
    const writes: number[] = [];
    const reader: RangeReader = {
      read: async (start, into, onProgress) => {
        reads.push(start);
        // Later ranges answer first: the writes must still come in order.
        await new Promise((r) => setTimeout(r, start === offset ? 20 : 1));
        bytes.copy(into, 0, start, start + into.length);
        onProgress(into.length);
        return into.length;
      },
    };
    const hash = createHash('sha256').update(bytes.subarray(0, offset));
    const sha = await downloadRanges(
      reader,
      {
        write: (b, position) => {
          writes.push(position);
          b.copy(target, position);
          return Promise.resolve();
        },
      },
      bytes.length,
      { offset, hash, chunkBytes: 64 * KiB, streams: 3 },
    );
    expect(sha).toBe(createHash('sha256').update(bytes).digest('hex'));
    expect(target.equals(bytes)).toBe(true);
    expect(reads[0]).toBe(offset);
    expect(writes).toEqual([...writes].sort((a, b) => a - b));
    expect(writes).toHaveLength(4);
  });
});
