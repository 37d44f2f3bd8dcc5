import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { ApiError } from '@tributary/shared';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { ApiConnection, isTransient } from './http';
import { closeServer, listenOnLoopback } from './testing/loopback-server';
import { RequestTimeoutError, SiteUnreachableError } from './timeouts';
import { UploadSessionClient, type UploadSessionObserver } from './upload-session';

/**
 * The connection's timeouts against a real HTTP server on loopback that stalls, trickles or
 * answers late, as each test's path asks.
 */
const body = randomBytes(400_000);
let server: http.Server;
let baseUrl: string;
/** While true, /api/health never answers (the site is "paused"). */
let healthHangs = false;
let healthChecks = 0;
const uploaded: number[] = [];

const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    const ms = Number(url.searchParams.get('ms') ?? 0);
    switch (url.pathname) {
      case '/api/health':
        healthChecks++;
        if (healthHangs) return; // never answers
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('{"status":"ok"}');
        return;
      case '/hang':
        return; // never answers
      case '/json-late': {
        setTimeout(() => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end('{"late":true}');
        }, ms);
        return;
      }
      case '/missing':
        res.writeHead(404, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'no such thing' } }));
        return;
      case '/trickle': {
        // The body in 20 pieces, one every `ms`: slow, but always moving.
        res.writeHead(200, { 'content-length': String(body.length) });
        let at = 0;
        const step = body.length / 20;
        const timer = setInterval(() => {
          res.write(body.subarray(at, at + step));
          at += step;
          if (at >= body.length) {
            clearInterval(timer);
            res.end();
          }
        }, ms);
        res.on('close', () => clearInterval(timer));
        return;
      }
      case '/stall':
        // A first piece, then nothing.
        res.writeHead(200, { 'content-length': String(body.length) });
        res.write(body.subarray(0, 1000));
        return;
      case '/upload-slow': {
        // Reads the body a little at a time (pausing between), then answers.
        let received = 0;
        req.on('data', (piece: Buffer) => {
          received += piece.length;
          req.pause();
          setTimeout(() => req.resume(), ms);
        });
        req.on('end', () => {
          uploaded.push(received);
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify({ received }));
        });
        return;
      }
      case '/upload-stuck':
        // Never reads the body.
        req.pause();
        return;
      case '/upload-then-work': {
        // Reads the whole body at once, then works on it for `ms` before answering.
        let received = 0;
        req.on('data', (piece: Buffer) => (received += piece.length));
        req.on('end', () =>
          setTimeout(() => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ received }));
          }, ms),
        );
        return;
      }
      default:
        res.writeHead(404);
        res.end();
    }
  });
  baseUrl = await listenOnLoopback(server);
});

afterAll(() => closeServer(server));

beforeEach(() => {
  healthHangs = false;
  healthChecks = 0;
});

const timeouts = { metadataMs: 400, dataMs: 600 };

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  throw new Error('expected a failure');
}

async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; result: T }> {
  const started = Date.now();
  const result = await run();
  return { ms: Date.now() - started, result };
}

describe('metadata timeout', () => {
  it('fails a request the site does not answer with RequestTimeoutError after the metadata timeout, not retried', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    const { ms, result: err } = await timed(() => failure(api.json({ method: 'GET', url: '/hang' })));
    expect(err).toBeInstanceOf(RequestTimeoutError);
    expect((err as RequestTimeoutError).kind).toBe('metadata');
    expect((err as Error).message).toMatch(/did not answer GET \/hang within 0.4 s/);
    expect(ms).toBeGreaterThanOrEqual(380);
    expect(ms).toBeLessThan(1500);
    expect(isTransient(err)).toBe(false);
  });

  it('counts the whole answer, and lets an answer in time through', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    expect(await api.json({ method: 'GET', url: '/json-late?ms=100' })).toEqual({ late: true });
    expect(await failure(api.json({ method: 'GET', url: '/json-late?ms=800' }))).toBeInstanceOf(
      RequestTimeoutError,
    );
  });

  it('after a timeout, fails requests at once until the site answers again; probes still go out', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    await failure(api.json({ method: 'GET', url: '/hang' }));
    expect(api.unreachable).toBeInstanceOf(RequestTimeoutError);
    const { ms, result: err } = await timed(() =>
      failure(api.json({ method: 'GET', url: '/json-late?ms=0' })),
    );
    expect(err).toBeInstanceOf(SiteUnreachableError);
    expect((err as SiteUnreachableError).cause).toBeInstanceOf(RequestTimeoutError);
    expect(ms).toBeLessThan(50);
    // A probe is sent, and its answer ends the outage.
    await api.send({ method: 'GET', url: '/api/health', probe: true });
    expect(api.unreachable).toBeUndefined();
    expect(await api.json({ method: 'GET', url: '/json-late?ms=0' })).toEqual({ late: true });
  });

  it('one slow request while the site answers others is a timeout, not an outage', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    const hung = failure(api.json({ method: 'GET', url: '/hang' }));
    // Answers keep arriving while /hang waits.
    for (let i = 0; i < 5; i++) {
      await api.json({ method: 'GET', url: '/json-late?ms=0' });
      await wait(100);
    }
    expect(await hung).toBeInstanceOf(RequestTimeoutError);
    expect(api.unreachable).toBeUndefined();
  });

  it('an error answer is an answer: no timeout, no outage', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    expect(await failure(api.json({ method: 'GET', url: '/missing' }))).toBeInstanceOf(ApiError);
    expect(api.unreachable).toBeUndefined();
  });

  it('without timeouts nothing changes: a slow answer is waited for', async () => {
    const api = new ApiConnection({ baseUrl, token: 't' });
    expect(await api.json({ method: 'GET', url: '/json-late?ms=700' })).toEqual({ late: true });
  });
});

