import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Peer authentication: every request between sites carries the sender's site id, a timestamp, a
 * nonce and an HMAC-SHA256 over method, path, timestamp, nonce and the body's SHA-256, keyed with
 * the secret the two sites share. The receiver refuses unknown peers, bad signatures, timestamps
 * outside the window and nonces it has seen. Responses are signed too (over the request's nonce,
 * the status and the body), so a forged acknowledgement cannot make a sender drop its queue.
 */
export const PEER_HEADERS = {
  site: 'x-trib-site',
  timestamp: 'x-trib-timestamp',
  nonce: 'x-trib-nonce',
  signature: 'x-trib-signature',
} as const;

/** How far a request's timestamp may be from the receiver's clock. */
export const SIGNATURE_WINDOW_MS = 5 * 60_000;

export interface SignedHeaders {
  [PEER_HEADERS.site]: string;
  [PEER_HEADERS.timestamp]: string;
  [PEER_HEADERS.nonce]: string;
  [PEER_HEADERS.signature]: string;
}

function sha256(body: Uint8Array | string): string {
  return createHash('sha256').update(body).digest('hex');
}

function mac(key: string, text: string): string {
  return createHmac('sha256', key).update(text).digest('hex');
}

function requestText(
  method: string,
  path: string,
  timestamp: string,
  nonce: string,
  body: Uint8Array | string,
): string {
  return ['tributary-peer-request-v1', method.toUpperCase(), path, timestamp, nonce, sha256(body)].join('\n');
}

export function signRequest(
  site: string,
  key: string,
  method: string,
  path: string,
  body: Uint8Array | string,
  now: number = Date.now(),
): SignedHeaders {
  const timestamp = String(now);
  const nonce = randomBytes(16).toString('hex');
  return {
    [PEER_HEADERS.site]: site,
    [PEER_HEADERS.timestamp]: timestamp,
    [PEER_HEADERS.nonce]: nonce,
    [PEER_HEADERS.signature]: mac(key, requestText(method, path, timestamp, nonce, body)),
  };
}

export function signResponse(key: string, nonce: string, status: number, body: Uint8Array | string): string {
  return mac(key, ['tributary-peer-response-v1', nonce, String(status), sha256(body)].join('\n'));
}

export function verifyResponse(
  key: string,
  nonce: string,
  status: number,
  body: Uint8Array | string,
  signature: string | null,
): boolean {
  return signature !== null && equalHex(signature, signResponse(key, nonce, status, body));
}

/** Remembers nonces for the signature window; `remember` is false for one already seen. */
export interface NonceStore {
  remember(nonce: string, now: number): Promise<boolean>;
}

export class MemoryNonceStore implements NonceStore {
  private readonly seen = new Map<string, number>();

  remember(nonce: string, now: number): Promise<boolean> {
    if (this.seen.size > 10_000) {
      for (const [n, at] of this.seen) if (now - at > 2 * SIGNATURE_WINDOW_MS) this.seen.delete(n);
    }
    if (this.seen.has(nonce)) return Promise.resolve(false);
    this.seen.set(nonce, now);
    return Promise.resolve(true);
  }
}

export type VerifyFailure =
  'missing-headers' | 'unknown-peer' | 'stale-timestamp' | 'bad-signature' | 'replayed';

export type VerifyResult =
  { ok: true; peer: string; nonce: string } | { ok: false; reason: VerifyFailure; peer?: string };

export async function verifyRequest(
  headers: Record<string, string | string[] | undefined>,
  method: string,
  path: string,
  body: Uint8Array | string,
  keyOf: (peer: string) => string | undefined,
  nonces: NonceStore,
  now: number = Date.now(),
): Promise<VerifyResult> {
  const get = (name: string): string | undefined => {
    const v = headers[name];
    return Array.isArray(v) ? v[0] : v;
  };
  const peer = get(PEER_HEADERS.site);
  const timestamp = get(PEER_HEADERS.timestamp);
  const nonce = get(PEER_HEADERS.nonce);
  const signature = get(PEER_HEADERS.signature);
  if (!peer || !timestamp || !nonce || !signature || !/^[0-9a-f]{32}$/.test(nonce)) {
    return { ok: false, reason: 'missing-headers', peer };
  }
  const key = keyOf(peer);
  if (!key) return { ok: false, reason: 'unknown-peer', peer };
  const at = Number(timestamp);
  if (!Number.isFinite(at) || Math.abs(now - at) > SIGNATURE_WINDOW_MS) {
    return { ok: false, reason: 'stale-timestamp', peer };
  }
  if (!equalHex(signature, mac(key, requestText(method, path, timestamp, nonce, body)))) {
    return { ok: false, reason: 'bad-signature', peer };
  }
  if (!(await nonces.remember(nonce, now))) return { ok: false, reason: 'replayed', peer };
  return { ok: true, peer, nonce };
}

function equalHex(a: string, b: string): boolean {
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length === y.length && timingSafeEqual(x, y);
}
