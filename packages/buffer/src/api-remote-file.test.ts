import { createHash } from 'node:crypto';
import { ApiError, ErrorCode } from '@tributary/shared';
import { describe, expect, it } from 'vitest';
import { ApiRemoteFile } from './api-remote-file';
import { ApiConnection } from './http';
import { testBytes } from '@tributary/testkit';

const KiB = 1024;
const quick = { retries: 3, baseDelayMs: 1, maxDelayMs: 2 };

interface Served {
  range: string | null;
}

/**
 * A fetch that serves one object with ranged GETs, as the API does, in 16 KiB pieces; `breakAfter`
 * makes the n-th GET's body break off after that many bytes, `status` answers it with an error.
 */
function fakeApi(
  content: Buffer,
  plan: { breakAfter?: (n: number) => number | undefined; status?: (n: number) => number | undefined } = {},
) {
  const served: Served[] = [];
  const fetchImpl = (_input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = new Headers(init?.headers);
    if (init?.method === 'HEAD') {
      return Promise.resolve(new Response(null, { headers: { 'content-length': String(content.length) } }));
    }
    const n = served.length;
    served.push({ range: headers.get('range') });
    const status = plan.status?.(n);
    if (status !== undefined) {
      return Promise.resolve(
        Response.json({ error: { code: ErrorCode.PermissionDenied, message: 'no' } }, { status }),
      );
    }
    const match = /^bytes=(\d+)-(\d+)$/.exec(headers.get('range') ?? '');
    const start = Number(match![1]);
    const end = Math.min(Number(match![2]), content.length - 1);
    const body = content.subarray(start, end + 1);
    const breakAt = plan.breakAfter?.(n);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (breakAt !== undefined && sent >= breakAt) {
          controller.error(new TypeError('terminated: other side closed'));
          return;
        }
        const piece = body.subarray(sent, Math.min(body.length, sent + 16 * KiB, breakAt ?? Infinity));
        sent += piece.length;
        if (piece.length > 0) controller.enqueue(new Uint8Array(piece));
        if (sent >= body.length) controller.close();
      },
    });
    return Promise.resolve(
      new Response(stream, {
        status: 206,
        headers: {
          'content-length': String(body.length),
          'content-range': `bytes ${start}-${end}/${content.length}`,
        },
      }),
    );
  };
  const api = new ApiConnection({
    baseUrl: 'http://api.test',
    token: 'trib_test',
    fetch: fetchImpl,
  });
  return { api, served };
}

/** Reads a range into a buffer and collects how many bytes were in place after each report. */
async function collect(file: ApiRemoteFile, offset: number, length: number) {
  const target = Buffer.alloc(length);
  const progress: number[] = [];
  const delivered = await file.readInto(offset, target, (filled) => progress.push(filled));
  return { delivered, bytes: target.subarray(0, delivered), progress };
}

describe('ApiRemoteFile.readInto', () => {
  it('reads a range into the target, reporting the bytes in place as they arrive', async () => {
    const content = testBytes(100 * KiB);
    const { api } = fakeApi(content);
    const file = await ApiRemoteFile.openForRead(api, '/home/a/f', { retry: quick });
    const got = await collect(file, 10, 64 * KiB);
    expect(got.delivered).toBe(64 * KiB);
    expect(got.bytes.equals(content.subarray(10, 10 + 64 * KiB))).toBe(true);
    expect(got.progress).toEqual([16, 32, 48, 64].map((k) => k * KiB));
  });

  it('a transfer that breaks off resumes from the first byte not yet in place', async () => {
    const content = testBytes(100 * KiB);
    const { api, served } = fakeApi(content, { breakAfter: (n) => (n === 0 ? 40 * KiB : undefined) });
    const file = await ApiRemoteFile.openForRead(api, '/home/a/f', { retry: quick });
    const got = await collect(file, 5, 90 * KiB);
    expect(got.delivered).toBe(90 * KiB);
    // Nothing delivered twice, nothing missing.
    expect(got.bytes.equals(content.subarray(5, 5 + 90 * KiB))).toBe(true);
    expect(served.map((s) => s.range)).toEqual([
      `bytes=5-${5 + 90 * KiB - 1}`,
      `bytes=${5 + 40 * KiB}-${5 + 90 * KiB - 1}`,
    ]);
  });

  it('stops at the end of the object, and gives up with the error when retries run out', async () => {
    const content = testBytes(50 * KiB);
    const { api } = fakeApi(content, { breakAfter: () => 20 * KiB });
    const file = await ApiRemoteFile.openForRead(api, '/home/a/f', { retry: quick });
    expect((await collect(file, 0, 50 * KiB)).bytes.equals(content)).toBe(true);
    const broken = fakeApi(content, { breakAfter: () => 0 });
    const failing = await ApiRemoteFile.openForRead(broken.api, '/home/a/f', { retry: quick });
    await expect(collect(failing, 0, 8 * KiB)).rejects.toThrow(/no answer/);
    expect(broken.served).toHaveLength(quick.retries + 1);
    const short = await ApiRemoteFile.openForRead(fakeApi(content).api, '/home/a/f');
    expect((await collect(short, 40 * KiB, 32 * KiB)).delivered).toBe(10 * KiB);
    expect((await collect(short, 60 * KiB, 4 * KiB)).delivered).toBe(0);
  });

  it('an error answer is not retried and surfaces as the API error', async () => {
    const { api, served } = fakeApi(testBytes(10 * KiB), { status: () => 403 });
    const file = await ApiRemoteFile.openForRead(api, '/home/a/f', { retry: quick });
    const failure = collect(file, 0, 4 * KiB);
    await expect(failure).rejects.toBeInstanceOf(ApiError);
    await expect(failure).rejects.toMatchObject({ code: ErrorCode.PermissionDenied });
    expect(served).toHaveLength(1);
  });
});

