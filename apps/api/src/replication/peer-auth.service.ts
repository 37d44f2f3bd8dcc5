import { Inject, Injectable, Logger } from '@nestjs/common';
import { ErrorCode } from '@tributary/shared';
import {
  PEER_HEADERS,
  SIGNATURE_WINDOW_MS,
  signResponse,
  verifyRequest,
  type NonceStore,
} from '@tributary/replication';
import type { Request, Response } from 'express';
import { DomainError } from '../common/domain-error';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { ReplicationRepository } from './replication.repository';

export interface VerifiedPeer {
  peer: string;
  nonce: string;
}

/**
 * Bodies read at once per claimed peer before their signature is known: with the headers checked
 * first only a caller that names a real peer gets this far, and it cannot make the site hold more
 * than this many bodies for that name. A peer sends one batch at a time.
 */
const UNVERIFIED_READS_PER_PEER = 2;

/**
 * Authenticates requests from peer sites (HMAC per peer, timestamp window, replay protection) and
 * signs the answers. Refusals are logged with the claimed peer and the reason, never the key.
 */
@Injectable()
export class PeerAuthService {
  private readonly logger = new Logger('Replication');
  private readonly keys: Map<string, string>;
  private readonly nonces: NonceStore;
  /** Bodies being read per claimed peer, not yet verified. */
  private readonly unverifiedReads = new Map<string, number>();

  constructor(@Inject(SITE_CONFIG) config: SiteConfig, repo: ReplicationRepository) {
    this.keys = new Map(config.replication.peers.map((p) => [p.id, p.key]));
    // Nonces live in the catalog, so a replay is refused even across a restart of this site.
    this.nonces = { remember: (nonce) => repo.rememberNonce(nonce) };
  }

  /**
   * Reads a signed request's body and verifies it. Everything the headers can tell (a known peer, a
   * fresh timestamp, well-formed nonce and signature, a declared size within `limit`) is checked
   * first, and a request that fails is answered without reading its body: the connection is
   * closed after the answer, so an unauthenticated caller cannot make the site buffer anything.
   */
  async readVerified(
    req: Request,
    res: Response,
    limit: number,
  ): Promise<{ peer: VerifiedPeer; body: Buffer }> {
    const refuse = (err: DomainError): never => {
      res.setHeader('Connection', 'close');
      throw err;
    };
    const claimed = this.precheck(req, refuse);
    const declared = Number(req.headers['content-length'] ?? 0);
    if (declared > limit) {
      refuse(new DomainError(ErrorCode.PayloadTooLarge, `peer request bodies are limited to ${limit} bytes`));
    }
    const reading = this.unverifiedReads.get(claimed) ?? 0;
    if (reading >= UNVERIFIED_READS_PER_PEER) {
      refuse(
        new DomainError(
          ErrorCode.RateLimited,
          `${UNVERIFIED_READS_PER_PEER} requests from ${claimed} are being received; retry after them`,
          undefined,
          { 'Retry-After': '5' },
        ),
      );
    }
    this.unverifiedReads.set(claimed, reading + 1);
    let body: Buffer;
    try {
      body = await readRawBody(req, limit).catch((err: unknown) =>
        refuse(
          err instanceof DomainError
            ? err
            : new DomainError(ErrorCode.ValidationFailed, 'the request body was cut short'),
        ),
      );
    } finally {
      const left = (this.unverifiedReads.get(claimed) ?? 1) - 1;
      if (left > 0) this.unverifiedReads.set(claimed, left);
      else this.unverifiedReads.delete(claimed);
    }
    return { peer: await this.verify(req, body), body };
  }

  /** The checks that need no body; returns the claimed peer or refuses. */
  private precheck(req: Request, refuse: (err: DomainError) => never): string {
    const header = (name: string): string | undefined => {
      const v = req.headers[name];
      return Array.isArray(v) ? v[0] : v;
    };
    const peer = header(PEER_HEADERS.site);
    const timestamp = header(PEER_HEADERS.timestamp);
    const nonce = header(PEER_HEADERS.nonce);
    const signature = header(PEER_HEADERS.signature);
    let reason: string | undefined;
    if (!peer || !timestamp || !nonce || !signature) reason = 'missing-headers';
    else if (
      !/^[0-9a-f]{32}$/.test(nonce) ||
      !/^[0-9a-f]{64}$/.test(signature) ||
      !/^\d{1,16}$/.test(timestamp)
    )
      reason = 'malformed-headers';
    else if (!this.keys.has(peer)) reason = 'unknown-peer';
    else if (Math.abs(Date.now() - Number(timestamp)) > SIGNATURE_WINDOW_MS) reason = 'stale-timestamp';
    if (reason || !peer) {
      this.logger.warn(
        `refused a peer request to ${req.method} ${req.path} from ${req.ip ?? 'unknown address'} claiming to be ${peer ?? '(none)'}: ${reason}`,
      );
      return refuse(new DomainError(ErrorCode.PeerUnauthorized, `peer request refused: ${reason}`));
    }
    return peer;
  }

  async verify(req: Request, body: Buffer): Promise<VerifiedPeer> {
    const result = await verifyRequest(
      req.headers,
      req.method,
      req.originalUrl,
      body,
      (peer) => this.keys.get(peer),
      this.nonces,
    );
    if (!result.ok) {
      this.logger.warn(
        `refused a peer request to ${req.method} ${req.path} from ${req.ip ?? 'unknown address'} claiming to be ${result.peer ?? '(none)'}: ${result.reason}`,
      );
      throw new DomainError(ErrorCode.PeerUnauthorized, `peer request refused: ${result.reason}`);
    }
    return { peer: result.peer, nonce: result.nonce };
  }

  /** Sends a JSON answer signed for the peer that asked. */
  sendSigned(res: Response, peer: VerifiedPeer, status: number, payload: unknown): void {
    const body = Buffer.from(JSON.stringify(payload));
    const key = this.keys.get(peer.peer);
    if (key) res.setHeader(PEER_HEADERS.signature, signResponse(key, peer.nonce, status, body));
    res.status(status).type('application/json').send(body);
  }

  /** Answers a failure as the API's error envelope, signed. */
  sendError(res: Response, peer: VerifiedPeer, err: unknown): void {
    if (err instanceof DomainError) {
      for (const [name, value] of Object.entries(err.headers ?? {})) res.setHeader(name, value);
      this.sendSigned(res, peer, err.status, { error: { code: err.code, message: err.message } });
      return;
    }
    this.logger.error(
      `peer request from ${peer.peer} failed: ${err instanceof Error ? err.stack : String(err)}`,
    );
    this.sendSigned(res, peer, 500, { error: { code: ErrorCode.Internal, message: 'internal error' } });
  }
}

/** Reads a request body as bytes (peer routes sign the exact bytes), up to `limit`. */
export async function readRawBody(req: Request, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      throw new DomainError(ErrorCode.PayloadTooLarge, `peer request bodies are limited to ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
