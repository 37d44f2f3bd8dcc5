import { ErrorCode, type ErrorBody } from '@tributary/shared';
import { sleep, testBytes, uniqueName, type FederationSite } from '@tributary/testkit';
import { describe, expect, it } from 'vitest';
import { addCopy, useSites } from '../test/copies';
import { expectError } from '../test/test-site';
import { BATCH_READ_CONTENT_TYPE } from './byte-answers';

/** How long a site forgets a peer that did not answer, here (the default is 30 s). */
const DOWN_MS = 6000;

/**
 * Reads fail over (docs/placement.md, "Reads"): three real site processes; an object written at lsu
 * gets a second good copy at uno, made in the test itself (the file copied into uno's storage and
 * uno's copy row inserted at uno, as the mover would leave them; the mover is not needed for this).
 * tulane holds no copy: it reads through lsu (the first site by id) or, when lsu does not answer,
 * uno. The connect and first-byte timeout is the default (PEER_CONNECT_TIMEOUT_MS 1000).
 */
describe('failover reads', () => {
  const { fed, exchange } = useSites(['lsu', 'tulane', 'uno'], { PEER_DOWN_MS: String(DOWN_MS) });

  async function timedRead(
    site: FederationSite,
    path: string,
    range?: { start: number; end: number },
  ): Promise<{ ms: number; bytes: Buffer }> {
    const started = performance.now();
    const res = await site.client.download(path, range);
    const bytes = Buffer.from(await res.arrayBuffer());
    return { ms: performance.now() - started, bytes };
  }

  async function objectWithTwoCopies(seed: number): Promise<{ path: string; bytes: Buffer }> {
    const [lsu, uno] = [fed().site('lsu'), fed().site('uno')];
    const dir = `/projects/${uniqueName('failover')}`;
    await lsu.client.createCollection(dir);
    const bytes = testBytes(300_000, seed);
    const entry = await lsu.client.upload(`${dir}/f.bin`, bytes);
    await exchange();
    await addCopy(fed(), lsu, uno, entry.id);
    await exchange();
    return { path: `${dir}/f.bin`, bytes };
  }

  /** Every read route at tulane gives the object's bytes: whole, a range, HEAD, a batch read. */
  async function readsAtTulane(path: string, bytes: Buffer): Promise<void> {
    const tulane = fed().site('tulane');
    expect((await timedRead(tulane, path)).bytes.equals(bytes)).toBe(true);
    const range = await timedRead(tulane, path, { start: 1000, end: 1999 });
    expect(range.bytes.equals(bytes.subarray(1000, 2000))).toBe(true);
    const head = await fetch(tulane.client.downloadUrl(path), {
      method: 'HEAD',
      headers: { authorization: `Bearer ${fed().adminToken}` },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-length')).toBe(String(bytes.length));
    const batch = await fetch(`${tulane.url}/api/v1/data/batch-read`, {
      method: 'POST',
      headers: { authorization: `Bearer ${fed().adminToken}`, 'content-type': 'application/json' },
      body: JSON.stringify({ paths: [path] }),
    });
    expect(batch.status).toBe(200);
    expect(batch.headers.get('content-type')).toBe(BATCH_READ_CONTENT_TYPE);
    const body = Buffer.from(await batch.arrayBuffer());
    const newline = body.indexOf(0x0a);
    expect(body.subarray(newline + 1).equals(bytes)).toBe(true);
  }

  it('the origin stopped (SIGSTOP): readable at the other two within the bound, then fast', async () => {
    const [lsu, tulane, uno] = fed().sites;
    const { path, bytes } = await objectWithTwoCopies(1);
    // Both answer: tulane reads through lsu.
    expect((await timedRead(tulane!, path)).bytes.equals(bytes)).toBe(true);
    await lsu!.kill('SIGSTOP');
    try {
      // lsu's kernel still accepts the connection; nothing answers it.
      const first = await timedRead(tulane!, path);
      expect(first.bytes.equals(bytes)).toBe(true);
      expect(first.ms, 'the first read waits one timeout (1 s) at most, then reads from uno').toBeLessThan(
        2500,
      );
      const local = await timedRead(uno!, path);
      expect(local.bytes.equals(bytes)).toBe(true);
      // lsu is remembered as down: tried last, so no read waits for it again.
      for (let i = 0; i < 3; i++) {
        const next = await timedRead(tulane!, path);
        expect(next.bytes.equals(bytes)).toBe(true);
        expect(next.ms, `read ${i + 2} does not wait for lsu`).toBeLessThan(900);
      }
      await readsAtTulane(path, bytes);
    } finally {
      await lsu!.kill('SIGCONT');
    }
  }, 180_000);

  it('the origin killed (SIGKILL): readable at the other two, and none reachable is 503 with Retry-After', async () => {
    const [lsu, tulane, uno] = fed().sites;
    const { path, bytes } = await objectWithTwoCopies(2);
    // tulane has forgotten the stop of the test before.
    await sleep(DOWN_MS + 200);
    expect((await timedRead(tulane!, path)).bytes.equals(bytes)).toBe(true);
    await lsu!.kill('SIGKILL');
    try {
      const first = await timedRead(tulane!, path);
      expect(first.bytes.equals(bytes)).toBe(true);
      expect(first.ms).toBeLessThan(2500);
      expect((await timedRead(uno!, path)).bytes.equals(bytes)).toBe(true);
      for (let i = 0; i < 3; i++) {
        const next = await timedRead(tulane!, path);
        expect(next.bytes.equals(bytes)).toBe(true);
        expect(next.ms).toBeLessThan(900);
      }
      await readsAtTulane(path, bytes);

      // No copy reachable: lsu dead, uno stopped. An answer, not a hang or a 500.
      await uno!.kill('SIGSTOP');
      try {
        const started = performance.now();
        const res = await tulane!.http.get<ErrorBody>('/api/v1/data', { query: { path } });
        expect(performance.now() - started).toBeLessThan(5000);
        expectError(res, 503, ErrorCode.ReplicaUnavailable);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      } finally {
        await uno!.kill('SIGCONT');
      }
    } finally {
      await lsu!.start();
    }
  }, 180_000);
  it('a stream that stalls midway (its site stopped) goes on from the other copy: the bytes arrive whole', async () => {
    const [lsu, tulane, uno] = fed().sites;
    const dir = `/projects/${uniqueName('stall')}`;
    await lsu!.client.createCollection(dir);
    const bytes = testBytes(48 * 1024 * 1024, 3);
    const entry = await lsu!.client.upload(`${dir}/big.bin`, bytes);
    await exchange();
    await addCopy(fed(), lsu!, uno!, entry.id);
    await exchange();
    // tulane has forgotten the sites stopped in the tests before: it reads through lsu first.
    await sleep(DOWN_MS + 200);
    const res = await fetch(tulane!.client.downloadUrl(`${dir}/big.bin`), {
      headers: { authorization: `Bearer ${fed().adminToken}` },
    });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const pieces: Uint8Array[] = [];
    let received = 0;
    // Read a little, slowly, so most of the object is still to come from lsu when it stops.
    while (received < 1024 * 1024) {
      const { value, done } = await reader.read();
      if (done) break;
      pieces.push(value);
      received += value.length;
    }
    await lsu!.kill('SIGSTOP');
    const stopped = performance.now();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        pieces.push(value);
        received += value.length;
      }
    } finally {
      await lsu!.kill('SIGCONT');
    }
    // The rest came after tulane gave lsu up (10 s without bytes), so the stall was met, not avoided.
    expect(performance.now() - stopped).toBeGreaterThan(9000);
    expect(received).toBe(bytes.length);
    expect(Buffer.concat(pieces).equals(bytes)).toBe(true);
  }, 240_000);
});
