import type { TokenScope } from '@tributary/shared';

/** Who is calling, resolved once per request by the authentication guard. */
export interface Principal {
  userId: bigint;
  username: string;
  isAdmin: boolean;
  activeGroupId: bigint | null;
  activeGroupName: string | null;
  groupIds: bigint[];
  /** `peer`: a request another site forwarded for this user (see AuthService.forwardedPrincipal). */
  via: 'session' | 'token' | 'peer';
  /** Set for token requests: what the token allows. */
  token?: { id: bigint; scope: TokenScope; collectionPath: string | null; expiresAt: Date | null };
  sessionId?: string;
}

declare module 'express' {
  interface Request {
    principal?: Principal;
  }
}