describe('ApiRemoteFile.read', () => {
  it('returns a range as a new buffer, shorter at the end of the object, empty past it', async () => {
    const content = testBytes(100 * KiB);
    const { api, served } = fakeApi(content, { breakAfter: (n) => (n === 0 ? 20 * KiB : undefined) });
    const file = await ApiRemoteFile.openForRead(api, '/home/a/f', { retry: quick });
    // The first transfer breaks off after 20 KiB and resumes from there.
    expect(Buffer.from(await file.read(1000, 50 * KiB)).equals(content.subarray(1000, 1000 + 50 * KiB))).toBe(
      true,
    );
    expect(served.map((s) => s.range)).toEqual([
      `bytes=1000-${1000 + 50 * KiB - 1}`,
      `bytes=${1000 + 20 * KiB}-${1000 + 50 * KiB - 1}`,
    ]);
    expect(Buffer.from(await file.read(90 * KiB, 20 * KiB)).equals(content.subarray(90 * KiB))).toBe(true);
    expect(await file.read(100 * KiB, 4 * KiB)).toHaveLength(0);
    expect(served).toHaveLength(3);
  });
});

describe('ApiRemoteFile writing', () => {
  it('sends each chunk written in order with the SHA-256 of every byte through it, one running hash', async () => {
    const puts: { offset: number; prefix: string | null; chunk: string | null }[] = [];
    const fetchImpl = (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const url = new URL(input instanceof Request ? input.url : input);
      const headers = new Headers(init?.headers);
      if (init?.method === 'POST' && url.pathname === '/api/v1/uploads')
        return Promise.resolve(Response.json({ id: 'session-1', received: 0 }, { status: 201 }));
      if (init?.method === 'PUT') {
        puts.push({
          offset: Number(url.searchParams.get('offset')),
          prefix: headers.get('x-prefix-sha256'),
          chunk: headers.get('x-chunk-sha256'),
        });
        return Promise.resolve(Response.json({ id: 'session-1' }));
      }
      return Promise.resolve(Response.json({ path: '/f', version: 1 }, { status: 201 }));
    };
    const api = new ApiConnection({ baseUrl: 'http://api.test', token: 't', fetch: fetchImpl });
    const file = ApiRemoteFile.openForWrite(api, '/home/a/f', { retry: quick });
    const data = testBytes(300 * KiB);
    const sha = (bytes: Uint8Array): string => createHash('sha256').update(bytes).digest('hex');
    // Two parts sent concurrently, as the write-behind does, then a third.
    await Promise.all([
      file.write(0, data.subarray(0, 100 * KiB)),
      file.write(100 * KiB, data.subarray(100 * KiB, 200 * KiB)),
    ]);
    await file.write(200 * KiB, data.subarray(200 * KiB));
    // Not in order: the chunk's own SHA-256 instead.
    await file.write(50 * KiB, data.subarray(50 * KiB, 60 * KiB));
    await file.close();
    expect(puts).toEqual([
      { offset: 0, prefix: sha(data.subarray(0, 100 * KiB)), chunk: null },
      { offset: 100 * KiB, prefix: sha(data.subarray(0, 200 * KiB)), chunk: null },
      { offset: 200 * KiB, prefix: sha(data), chunk: null },
      { offset: 50 * KiB, prefix: null, chunk: sha(data.subarray(50 * KiB, 60 * KiB)) },
    ]);
  });
});

describe('ApiConnection bodies sent in place', () => {
  it('sends the very bytes as a one-piece stream with their Content-Length, not a copy', async () => {
    const seen: { body: unknown; length: string | null; duplex: unknown }[] = [];
    const fetchImpl = (_input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      seen.push({
        body: init?.body,
        length: new Headers(init?.headers).get('content-length'),
        duplex: (init as { duplex?: unknown } | undefined)?.duplex,
      });
      return Promise.resolve(Response.json({}));
    };
    const api = new ApiConnection({ baseUrl: 'http://api.test', token: 't', fetch: fetchImpl });
    const bytes = testBytes(64 * KiB).subarray(KiB);
    await api.send({ method: 'PUT', url: '/x', body: bytes, bodyInPlace: true });
    await api.send({ method: 'PUT', url: '/x', body: bytes });
    expect(seen[0]!.body).toBeInstanceOf(ReadableStream);
    expect(seen[0]!.length).toBe(String(63 * KiB));
    expect(seen[0]!.duplex).toBe('half');
    const pieces: Uint8Array[] = [];
    for await (const piece of seen[0]!.body as AsyncIterable<Uint8Array>) pieces.push(piece);
    expect(pieces).toHaveLength(1);
    expect(pieces[0]).toBe(bytes);
    // Without the flag the body goes to fetch as it is given.
    expect(seen[1]!.body).toBe(bytes);
    expect(seen[1]!.length).toBeNull();
  });
});
