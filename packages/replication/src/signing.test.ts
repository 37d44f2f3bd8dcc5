import { describe, expect, it } from 'vitest';
import {
  MemoryNonceStore,
  PEER_HEADERS,
  SIGNATURE_WINDOW_MS,
  signRequest,
  signResponse,
  verifyRequest,
  verifyResponse,
  type NonceStore,
  type SignedHeaders,
} from './signing';

const KEYS: Record<string, string> = { lsu: 'secret-lsu-tulane', uno: 'secret-uno-tulane' };
const keyOf = (peer: string): string | undefined => KEYS[peer];
const NOW = 1_800_000_000_000;
const PATH = '/api/v1/replication/peer/batch';
const BODY = JSON.stringify({ origin: 'lsu', txs: [{ seq: 1, changes: [] }] });

function signed(overrides: Partial<{ site: string; key: string; now: number; body: string }> = {}) {
  return signRequest(
    overrides.site ?? 'lsu',
    overrides.key ?? KEYS.lsu!,
    'POST',
    PATH,
    overrides.body ?? BODY,
    overrides.now ?? NOW,
  );
}

function verify(
  headers: Record<string, string | string[] | undefined>,
  options: Partial<{ method: string; path: string; body: string; now: number; nonces: NonceStore }> = {},
) {
  return verifyRequest(
    headers,
    options.method ?? 'POST',
    options.path ?? PATH,
    options.body ?? BODY,
    keyOf,
    options.nonces ?? new MemoryNonceStore(),
    options.now ?? NOW,
  );
}

describe('signRequest / verifyRequest', () => {
  it('a correctly signed request verifies and names the peer and nonce', async () => {
    const headers = signed();
    expect(headers[PEER_HEADERS.site]).toBe('lsu');
    expect(headers[PEER_HEADERS.timestamp]).toBe(String(NOW));
    expect(headers[PEER_HEADERS.nonce]).toMatch(/^[0-9a-f]{32}$/);
    expect(headers[PEER_HEADERS.signature]).toMatch(/^[0-9a-f]{64}$/);
    const result = await verify({ ...headers });
    expect(result).toEqual({ ok: true, peer: 'lsu', nonce: headers[PEER_HEADERS.nonce] });
  });

  it('accepts binary bodies equal to the signed string', async () => {
    const headers = signed();
    const result = await verifyRequest(
      { ...headers },
      'POST',
      PATH,
      Buffer.from(BODY, 'utf8'),
      keyOf,
      new MemoryNonceStore(),
      NOW,
    );
    expect(result.ok).toBe(true);
  });

  it('the method is compared case-insensitively', async () => {
    const headers = signRequest('lsu', KEYS.lsu!, 'post', PATH, BODY, NOW);
    expect((await verify({ ...headers }, { method: 'POST' })).ok).toBe(true);
  });

  it('two signatures of the same request use different nonces', () => {
    const a = signed();
    const b = signed();
    expect(a[PEER_HEADERS.nonce]).not.toBe(b[PEER_HEADERS.nonce]);
    expect(a[PEER_HEADERS.signature]).not.toBe(b[PEER_HEADERS.signature]);
  });

  it('takes the first value of a repeated header', async () => {
    const headers = signed();
    const result = await verify({
      ...headers,
      [PEER_HEADERS.site]: ['lsu', 'uno'],
    });
    expect(result.ok).toBe(true);
  });

  describe.each(Object.values(PEER_HEADERS))('missing header %s', (name) => {
    it('is refused as missing-headers', async () => {
      const headers: Record<string, string | undefined> = { ...signed() };
      delete headers[name];
      const result = await verify(headers);
      expect(result.ok).toBe(false);
      expect(result).toMatchObject({ ok: false, reason: 'missing-headers' });
    });
  });

  it('an empty header counts as missing', async () => {
    const result = await verify({ ...signed(), [PEER_HEADERS.signature]: '' });
    expect(result).toMatchObject({ ok: false, reason: 'missing-headers' });
  });

  it('a malformed nonce is refused as missing-headers', async () => {
    const headers = signed();
    for (const nonce of [
      'xyz',
      headers[PEER_HEADERS.nonce].toUpperCase(),
      headers[PEER_HEADERS.nonce] + '0',
    ]) {
      const result = await verify({ ...headers, [PEER_HEADERS.nonce]: nonce });
      expect(result).toMatchObject({ ok: false, reason: 'missing-headers' });
    }
  });

  it('an unknown peer is refused and named', async () => {
    const headers = signed({ site: 'xavier', key: 'whatever' });
    const result = await verify({ ...headers });
    expect(result).toEqual({ ok: false, reason: 'unknown-peer', peer: 'xavier' });
  });

  it('a timestamp too far in the past is stale', async () => {
    const headers = signed({ now: NOW - SIGNATURE_WINDOW_MS - 1 });
    expect(await verify({ ...headers })).toEqual({ ok: false, reason: 'stale-timestamp', peer: 'lsu' });
  });

  it('a timestamp too far in the future is stale', async () => {
    const headers = signed({ now: NOW + SIGNATURE_WINDOW_MS + 1 });
    expect(await verify({ ...headers })).toEqual({ ok: false, reason: 'stale-timestamp', peer: 'lsu' });
  });

  it('timestamps exactly at the window edges are accepted', async () => {
    expect((await verify({ ...signed({ now: NOW - SIGNATURE_WINDOW_MS }) })).ok).toBe(true);
    expect((await verify({ ...signed({ now: NOW + SIGNATURE_WINDOW_MS }) })).ok).toBe(true);
  });

  it('a non-numeric timestamp is stale', async () => {
    const result = await verify({ ...signed(), [PEER_HEADERS.timestamp]: 'yesterday' });
    expect(result).toMatchObject({ ok: false, reason: 'stale-timestamp' });
  });

  it('a timestamp changed after signing (still within the window) breaks the signature', async () => {
    const headers = signed();
    const result = await verify({ ...headers, [PEER_HEADERS.timestamp]: String(NOW + 1) });
    expect(result).toMatchObject({ ok: false, reason: 'bad-signature' });
  });

  it('a changed body breaks the signature', async () => {
    const result = await verify({ ...signed() }, { body: BODY.replace('"seq":1', '"seq":2') });
    expect(result).toEqual({ ok: false, reason: 'bad-signature', peer: 'lsu' });
  });

  it('a changed path breaks the signature', async () => {
    const result = await verify({ ...signed() }, { path: '/api/v1/replication/peer/snapshot' });
    expect(result).toMatchObject({ ok: false, reason: 'bad-signature' });
  });

  it('a changed method breaks the signature', async () => {
    const result = await verify({ ...signed() }, { method: 'GET' });
    expect(result).toMatchObject({ ok: false, reason: 'bad-signature' });
  });

  it('a changed nonce breaks the signature', async () => {
    const headers = signed();
    const other = signed()[PEER_HEADERS.nonce];
    const result = await verify({ ...headers, [PEER_HEADERS.nonce]: other });
    expect(result).toMatchObject({ ok: false, reason: 'bad-signature' });
  });

  it("a request signed with another peer's key is refused", async () => {
    // uno's key, but claiming to be lsu
    const headers = signed({ key: KEYS.uno! });
    expect(await verify({ ...headers })).toMatchObject({ ok: false, reason: 'bad-signature' });
  });

  it('a truncated or non-hex signature is refused without throwing', async () => {
    const headers = signed();
    for (const signature of [headers[PEER_HEADERS.signature].slice(0, 10), 'zz'.repeat(32)]) {
      const result = await verify({ ...headers, [PEER_HEADERS.signature]: signature });
      expect(result).toMatchObject({ ok: false, reason: 'bad-signature' });
    }
  });

  it('a bad signature does not consume the nonce', async () => {
    const nonces = new MemoryNonceStore();
    const headers = signed();
    expect((await verify({ ...headers }, { nonces, body: 'forged' })).ok).toBe(false);
    expect((await verify({ ...headers }, { nonces })).ok).toBe(true);
  });

  it('a replayed request is refused the second time', async () => {
    const nonces = new MemoryNonceStore();
    const headers: SignedHeaders = signed();
    expect((await verify({ ...headers }, { nonces })).ok).toBe(true);
    expect(await verify({ ...headers }, { nonces, now: NOW + 1000 })).toEqual({
      ok: false,
      reason: 'replayed',
      peer: 'lsu',
    });
  });
});