describe('data timeout: no progress, never the total', () => {
  // Over HttpIntoClient (receiveInto), node:http (receive) and fetch (an injected fetch).
  const readers: [string, (api: ApiConnection, url: string) => Promise<Uint8Array>][] = [
    [
      'receiveInto',
      async (api, url) => {
        const target = Buffer.alloc(body.length);
        const { filled } = await api.receiveInto({ method: 'GET', url }, target);
        return target.subarray(0, filled);
      },
    ],
    ['receive', async (api, url) => (await api.bytes({ method: 'GET', url })).body],
  ];

  for (const [name, read] of readers) {
    it(`${name}: a body that keeps moving for longer than the timeout arrives whole`, async () => {
      const api = new ApiConnection({ baseUrl, token: 't', timeouts });
      // 20 pieces 100 ms apart: 2 s in all, against a data timeout of 0.6 s.
      const { ms, result } = await timed(() => read(api, '/trickle?ms=100'));
      expect(ms).toBeGreaterThan(1500);
      expect(Buffer.from(result).equals(body)).toBe(true);
    });

    it(`${name}: a body that stops moving fails after the data timeout`, async () => {
      const api = new ApiConnection({ baseUrl, token: 't', timeouts });
      const { ms, result: err } = await timed(() => failure(read(api, '/stall')));
      expect(err).toBeInstanceOf(RequestTimeoutError);
      expect((err as RequestTimeoutError).kind).toBe('data');
      expect(ms).toBeGreaterThanOrEqual(580);
      expect(ms).toBeLessThan(2000);
    });
  }

  it('over an injected fetch too', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts, fetch: globalThis.fetch });
    const { body: got } = await api.bytes({ method: 'GET', url: '/trickle?ms=100' });
    expect(Buffer.from(got).equals(body)).toBe(true);
    expect(await failure(api.bytes({ method: 'GET', url: '/stall' }))).toBeInstanceOf(RequestTimeoutError);
  });

  it('the caller can still cancel: its own reason, not a timeout', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('not needed any more')), 100);
    const err = await failure(
      api.receiveInto({ method: 'GET', url: '/stall', signal: controller.signal }, Buffer.alloc(body.length)),
    );
    expect((err as Error).message).toBe('not needed any more');
    expect(api.unreachable).toBeUndefined();
  });

  it('an upload read slowly but steadily is not cut; one the site stops reading is', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    const big = randomBytes(12 * 1024 * 1024);
    const { ms, result } = await timed(() =>
      api.json<{ received: number }>({
        method: 'PUT',
        url: '/upload-slow?ms=10',
        body: big,
        bodyInPlace: true,
      }),
    );
    expect(result.received).toBe(big.length);
    // Slower than the data timeout in all (measured: 1 to 3 s), never stalled that long.
    expect(ms).toBeGreaterThan(timeouts.dataMs);

    const started = Date.now();
    const err = await failure(
      api.json({ method: 'PUT', url: '/upload-stuck', body: big, bodyInPlace: true }),
    );
    expect(err).toBeInstanceOf(RequestTimeoutError);
    expect(Date.now() - started).toBeLessThan(3000);
  }, 20_000);
});

