import { PEER_HEADERS, signRequest, verifyResponse } from './signing';
import type { Ack, Batch, Transport } from './types';

export interface PeerEndpoint {
  id: string;
  /** Base URL of the peer's API, e.g. `https://tulane.example.org`. */
  url: string;
  /** The secret this site and that peer share. */
  key: string;
}

/** Path of the collector on every site. */
export const BATCH_PATH = '/api/v1/replication/peer/batch';

export class PeerRequestError extends Error {
  constructor(
    message: string,
    readonly status?: number,
  ) {
    super(message);
  }
}

/**
 * Signed HTTP requests from this site to its peers (batches, snapshots, object bytes). Every
 * response must carry a valid signature from the peer.
 */
export class PeerClient {
  private readonly peers = new Map<string, PeerEndpoint>();

  constructor(
    readonly localSite: string,
    peers: readonly PeerEndpoint[],
    private readonly timeoutMs = 60_000,
  ) {
    for (const p of peers) this.peers.set(p.id, p);
  }

  peer(id: string): PeerEndpoint | undefined {
    return this.peers.get(id);
  }

  /** Sends a signed request; resolves with the verified response body (JSON) or throws. */
  async request<T>(
    peerId: string,
    method: 'GET' | 'POST',
    path: string,
    body?: unknown,
    timeoutMs: number = this.timeoutMs,
  ): Promise<T> {
    const peer = this.peers.get(peerId);
    if (!peer) throw new PeerRequestError(`unknown peer ${peerId}`);
    const payload = body === undefined ? '' : JSON.stringify(body);
    const headers = signRequest(this.localSite, peer.key, method, path, payload);
    let res: Response;
    try {
      res = await fetch(new URL(path, peer.url), {
        method,
        headers: { ...headers, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        body: body === undefined ? undefined : payload,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const cause =
        err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
      throw new PeerRequestError(`${peerId} unreachable: ${cause}`);
    }
    const text = await res.text();
    if (
      !verifyResponse(
        peer.key,
        headers[PEER_HEADERS.nonce],
        res.status,
        text,
        res.headers.get(PEER_HEADERS.signature),
      )
    ) {
      throw new PeerRequestError(`${peerId} answered ${res.status} without a valid signature`, res.status);
    }
    if (!res.ok) {
      let message = text.slice(0, 300);
      try {
        const parsed = JSON.parse(text) as { error?: { message?: string } };
        message = parsed.error?.message ?? message;
      } catch {
        // not JSON: keep the text
      }
      throw new PeerRequestError(`${peerId} refused: ${res.status} ${message}`, res.status);
    }
    return JSON.parse(text) as T;
  }

  /** Opens a signed streaming GET (object bytes); the caller checks the status. Response bodies are not signed. */
  async stream(peerId: string, path: string, extraHeaders: Record<string, string> = {}): Promise<Response> {
    const peer = this.peers.get(peerId);
    if (!peer) throw new PeerRequestError(`unknown peer ${peerId}`);
    const headers = signRequest(this.localSite, peer.key, 'GET', path, '');
    try {
      return await fetch(new URL(path, peer.url), { headers: { ...headers, ...extraHeaders } });
    } catch (err) {
      const cause =
        err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
      throw new PeerRequestError(`${peerId} unreachable: ${cause}`);
    }
  }
}

/** How long a peer has to store a batch and answer. */
export const BATCH_TIMEOUT_MS = 30_000;

/** Batches over signed HTTP to the peer's collector. */
export class HttpTransport implements Transport {
  constructor(private readonly client: PeerClient) {}

  async send(peerId: string, batch: Batch): Promise<Ack> {
    const ack = await this.client.request<Ack>(peerId, 'POST', BATCH_PATH, batch, BATCH_TIMEOUT_MS);
    if (
      !Number.isSafeInteger(ack.have) ||
      ack.have < 0 ||
      (ack.applied !== undefined && (!Number.isSafeInteger(ack.applied) || ack.applied < 0))
    ) {
      throw new PeerRequestError(`${peerId} sent a malformed acknowledgement`);
    }
    return ack;
  }
}

/**
 * Batches delivered in memory to other engines' collectors (tests and demos). A peer marked down
 * fails like an unreachable host; `dropAcks` simulates a lost answer after delivery.
 */
export class MemoryTransport implements Transport {
  private readonly handlers = new Map<string, (batch: Batch) => Promise<Ack>>();
  readonly down = new Set<string>();
  readonly dropAcks = new Set<string>();
  sent = 0;

  register(siteId: string, handler: (batch: Batch) => Promise<Ack>): void {
    this.handlers.set(siteId, handler);
  }

  async send(peerId: string, batch: Batch): Promise<Ack> {
    const handler = this.handlers.get(peerId);
    if (!handler || this.down.has(peerId)) throw new PeerRequestError(`${peerId} unreachable`);
    // Round-trip through JSON, as on the wire.
    const ack = await handler(JSON.parse(JSON.stringify(batch)) as Batch);
    this.sent += 1;
    if (this.dropAcks.has(peerId)) throw new PeerRequestError(`${peerId}: answer lost`);
    return ack;
  }
}
