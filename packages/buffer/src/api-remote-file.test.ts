import { ApiError, ErrorCode } from '@tributary/shared';
import { describe, expect, it } from 'vitest';
import { ApiRemoteFile } from './api-remote-file';
import { ApiConnection } from './http';
import { patternBytes } from './testing/fake-remote';

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
    fetch: fetchImpl as typeof fetch,
  });
  return { api, served };
}

describe('ApiRemoteFile.readInto', () => {
  it('streams a range, reporting progress as the bytes arrive', async () => {
    const content = patternBytes(100 * KiB);
    const { api } = fakeApi(content);
    const file = await ApiRemoteFile.openForRead(api, '/home/a/f', { retry: quick });
    const target = Buffer.alloc(64 * KiB);
    const progress: number[] = [];
    expect(await file.readInto(10, target, (filled) => progress.push(filled))).toBe(64 * KiB);
    expect(target.equals(content.subarray(10, 10 + 64 * KiB))).toBe(true);
    expect(progress).toEqual([16, 32, 48, 64].map((k) => k * KiB));
  });

  it('a transfer that breaks off resumes from the first byte not yet received', async () => {
    const content = patternBytes(100 * KiB);
    const { api, served } = fakeApi(content, { breakAfter: (n) => (n === 0 ? 40 * KiB : undefined) });
    const file = await ApiRemoteFile.openForRead(api, '/home/a/f', { retry: quick });
    const target = Buffer.alloc(90 * KiB);
    const progress: number[] = [];
    expect(await file.readInto(5, target, (filled) => progress.push(filled))).toBe(90 * KiB);
    expect(target.equals(content.subarray(5, 5 + 90 * KiB))).toBe(true);
    expect(served.map((s) => s.range)).toEqual([
      `bytes=5-${5 + 90 * KiB - 1}`,
      `bytes=${5 + 40 * KiB}-${5 + 90 * KiB - 1}`,
    ]);
    // What was handed on before the break stays valid: progress only moves forward.
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThan(progress[i - 1]!);
  });

  it('stops at the end of the object, and gives up with the error when retries run out', async () => {
    const content = patternBytes(50 * KiB);
    const { api } = fakeApi(content, { breakAfter: () => 20 * KiB });
    const file = await ApiRemoteFile.openForRead(api, '/home/a/f', { retry: quick });
    await expect(file.readInto(0, Buffer.alloc(50 * KiB), () => undefined)).resolves.toBe(50 * KiB);
    const broken = fakeApi(content, { breakAfter: () => 0 });
    const failing = await ApiRemoteFile.openForRead(broken.api, '/home/a/f', { retry: quick });
    await expect(failing.readInto(0, Buffer.alloc(8 * KiB), () => undefined)).rejects.toThrow(/no answer/);
    expect(broken.served).toHaveLength(quick.retries + 1);
    const short = await ApiRemoteFile.openForRead(fakeApi(content).api, '/home/a/f');
    expect(await short.readInto(40 * KiB, Buffer.alloc(32 * KiB), () => undefined)).toBe(10 * KiB);
    expect(await short.readInto(60 * KiB, Buffer.alloc(4 * KiB), () => undefined)).toBe(0);
  });

  it('an error answer is not retried and surfaces as the API error', async () => {
    const { api, served } = fakeApi(patternBytes(10 * KiB), { status: () => 403 });
    const file = await ApiRemoteFile.openForRead(api, '/home/a/f', { retry: quick });
    const failure = file.readInto(0, Buffer.alloc(4 * KiB), () => undefined);
    await expect(failure).rejects.toBeInstanceOf(ApiError);
    await expect(failure).rejects.toMatchObject({ code: ErrorCode.PermissionDenied });
    expect(served).toHaveLength(1);
  });
});