describe('commit: the site works before it answers', () => {
  it('waits as long as the site answers its health checks, past the metadata timeout', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    const { ms, result } = await timed(() =>
      api.json<{ late: boolean }>({
        method: 'POST',
        url: '/json-late?ms=2500',
        body: '{}',
        timeout: 'commit',
      }),
    );
    expect(result).toEqual({ late: true });
    expect(ms).toBeGreaterThan(2400);
    expect(healthChecks).toBeGreaterThanOrEqual(1);
  });

  it('fails once the site has been silent for the metadata timeout', async () => {
    healthHangs = true;
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    const { ms, result: err } = await timed(() =>
      failure(api.json({ method: 'POST', url: '/json-late?ms=5000', body: '{}', timeout: 'commit' })),
    );
    expect(err).toBeInstanceOf(RequestTimeoutError);
    expect((err as RequestTimeoutError).kind).toBe('commit');
    // Silent: the next requests fail at once.
    expect(api.unreachable).toBeInstanceOf(RequestTimeoutError);
    expect(ms).toBeGreaterThanOrEqual(380);
    expect(ms).toBeLessThan(1500);
  });

  it('an upload whose body is in: waited for while the site lives, failed when it falls silent', async () => {
    const api = new ApiConnection({ baseUrl, token: 't', timeouts });
    const bytes = randomBytes(2 * 1024 * 1024);
    const done = await api.json<{ received: number }>({
      method: 'PUT',
      url: '/upload-then-work?ms=1500',
      body: bytes,
      bodyInPlace: true,
    });
    expect(done.received).toBe(bytes.length);
    healthHangs = true;
    const err = await failure(
      api.json({ method: 'PUT', url: '/upload-then-work?ms=4000', body: bytes, bodyInPlace: true }),
    );
    expect(err).toBeInstanceOf(RequestTimeoutError);
    expect((err as RequestTimeoutError).kind).toBe('commit');
  });
});

describe('upload session observer', () => {
  /** An upload session client over a fake API answering `answers`, and what its observer heard. */
  function observedClient(answers: Record<string, () => Response>) {
    const calls: string[] = [];
    const observer: UploadSessionObserver = {
      opened: async (s) => {
        await wait(20);
        calls.push(`opened ${s.id}`);
      },
      ended: (id) => calls.push(`ended ${id}`),
      abandoned: (id) => calls.push(`abandoned ${id}`),
    };
    const api = new ApiConnection({
      baseUrl,
      token: 't',
      uploadSessions: observer,
      fetch: fakeFetch(answers),
    });
    return { calls, client: new UploadSessionClient(api) };
  }

  /** A fake API: each route answers what the test puts in `answers`. */
  function fakeFetch(answers: Record<string, () => Response>): typeof fetch {
    const fake = (input: string, init?: RequestInit): Promise<Response> => {
      const url = new URL(input);
      const key = `${init?.method ?? 'GET'} ${url.pathname}`;
      const answer = answers[key];
      if (!answer) return Promise.reject(new TypeError(`fetch failed (${key})`));
      return Promise.resolve(answer());
    };
    return fake as typeof fetch;
  }
  const json = (status: number, value: unknown) =>
    new Response(JSON.stringify(value), { status, headers: { 'content-type': 'application/json' } });
  const session = { id: 's1', path: '/a', received: 0 };

  it('hears of a session opened (before it is used) and ended by complete or abort', async () => {
    const { calls, client } = observedClient({
      'POST /api/v1/uploads': () => json(201, session),
      'POST /api/v1/uploads/s1/complete': () => json(201, { path: '/a' }),
      'DELETE /api/v1/uploads/s1': () => new Response(null, { status: 204 }),
    });
    await client.create({ path: '/a' });
    expect(calls).toEqual(['opened s1']);
    await client.complete('s1');
    await client.abort('s1');
    expect(calls).toEqual(['opened s1', 'ended s1', 'ended s1']);
  });

  it('a session the site ended or no longer has is ended; one it could not abandon is abandoned', async () => {
    const { calls, client } = observedClient({
      'POST /api/v1/uploads/gone/complete': () =>
        json(409, { error: { code: 'UPLOAD_BASE_CHANGED', message: 'moved on' } }),
      'DELETE /api/v1/uploads/gone': () => json(404, { error: { code: 'NOT_FOUND', message: 'no' } }),
      'POST /api/v1/uploads/busy/complete': () => json(500, { error: { code: 'INTERNAL', message: 'oops' } }),
    });
    await failure(client.complete('gone'));
    await client.abort('gone');
    await failure(client.complete('busy'));
    // No answer at all (the fake's fetch fails): abandoned, and the failure is thrown.
    await failure(client.abort('busy'));
    expect(calls).toEqual(['ended gone', 'ended gone', 'abandoned busy']);
  });
});
