import { Readable } from 'node:stream';
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

/** Header carrying the signed description of a streamed request body (see `PeerClient.sendBytes`). */
export const ENVELOPE_HEADER = 'x-trib-envelope';

export class PeerRequestError extends Error {
  constructor(
    message: string,
    readonly status?: number,
    /** The peer's error code, when it refused with the API's error envelope. */
    readonly code?: string,
    /** The peer's own message (without this site's prefix), for relaying to a user. */
    readonly peerMessage?: string,
    readonly retryAfter?: string,
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
    return this.requestJson<T>(
      peerId,
      method,
      path,
      body === undefined ? undefined : JSON.stringify(body),
      timeoutMs,
    );
  }

  /** `request` with a body already written as JSON. */
  async requestJson<T>(
    peerId: string,
    method: 'GET' | 'POST',
    path: string,
    json: string | undefined,
    timeoutMs: number = this.timeoutMs,
  ): Promise<T> {
    const peer = this.peers.get(peerId);
    if (!peer) throw new PeerRequestError(`unknown peer ${peerId}`);
    const headers = signRequest(this.localSite, peer.key, method, path, json ?? '');
    let res: Response;
    try {
      res = await fetch(new URL(path, peer.url), {
        method,
        headers: { ...headers, ...(json === undefined ? {} : { 'content-type': 'application/json' }) },
        body: json,
        signal: AbortSignal.timeout(timeoutMs),
      });
    } catch (err) {
      const cause =
        err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
      throw new PeerRequestError(`${peerId} unreachable: ${cause}`);
    }
    return this.verified<T>(peerId, peer, headers[PEER_HEADERS.nonce], res);
  }

  /**
   * Sends a signed POST whose body is streamed (object bytes). The signature covers `envelope`, a
   * JSON description of the body that includes its SHA-256 and size: the receiver checks the bytes
   * against it, so the body is as authentic as a signed one without being read twice here.
   */
  async sendBytes<T>(
    peerId: string,
    path: string,
    envelope: Record<string, unknown>,
    body: Readable,
    timeoutMs: number = this.timeoutMs,
  ): Promise<T> {
    const peer = this.peers.get(peerId);
    if (!peer) throw new PeerRequestError(`unknown peer ${peerId}`);
    const text = Buffer.from(JSON.stringify(envelope)).toString('base64url');
    const headers = signRequest(this.localSite, peer.key, 'POST', path, text);
    let res: Response;
    try {
      res = await fetch(new URL(path, peer.url), {
        method: 'POST',
        headers: { ...headers, [ENVELOPE_HEADER]: text, 'content-type': 'application/octet-stream' },
        body: Readable.toWeb(body) as ReadableStream<Uint8Array>,
        duplex: 'half',
        signal: AbortSignal.timeout(timeoutMs),
      } as RequestInit);
    } catch (err) {
      body.destroy();
      const cause =
        err instanceof Error ? ((err.cause as Error | undefined)?.message ?? err.message) : String(err);
      throw new PeerRequestError(`${peerId} unreachable: ${cause}`);
    }
    return this.verified<T>(peerId, peer, headers[PEER_HEADERS.nonce], res);
  }

  /** Checks the response's signature; resolves with its JSON body, or throws the peer's refusal. */
  private async verified<T>(peerId: string, peer: PeerEndpoint, nonce: string, res: Response): Promise<T> {
    const text = await res.text();
    if (!verifyResponse(peer.key, nonce, res.status, text, res.headers.get(PEER_HEADERS.signature))) {
      throw new PeerRequestError(`${peerId} answered ${res.status} without a valid signature`, res.status);
    }
    if (!res.ok) {
      let message = text.slice(0, 300);
      let code: string | undefined;
      try {
        const parsed = JSON.parse(text) as { error?: { message?: string; code?: string } };
        message = parsed.error?.message ?? message;
        code = parsed.error?.code;
      } catch {
        // not JSON: keep the text
      }
      throw new PeerRequestError(
        `${peerId} refused: ${res.status} ${message}`,
        res.status,
        code,
        message,
        res.headers.get('retry-after') ?? undefined,
      );
    }
    return JSON.parse(text) as T;
  }

  /**
   * Opens a signed streaming GET (object bytes); the caller checks the status. Response bodies are not
   * signed. `signal` bounds the wait (no timeout of its own: a body may take long) and aborts the
   * body too, so a caller that bounds only the answer's headers clears its timer once this resolves.
   */
  async stream(
    peerId: string,
    path: string,
    extraHeaders: Record<string, string> = {},
    signal?: AbortSignal,
  ): Promise<Response> {
    const peer = this.peers.get(peerId);
    if (!peer) throw new PeerRequestError(`unknown peer ${peerId}`);
    const headers = signRequest(this.localSite, peer.key, 'GET', path, '');
    try {
      return await fetch(new URL(path, peer.url), { headers: { ...headers, ...extraHeaders }, signal });
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

  send(peerId: string, batch: Batch): Promise<Ack> {
    return this.sendJson(peerId, JSON.stringify(batch));
  }

  async sendJson(peerId: string, json: string): Promise<Ack> {
    const ack = await this.client.requestJson<Ack>(peerId, 'POST', BATCH_PATH, json, BATCH_TIMEOUT_MS);
    if (
      !Number.isSafeInteger(ack.have) ||
      ack.have < 0 ||
      (ack.applied !== undefined && (!Number.isSafeInteger(ack.applied) || ack.applied < 0)) ||
      (ack.through !== undefined && (!Number.isSafeInteger(ack.through) || ack.through < 0))
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

  send(peerId: string, batch: Batch): Promise<Ack> {
    // Round-trip through JSON, as on the wire.
    return this.sendJson(peerId, JSON.stringify(batch));
  }

  async sendJson(peerId: string, json: string): Promise<Ack> {
    const handler = this.handlers.get(peerId);
    if (!handler || this.down.has(peerId)) throw new PeerRequestError(`${peerId} unreachable`);
    const ack = await handler(JSON.parse(json) as Batch);
    this.sent += 1;
    if (this.dropAcks.has(peerId)) throw new PeerRequestError(`${peerId}: answer lost`);
    return ack;
  }
}
