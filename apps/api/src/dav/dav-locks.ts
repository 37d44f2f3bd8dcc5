import { Injectable } from '@nestjs/common';
import { randomBytes } from 'node:crypto';
import { isWithin } from '@tributary/shared';
import { DavCode, DavError } from './dav.errors';

export interface DavLock {
  token: string;
  /** The path the lock was taken on. */
  root: string;
  depth: 0 | 'infinity';
  scope: 'exclusive' | 'shared';
  /** The `D:owner` element the client sent, serialised (returned as is in lockdiscovery). */
  owner: string | null;
  /** Who took it: only they may use its token or unlock it. */
  userId: bigint;
  timeoutSeconds: number;
  expiresAt: number;
}

/** Longest lock lifetime granted; a client asking for more (or Infinite) gets this, and refreshes. */
export const MAX_LOCK_SECONDS = 3600;
/** Lifetime when the client asks for none. */
export const DEFAULT_LOCK_SECONDS = 600;
/** Most locks one user may hold at this site at once. */
const MAX_LOCKS_PER_USER = 10_000;

/**
 * WebDAV write locks (RFC 4918 sections 6 and 7), held in this site's memory: a client mounts one
 * site and takes its locks there. A lock covers its root and, at depth infinity, everything below;
 * writes to what a lock covers need its token in the `If` header (DavService checks). Locks expire
 * after their timeout unless refreshed; a restart forgets them (clients take them again).
 */
@Injectable()
export class DavLocks {
  private readonly locks = new Map<string, DavLock>();

  /** The live locks that cover `path`: taken on it, or at depth infinity on a collection above it. */
  covering(path: string): DavLock[] {
    return this.live().filter((l) => l.root === path || (l.depth === 'infinity' && isWithin(path, l.root)));
  }

  /** The live locks taken on `path` or anywhere below it. */
  within(path: string): DavLock[] {
    return this.live().filter((l) => isWithin(l.root, path));
  }

  /**
   * The locks that guard a change of `path` itself (its bytes or properties) and, with
   * `membership`, of its membership in its parent (creating, deleting or moving it): the locks
   * covering it, and those taken on its parent at any depth (RFC 4918 section 7.4: a depth-0 lock
   * on a collection protects its list of members).
   */
  guarding(path: string, parent: string | null): DavLock[] {
    const found = new Map(this.covering(path).map((l) => [l.token, l]));
    if (parent !== null) for (const l of this.covering(parent)) found.set(l.token, l);
    return [...found.values()];
  }

  get(token: string): DavLock | undefined {
    const lock = this.locks.get(token);
    if (lock && lock.expiresAt <= Date.now()) {
      this.locks.delete(token);
      return undefined;
    }
    return lock;
  }

  /**
   * Takes a new lock, refused (423) when it conflicts: an exclusive lock with any other lock on what
   * it would cover, a shared one with an exclusive one.
   */
  take(input: Omit<DavLock, 'token' | 'expiresAt'>): DavLock {
    const conflicting = [
      ...this.covering(input.root),
      ...(input.depth === 'infinity' ? this.within(input.root) : []),
    ].filter((l) => input.scope === 'exclusive' || l.scope === 'exclusive');
    if (conflicting.length > 0) {
      throw new DavError(
        423,
        DavCode.LockConflict,
        `${input.root} is locked already (${conflicting[0]!.scope} lock on ${conflicting[0]!.root})`,
        'no-conflicting-lock',
      );
    }
    const held = this.live().filter((l) => l.userId === input.userId).length;
    if (held >= MAX_LOCKS_PER_USER) {
      throw new DavError(
        503,
        DavCode.LockConflict,
        `you hold ${held} locks at this site, the most allowed; unlock some first`,
      );
    }
    const lock: DavLock = {
      ...input,
      // 128 random bits as a short URI: a conditional write names the token and the 66-character
      // entity tag twice in one If header, and some clients (litmus among them) cut that header at
      // 200 bytes; a urn:uuid token would not fit.
      token: `urn:trib:${randomBytes(16).toString('base64url')}`,
      expiresAt: Date.now() + input.timeoutSeconds * 1000,
    };
    this.locks.set(lock.token, lock);
    return lock;
  }

  refresh(lock: DavLock, timeoutSeconds: number): DavLock {
    lock.timeoutSeconds = timeoutSeconds;
    lock.expiresAt = Date.now() + timeoutSeconds * 1000;
    return lock;
  }

  release(token: string): void {
    this.locks.delete(token);
  }

  /** Drops the locks on `path` and below (it was deleted or moved away: locks do not follow). */
  releaseWithin(path: string): void {
    for (const l of this.within(path)) this.locks.delete(l.token);
  }

  private live(): DavLock[] {
    const now = Date.now();
    const out: DavLock[] = [];
    for (const [token, lock] of this.locks) {
      if (lock.expiresAt <= now) this.locks.delete(token);
      else out.push(lock);
    }
    return out;
  }
}

/**
 * The timeout a client asked for (`Timeout: Second-600, Infinite`): the first it names, at most
 * MAX_LOCK_SECONDS; DEFAULT_LOCK_SECONDS when it names none we understand.
 */
export function lockTimeout(header: string | undefined): number {
  if (!header) return DEFAULT_LOCK_SECONDS;
  for (const part of header.split(',')) {
    const value = part.trim();
    if (value.toLowerCase() === 'infinite') return MAX_LOCK_SECONDS;
    if (value.toLowerCase().startsWith('second-')) {
      const seconds = Number(value.slice('second-'.length));
      if (Number.isInteger(seconds) && seconds > 0) return Math.min(seconds, MAX_LOCK_SECONDS);
    }
  }
  return DEFAULT_LOCK_SECONDS;
}
