import { Inject, Injectable, Logger } from '@nestjs/common';
import { ErrorCode } from '@tributary/shared';
import { PEER_HEADERS, signResponse, verifyRequest, type NonceStore } from '@tributary/replication';
import type { Request, Response } from 'express';
import { DomainError } from '../common/domain-error';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { SqlPool } from '../database/sql-pool';

/** Nonces live in the catalog, so a replay is refused even across a restart of this site. */
class CatalogNonceStore implements NonceStore {
  constructor(private readonly sql: SqlPool) {}

  async remember(nonce: string): Promise<boolean> {
    const res = await this.sql.query(
      'INSERT INTO repl_nonces (nonce) VALUES ($1) ON CONFLICT (nonce) DO NOTHING',
      [nonce],
    );
    return res.rowCount === 1;
  }
}

export interface VerifiedPeer {
  peer: string;
  nonce: string;
}

/**
 * Authenticates requests from peer sites (HMAC per peer, timestamp window, replay protection) and
 * signs the answers. Refusals are logged with the claimed peer and the reason, never the key.
 */
@Injectable()
export class PeerAuthService {
  private readonly logger = new Logger('Replication');
  private readonly keys: Map<string, string>;
  private readonly nonces: NonceStore;

  constructor(@Inject(SITE_CONFIG) config: SiteConfig, sql: SqlPool) {
    this.keys = new Map(config.replication.peers.map((p) => [p.id, p.key]));
    this.nonces = new CatalogNonceStore(sql);
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