describe('signResponse / verifyResponse', () => {
  const nonce = 'a'.repeat(32);
  const body = '{"have":42}';

  it('a signed response verifies', () => {
    const signature = signResponse('k', nonce, 200, body);
    expect(verifyResponse('k', nonce, 200, body, signature)).toBe(true);
    expect(verifyResponse('k', nonce, 200, Buffer.from(body), signature)).toBe(true);
  });

  it('a missing signature is refused', () => {
    expect(verifyResponse('k', nonce, 200, body, null)).toBe(false);
  });

  it('a forged acknowledgement (changed body) is refused', () => {
    const signature = signResponse('k', nonce, 200, body);
    expect(verifyResponse('k', nonce, 200, '{"have":99}', signature)).toBe(false);
  });

  it('a changed status, another nonce or another key is refused', () => {
    const signature = signResponse('k', nonce, 200, body);
    expect(verifyResponse('k', nonce, 500, body, signature)).toBe(false);
    expect(verifyResponse('k', 'b'.repeat(32), 200, body, signature)).toBe(false);
    expect(verifyResponse('other', nonce, 200, body, signature)).toBe(false);
    expect(verifyResponse('k', nonce, 200, body, signature.slice(1))).toBe(false);
    expect(verifyResponse('k', nonce, 200, body, '')).toBe(false);
  });

  it('a request signature cannot be reused as a response signature', () => {
    const headers = signRequest('lsu', 'k', 'POST', PATH, body, NOW);
    expect(verifyResponse('k', headers[PEER_HEADERS.nonce], 200, body, headers[PEER_HEADERS.signature])).toBe(
      false,
    );
  });
});

describe('MemoryNonceStore', () => {
  it('remembers a nonce once', async () => {
    const store = new MemoryNonceStore();
    expect(await store.remember('n1', NOW)).toBe(true);
    expect(await store.remember('n1', NOW + 1)).toBe(false);
    expect(await store.remember('n2', NOW + 1)).toBe(true);
  });

  it('keeps nonces still inside twice the window when it prunes', async () => {
    const store = new MemoryNonceStore();
    for (let i = 0; i <= 10_000; i++) await store.remember(`old-${i}`, NOW);
    // Over the threshold; the old ones are not yet old enough to be dropped.
    expect(await store.remember('fresh', NOW + SIGNATURE_WINDOW_MS)).toBe(true);
    expect(await store.remember('old-0', NOW + SIGNATURE_WINDOW_MS)).toBe(false);
  });

  it('forgets nonces older than twice the window once it holds many', async () => {
    const store = new MemoryNonceStore();
    for (let i = 0; i <= 10_000; i++) await store.remember(`old-${i}`, NOW);
    const later = NOW + 2 * SIGNATURE_WINDOW_MS + 1;
    // This call prunes, so the old nonce is accepted again (outside the window it would be stale anyway).
    expect(await store.remember('trigger', later)).toBe(true);
    expect(await store.remember('old-5', later)).toBe(true);
    expect(await store.remember('trigger', later)).toBe(false);
  });
});
