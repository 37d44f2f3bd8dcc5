import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { profileToxics, startWan, WAN_PROFILES, type Wan } from './wan';

/**
 * The WAN harness against a real Toxiproxy and a real HTTP server: a profile adds its round trip,
 * a cut refuses, a restore heals, a bandwidth limit slows a large answer, a reset breaks a request.
 */

let server: http.Server;
let upstream: string;
let wan: Wan;

beforeAll(async () => {
  const big = Buffer.alloc(200_000, 7);
  server = http.createServer((req, res) => {
    res.setHeader('connection', 'close');
    res.end(req.url === '/big' ? big : 'ok');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  wan = await startWan({ profile: 'campus', seed: 1 });
});

afterAll(async () => {
  await wan?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
});

/** Milliseconds one GET over a fresh connection takes, and its body's length. */
async function get(url: string): Promise<{ ms: number; bytes: number }> {
  const t0 = performance.now();
  const res = await fetch(url, { headers: { connection: 'close' } });
  const body = Buffer.from(await res.arrayBuffer());
  return { ms: performance.now() - t0, bytes: body.length };
}

async function best(url: string, n = 5): Promise<number> {
  let min = Infinity;
  for (let i = 0; i < n; i++) min = Math.min(min, (await get(url)).ms);
  return min;
}

describe('profiles', () => {
  it('split each round trip between the two directions', () => {
    expect(profileToxics(WAN_PROFILES.regional).map((t) => [t.stream, t.attributes.latency])).toEqual([
      ['upstream', 5],
      ['downstream', 5],
    ]);
    const far = profileToxics(WAN_PROFILES.intercontinental);
    expect(far.find((t) => t.type === 'reset_peer')?.toxicity).toBe(0.01);
  });

  it('a regional link adds at least its round trip to a request on a new connection', async () => {
    const link = await wan.link('profile-regional', upstream);
    await link.setProfile('regional');
    // A new connection: the SYN is local to Toxiproxy; the request and the answer cross the link once.
    const ms = await best(`${link.url}/`);
    expect(ms).toBeGreaterThanOrEqual(10);
    // Back to campus: the regional latency is replaced, not added to (timing a 1 ms link on a busy
    // machine says little, so its toxics are checked).
    await link.setProfile('campus');
    const toxics = await link.toxics();
    expect(toxics.map((t) => [t.stream, t.attributes.latency]).sort()).toEqual([['downstream', 1]]);
  });
});

describe('faults', () => {
  it('a cut link refuses connections until it is restored', async () => {
    const link = await wan.link('fault-cut', upstream);
    await link.cut();
    await expect(get(`${link.url}/`)).rejects.toThrow();
    await link.restore();
    expect((await get(`${link.url}/`)).bytes).toBe(2);
  });

  it('a bandwidth limit slows a large answer, and clearing faults lifts it', async () => {
    const link = await wan.link('fault-limit', upstream);
    await link.limit(1000); // 1000 kB/s: 200 kB take about 200 ms
    const slow = await get(`${link.url}/big`);
    expect(slow.bytes).toBe(200_000);
    expect(slow.ms).toBeGreaterThanOrEqual(150);
    await link.clearFaults();
    expect((await link.toxics()).every((t) => t.name.startsWith('profile-'))).toBe(true);
    expect((await get(`${link.url}/big`)).ms).toBeLessThan(slow.ms);
  });

  it('reset connections fail their requests; a blackholed link answers nothing', async () => {
    const link = await wan.link('fault-reset', upstream);
    await link.resetPeers(0);
    await expect(get(`${link.url}/`)).rejects.toThrow();
    await link.clearFaults();
    await link.blackhole();
    await expect(
      fetch(`${link.url}/`, { signal: AbortSignal.timeout(300) }).then((r) => r.text()),
    ).rejects.toThrow();
    await link.restore();
    expect((await get(`${link.url}/`)).bytes).toBe(2);
  });
});
