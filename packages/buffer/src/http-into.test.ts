import { randomBytes } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { ApiError } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiConnection, TransportError } from './http';
import { ChunkedDecoder } from './http-into';
import { answerTrouble, closeServer, listenOnLoopback } from './testing/loopback-server';

/**
 * `ApiConnection.receiveInto` over plain HTTP reads bodies straight into the caller's buffer with
 * an HTTP/1.1 reader of its own: these tests run it against a real `node:http` server on loopback
 * (and, for answers `node:http` would not send, a raw TCP server).
 */
const body = randomBytes(300_000);
let server: http.Server;
let baseUrl: string;
const seen: { url: string; authorization?: string; range?: string; host?: string; socket: number }[] = [];
const sockets = new Map<net.Socket, number>();

function rangeOf(header: string | undefined): { start: number; end: number } | undefined {
  const m = /^bytes=(\d+)-(\d*)$/.exec(header ?? '');
  if (!m) return undefined;
  return { start: Number(m[1]), end: m[2] ? Math.min(Number(m[2]), body.length - 1) : body.length - 1 };
}

beforeAll(async () => {
  server = http.createServer((req, res) => {
    if (!sockets.has(req.socket)) sockets.set(req.socket, sockets.size);
    seen.push({
      url: req.url ?? '',
      authorization: req.headers.authorization,
      range: req.headers.range,
      host: req.headers.host,
      socket: sockets.get(req.socket)!,
    });
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    const range = rangeOf(req.headers.range);
    if (path === '/ok') {
      const part = range ? body.subarray(range.start, range.end + 1) : body;
      res.writeHead(range ? 206 : 200, { 'content-length': String(part.length) });
      // In several writes, so the client reads several times.
      for (let at = 0; at < part.length; at += 50_000) res.write(part.subarray(at, at + 50_000));
      res.end();
    } else if (path === '/whole') {
      // Ignores the range: the whole object with 200.
      res.writeHead(200, { 'content-length': String(body.length) });
      res.end(body);
    } else if (path === '/chunked') {
      res.writeHead(200); // no length: node:http sends it chunked
      for (let at = 0; at < body.length; at += 7_777) res.write(body.subarray(at, at + 7_777));
      res.end();
    } else if (path === '/empty') {
      res.writeHead(200, { 'content-length': '0' });
      res.end();
    } else {
      answerTrouble(path, res, body);
    }
  });
  baseUrl = await listenOnLoopback(server);
});

afterAll(() => closeServer(server));

/** A TCP server that answers every connection with `answer` (as raw bytes), then ends it. */
async function rawServer(
  answer: (request: string) => Buffer | string,
): Promise<{ url: string; close(): void }> {
  const raw = net.createServer((socket) => {
    let request = '';
    socket.on('data', (data: Buffer) => {
      request += data.toString('latin1');
      if (request.includes('\r\n\r\n')) socket.end(answer(request));
    });
    socket.on('error', () => undefined);
  });
  return { url: await listenOnLoopback(raw), close: () => raw.close() };
}

