import type { PeerRequestError } from '@tributary/replication';
import { ErrorCode, errorStatus } from '@tributary/shared';
import { DomainError } from './domain-error';

/**
 * A peer's refusal of a request this site made for a user (a forwarded update, restore or purge),
 * as the user's answer: the peer's own error when its code is one the user can act on (`relayed`),
 * otherwise 503 REPLICA_UNAVAILABLE with `unavailable(why)`, `why` saying whether the peer could not
 * be reached or what it answered.
 */
export function relayPeerRefusal(
  err: PeerRequestError,
  relayed: ReadonlySet<string>,
  unavailable: (why: string) => string,
  retryAfterSeconds = 30,
): DomainError {
  if (err.code && relayed.has(err.code) && err.code in errorStatus) {
    return new DomainError(
      err.code as ErrorCode,
      err.peerMessage ?? err.message,
      undefined,
      err.retryAfter ? { 'retry-after': err.retryAfter } : undefined,
    );
  }
  const why =
    err.status === undefined ? 'cannot be reached now' : `answered: ${err.peerMessage ?? err.message}`;
  return new DomainError(ErrorCode.ReplicaUnavailable, unavailable(why), undefined, {
    'retry-after': String(retryAfterSeconds),
  });
}
