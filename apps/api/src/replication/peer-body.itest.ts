import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { BATCH_PATH, PEER_HEADERS, signRequest } from '@tributary/replication';
import { ErrorCode, type ErrorBody } from '@tributary/shared';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestSite, type TestSite } from '../test/test-site';

const PEER_KEY = 'k'.repeat(40);
/** More than the kernel's socket buffers hold, so an answer sent early arrives long before the end. */
const TOTAL = 64 * 1024 * 1024;

interface StreamedAnswer {
  status: number;
  body: string;
  /** Body bytes the client had handed to its socket when the answer arrived. */
  sentWhenAnswered: number;
}

/**
 * POSTs `total` bytes as fast as the server takes them and reports when the answer came: a server
 * that reads the whole body first answers only after everything was sent.
 */
function streamUntilAnswered(
  url: string,
  headers: Record<string, string>,
  total = TOTAL,
): Promise<StreamedAnswer> {
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered: number | undefined;
    const req = http.request(`${url}${BATCH_PATH}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json', 'content-length': String(total) },
    });
    req.on('response', (res) => {
      answered = sent;
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        resolve({
          status: res.statusCode ?? 0,
          body: Buffer.concat(chunks).toString(),
          sentWhenAnswered: sent,
        });
        req.destroy();
      });
    });
    // The server closes the connection after an early answer: later writes fail, which is expected.
    req.on('error', (err) => {
      if (answered === undefined) reject(err);
    });
    const chunk = Buffer.alloc(256 * 1024, 0x20);
    const pump = (): void => {
      while (answered === undefined && sent < total && !req.destroyed) {
        sent += chunk.length;
        if (!req.write(chunk)) {
          req.once('drain', pump);
          return;
        }
      }
      if (sent >= total && answered === undefined) req.end();
    };
    pump();
  });
}

function errorCode(answer: StreamedAnswer): string | undefined {
  return (JSON.parse(answer.body) as ErrorBody).error.code;
}

describe('peer routes: headers are checked before the body is read', () => {
  let site: TestSite;
  beforeAll(async () => {
    site = await startTestSite({
      REPLICATION_ENABLED: 'false',
      REPLICATION_PEERS: JSON.stringify([{ id: 'tulane', url: 'http://127.0.0.1:9', key: PEER_KEY }]),
    });
  });
  afterAll(async () => {
    await site?.close();
  });

  it('answers an unsigned request with 401 before the client has sent its large body', async () => {
    const answer = await streamUntilAnswered(site.url, {});
    expect(answer.status).toBe(401);
    expect(errorCode(answer)).toBe(ErrorCode.PeerUnauthorized);
    expect(answer.sentWhenAnswered).toBeLessThan(TOTAL / 2);
  });

  it('answers an unknown peer and a stale timestamp with 401 without reading the body', async () => {
    const unknown = signRequest('nobody', PEER_KEY, 'POST', BATCH_PATH, '');
    const stale = signRequest('tulane', PEER_KEY, 'POST', BATCH_PATH, '', Date.now() - 3600_000);
    for (const headers of [unknown, stale]) {
      const answer = await streamUntilAnswered(site.url, { ...headers });
      expect(answer.status).toBe(401);
      expect(errorCode(answer)).toBe(ErrorCode.PeerUnauthorized);
      expect(answer.sentWhenAnswered).toBeLessThan(TOTAL / 2);
    }
  });

  it('answers a malformed signature header with 401 without reading the body', async () => {
    const headers = { ...signRequest('tulane', PEER_KEY, 'POST', BATCH_PATH, '') };
    headers[PEER_HEADERS.signature] = 'not-hex';
    const answer = await streamUntilAnswered(site.url, headers);
    expect(answer.status).toBe(401);
    expect(answer.sentWhenAnswered).toBeLessThan(TOTAL / 2);
  });

  it('refuses a declared body over the limit with 413 before reading it', async () => {
    const headers = signRequest('tulane', PEER_KEY, 'POST', BATCH_PATH, '');
    const answer = await streamUntilAnswered(site.url, { ...headers }, 300 * 1024 * 1024);
    expect(answer.status).toBe(413);
    expect(errorCode(answer)).toBe(ErrorCode.PayloadTooLarge);
    expect(answer.sentWhenAnswered).toBeLessThan(TOTAL / 2);
  });

  it('reads a well-formed claim from a known peer, then refuses a wrong signature with 401', async () => {
    const body = JSON.stringify({ from: 'tulane', transactions: [] });
    const headers = signRequest('tulane', 'w'.repeat(40), 'POST', BATCH_PATH, body);
    const res = await fetch(`${site.url}${BATCH_PATH}`, {
      method: 'POST',
      headers: { ...headers, 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(401);
  });

  it('lets only two unverified bodies per claimed peer be read at once; a third is refused unread', async () => {
    // Two slow senders claiming to be tulane (wrong key: they would fail only once read in full).
    const slow = [0, 1].map(() => {
      const headers = signRequest('tulane', 'w'.repeat(40), 'POST', BATCH_PATH, 'x');
      const req = http.request(`${site.url}${BATCH_PATH}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'content-length': '1000000' },
      });
      req.on('error', () => undefined);
      req.write(randomBytes(1000));
      return req;
    });
    try {
      await new Promise((r) => setTimeout(r, 300));
      const headers = signRequest('tulane', 'w'.repeat(40), 'POST', BATCH_PATH, '');
      const answer = await streamUntilAnswered(site.url, { ...headers });
      expect(answer.status).toBe(429);
      expect(errorCode(answer)).toBe(ErrorCode.RateLimited);
      expect(answer.sentWhenAnswered).toBeLessThan(TOTAL / 2);
    } finally {
      for (const req of slow) req.destroy();
    }
    // Once they are gone, the peer's requests are read again.
    await new Promise((r) => setTimeout(r, 200));
    const body = JSON.stringify({ from: 'tulane', transactions: [] });
    const again = signRequest('tulane', 'w'.repeat(40), 'POST', BATCH_PATH, body);
    const res = await fetch(`${site.url}${BATCH_PATH}`, {
      method: 'POST',
      headers: { ...again, 'content-type': 'application/json' },
      body,
    });
    expect(res.status).toBe(401);
  });
});