describe('ApiConnection.receiveInto over plain HTTP', () => {
  it('reads a range into the target, reports progress, sends the token, range and host, counts the request', async () => {
    let requests = 0;
    const api = new ApiConnection({ baseUrl, token: 'trib_secret', onRequest: () => void requests++ });
    const target = Buffer.alloc(200_000);
    const progress: number[] = [];
    const { response, filled } = await api.receiveInto(
      { method: 'GET', url: '/ok?x=1', headers: { range: 'bytes=1000-200999' } },
      target,
      { onProgress: (n) => progress.push(n) },
    );
    expect(response.status).toBe(206);
    expect(response.headers.get('Content-Length')).toBe('200000');
    expect(filled).toBe(200_000);
    expect(target.equals(body.subarray(1000, 201_000))).toBe(true);
    // Growing, ending at the whole range.
    expect(progress.length).toBeGreaterThan(1);
    expect(progress).toEqual([...progress].sort((a, b) => a - b));
    expect(progress.at(-1)).toBe(200_000);
    expect(requests).toBe(1);
    expect(seen.at(-1)).toMatchObject({
      url: '/ok?x=1',
      authorization: 'Bearer trib_secret',
      range: 'bytes=1000-200999',
      host: new URL(baseUrl).host,
    });
  });

  it('keeps the connection for the next request', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const target = Buffer.alloc(body.length);
    for (let i = 0; i < 3; i++) {
      const { filled } = await api.receiveInto({ method: 'GET', url: '/ok' }, target);
      expect(filled).toBe(body.length);
      expect(target.equals(body)).toBe(true);
    }
    const last = seen.slice(-3).map((s) => s.socket);
    expect(new Set(last).size).toBe(1);
  });

  it('passes over the bytes `skip` asks for (a 200 answer to a range carries the whole object)', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const target = Buffer.alloc(50_000);
    const { response, filled } = await api.receiveInto(
      { method: 'GET', url: '/whole', headers: { range: 'bytes=123456-173455' } },
      target,
      { skip: (res) => (res.status === 200 ? 123_456 : 0) },
    );
    expect(response.status).toBe(200);
    expect(filled).toBe(50_000);
    expect(target.equals(body.subarray(123_456, 173_456))).toBe(true);
  });

  it('stops when the target is full, and the next request gets a new connection', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const small = Buffer.alloc(10_000);
    const { filled } = await api.receiveInto({ method: 'GET', url: '/ok' }, small);
    expect(filled).toBe(10_000);
    expect(small.equals(body.subarray(0, 10_000))).toBe(true);
    const first = seen.at(-1)!.socket;
    const whole = Buffer.alloc(body.length);
    expect((await api.receiveInto({ method: 'GET', url: '/ok' }, whole)).filled).toBe(body.length);
    expect(whole.equals(body)).toBe(true);
    expect(seen.at(-1)!.socket).not.toBe(first);
  });

  it('a body shorter than the target fills its start; an empty body fills nothing', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const target = Buffer.alloc(body.length + 500, 7);
    const { filled } = await api.receiveInto({ method: 'GET', url: '/ok' }, target);
    expect(filled).toBe(body.length);
    expect(target.subarray(0, body.length).equals(body)).toBe(true);
    expect(target.subarray(body.length).every((b) => b === 7)).toBe(true);
    expect((await api.receiveInto({ method: 'GET', url: '/empty' }, target)).filled).toBe(0);
  });

  it('decodes a chunked body', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const target = Buffer.alloc(body.length);
    const { filled } = await api.receiveInto({ method: 'GET', url: '/chunked' }, target);
    expect(filled).toBe(body.length);
    expect(target.equals(body)).toBe(true);
  });

  it('turns an error envelope into ApiError (and keeps the connection), a bare error status into one for its status', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const target = Buffer.alloc(100);
    await expect(api.receiveInto({ method: 'GET', url: '/missing' }, target)).rejects.toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
      message: 'no such object',
    });
    const err = await api.receiveInto({ method: 'GET', url: '/broken' }, target).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 500, code: 'INTERNAL' });
    expect(seen.at(-1)!.socket).toBe(seen.at(-2)!.socket);
  });

  it('reports a body cut short as TransportError, saying how far it got', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const failure = api.receiveInto({ method: 'GET', url: '/short' }, Buffer.alloc(body.length));
    await expect(failure).rejects.toBeInstanceOf(TransportError);
    await expect(failure).rejects.toThrow(`after 1000 of ${body.length} bytes`);
  });

  it('reports no answer at all as TransportError', async () => {
    const api = new ApiConnection({ baseUrl: 'http://127.0.0.1:1', token: 't' });
    await expect(api.receiveInto({ method: 'GET', url: '/ok' }, Buffer.alloc(10))).rejects.toBeInstanceOf(
      TransportError,
    );
  });

  it('rejects with the abort reason when the signal aborts mid-body, and writes nothing more', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const controller = new AbortController();
    const reason = new Error('not needed any more');
    const target = Buffer.alloc(body.length);
    let reported = 0;
    const pending = api.receiveInto({ method: 'GET', url: '/slow', signal: controller.signal }, target, {
      onProgress: (n) => {
        reported = n;
        controller.abort(reason);
      },
    });
    await expect(pending).rejects.toBe(reason);
    expect(reported).toBeGreaterThan(0);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(target.subarray(reported).every((b) => b === 0)).toBe(true);
    // Aborted before it starts: nothing is sent.
    const before = seen.length;
    await expect(
      api.receiveInto({ method: 'GET', url: '/ok', signal: AbortSignal.abort(reason) }, target),
    ).rejects.toBe(reason);
    expect(seen.length).toBe(before);
  });

  it("passes the caller's own error from onProgress through unchanged", async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const mine = new RangeError('mine');
    await expect(
      api.receiveInto({ method: 'GET', url: '/ok' }, Buffer.alloc(body.length), {
        onProgress: () => {
          throw mine;
        },
      }),
    ).rejects.toBe(mine);
  });

  it('sends the request again on a new connection when a kept one was closed by the server', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const target = Buffer.alloc(body.length);
    await api.receiveInto({ method: 'GET', url: '/ok' }, target);
    const first = seen.at(-1)!.socket;
    server.closeIdleConnections();
    await new Promise((resolve) => setTimeout(resolve, 20));
    target.fill(0);
    expect((await api.receiveInto({ method: 'GET', url: '/ok' }, target)).filled).toBe(body.length);
    expect(target.equals(body)).toBe(true);
    expect(seen.at(-1)!.socket).not.toBe(first);
  });

  it('reads a body that ends with the connection, and refuses answers that break HTTP', async () => {
    const untilClose = await rawServer(() =>
      Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nconnection: close\r\n\r\n'), body.subarray(0, 5000)]),
    );
    const tooLong = await rawServer(() =>
      Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\n'), body.subarray(0, 20)]),
    );
    const notHttp = await rawServer(() => 'SSH-2.0-OpenSSH\r\n\r\n');
    const badLength = await rawServer(() => 'HTTP/1.1 200 OK\r\ncontent-length: -4\r\n\r\n');
    try {
      const target = Buffer.alloc(6000);
      const api = new ApiConnection({ baseUrl: untilClose.url, token: 't' });
      expect((await api.receiveInto({ method: 'GET', url: '/' }, target)).filled).toBe(5000);
      expect(target.subarray(0, 5000).equals(body.subarray(0, 5000))).toBe(true);
      for (const [url, message] of [
        [tooLong.url, 'longer than announced'],
        [notHttp.url, 'not an HTTP/1.x answer'],
        [badLength.url, 'invalid Content-Length'],
      ] as const) {
        const failure = new ApiConnection({ baseUrl: url, token: 't' }).receiveInto(
          { method: 'GET', url: '/' },
          Buffer.alloc(100),
        );
        await expect(failure).rejects.toBeInstanceOf(TransportError);
        await expect(failure).rejects.toThrow(message);
      }
    } finally {
      for (const s of [untilClose, tooLong, notHttp, badLength]) s.close();
    }
  });

  it('refuses a header value with a line break instead of sending it', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    await expect(
      api.receiveInto(
        { method: 'GET', url: '/ok', headers: { range: 'bytes=0-1\r\nx-evil: 1' } },
        Buffer.alloc(1),
      ),
    ).rejects.toThrow(/line break/);
  });

  it('without the fast path (an injected fetch) gives the same result by copying', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', fetch: globalThis.fetch.bind(globalThis) });
    const target = Buffer.alloc(50_000);
    const progress: number[] = [];
    const { response, filled } = await api.receiveInto(
      { method: 'GET', url: '/whole', headers: { range: 'bytes=1000-50999' } },
      target,
      { skip: (res) => (res.status === 200 ? 1000 : 0), onProgress: (n) => progress.push(n) },
    );
    expect(response.status).toBe(200);
    expect(filled).toBe(50_000);
    expect(target.equals(body.subarray(1000, 51_000))).toBe(true);
    expect(progress.at(-1)).toBe(50_000);
  });
});

describe('ChunkedDecoder', () => {
  const encoded = Buffer.from('5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\ntrailer: x\r\n\r\n', 'latin1');

  it('decodes whatever the pieces are, split anywhere', () => {
    for (let split = 1; split < encoded.length; split++) {
      const decoder = new ChunkedDecoder();
      const out: Buffer[] = [];
      decoder.push(encoded.subarray(0, split), (d) => out.push(Buffer.from(d)));
      expect(decoder.ended).toBe(split === encoded.length);
      decoder.push(encoded.subarray(split), (d) => out.push(Buffer.from(d)));
      expect(decoder.ended).toBe(true);
      expect(Buffer.concat(out).toString()).toBe('hello, world');
    }
  });

  it('refuses a malformed size line, a missing CRLF after data, and bytes after the end', () => {
    expect(() => new ChunkedDecoder().push(Buffer.from('zz\r\n'), () => undefined)).toThrow(/size line/);
    expect(() => new ChunkedDecoder().push(Buffer.from('2\r\nabX\r\n'), () => undefined)).toThrow(/CRLF/);
    expect(() => new ChunkedDecoder().push(Buffer.from('0\r\n\r\nextra'), () => undefined)).toThrow(
      /after the end/,
    );
  });
});
