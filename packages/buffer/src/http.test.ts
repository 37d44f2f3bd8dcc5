import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { ApiError } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiConnection, TransportError } from './http';
import { answerTrouble, closeServer, listenOnLoopback } from './testing/loopback-server';

/** A real HTTP server on loopback whose answers each test chooses by path. */
const body = randomBytes(300_000);
let server: http.Server;
let baseUrl: string;
const seen: { url: string; authorization?: string; range?: string }[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    seen.push({ url: req.url ?? '', authorization: req.headers.authorization, range: req.headers.range });
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path === '/ok') {
      res.writeHead(200, { 'content-length': String(body.length) });
      // In several writes, so the client gets several pieces.
      for (let at = 0; at < body.length; at += 50_000) res.write(body.subarray(at, at + 50_000));
      res.end();
    } else {
      answerTrouble(path, res, body);
    }
  });
  baseUrl = await listenOnLoopback(server);
});

afterAll(() => closeServer(server));

describe('ApiConnection.receive over node:http', () => {
  it('hands over every piece with the status and headers, sends the token and headers, counts the request', async () => {
    let requests = 0;
    const api = new ApiConnection({ baseUrl, token: 'trib_secret', onRequest: () => void requests++ });
    const pieces: Uint8Array[] = [];
    let status = 0;
    const response = await api.receive(
      { method: 'GET', url: '/ok?x=1', headers: { range: 'bytes=0-' } },
      (piece, res) => {
        pieces.push(piece);
        status = res.status;
      },
    );
    expect(Buffer.concat(pieces).equals(body)).toBe(true);
    expect(status).toBe(200);
    expect(response.headers.get('Content-Length')).toBe(String(body.length));
    expect(requests).toBe(1);
    expect(seen.at(-1)).toMatchObject({
      url: '/ok?x=1',
      authorization: 'Bearer trib_secret',
      range: 'bytes=0-',
    });
  });

  it('reads a whole body into one buffer (bytes)', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const { response, body: received } = await api.bytes({ method: 'GET', url: '/ok' });
    expect(response.status).toBe(200);
    expect(Buffer.from(received).equals(body)).toBe(true);
  });

  it('stops early when onChunk returns false, and the connection serves the next request', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    let got = 0;
    await api.receive({ method: 'GET', url: '/ok' }, (piece) => {
      got += piece.length;
      return false;
    });
    expect(got).toBeGreaterThan(0);
    expect(got).toBeLessThan(body.length);
    const { body: again } = await api.bytes({ method: 'GET', url: '/ok' });
    expect(Buffer.from(again).equals(body)).toBe(true);
  });

  it('turns an error envelope into ApiError, and an answer without one into an error for its status', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    await expect(api.receive({ method: 'GET', url: '/missing' }, () => undefined)).rejects.toMatchObject({
      status: 404,
      code: 'NOT_FOUND',
      message: 'no such object',
    });
    const err = await api
      .receive({ method: 'GET', url: '/broken' }, () => undefined)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect(err).toMatchObject({ status: 500, code: 'INTERNAL' });
  });

  it('reports a body cut short as TransportError', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    await expect(api.receive({ method: 'GET', url: '/short' }, () => undefined)).rejects.toBeInstanceOf(
      TransportError,
    );
  });

  it('reports no answer at all as TransportError', async () => {
    const api = new ApiConnection({ baseUrl: 'http://127.0.0.1:1', token: 't' });
    await expect(api.receive({ method: 'GET', url: '/ok' }, () => undefined)).rejects.toBeInstanceOf(
      TransportError,
    );
  });

  it('rejects with the abort reason when the signal aborts mid-body', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const controller = new AbortController();
    const reason = new Error('not needed any more');
    const pending = api.receive({ method: 'GET', url: '/slow', signal: controller.signal }, () => {
      controller.abort(reason);
    });
    await expect(pending).rejects.toBe(reason);
  });

  it("passes the caller's own error from onChunk through unchanged", async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    const mine = new RangeError('mine');
    await expect(
      api.receive({ method: 'GET', url: '/ok' }, () => {
        throw mine;
      }),
    ).rejects.toBe(mine);
  });
});
