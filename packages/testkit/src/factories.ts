import { randomBytes } from 'node:crypto';

let counter = 0;

/** A short suffix unique within this process and, with high probability, across workers. */
function suffix(): string {
  counter += 1;
  return `${process.pid.toString(36)}${counter.toString(36)}${randomBytes(3).toString('hex')}`;
}

/** A username that matches USERNAME_PATTERN and is unique across the test run. */
export function uniqueUsername(prefix = 'user'): string {
  return `${prefix}-${suffix()}`;
}

/** A project group name (same rules as usernames). */
export function uniqueGroupName(prefix = 'grp'): string {
  return `${prefix}-${suffix()}`;
}

/** A collection or object name. */
export function uniqueName(prefix = 'item'): string {
  return `${prefix}-${suffix()}`;
}

/** A password that satisfies PasswordSchema (12 or more characters). */
export function newPassword(): string {
  return `pw-${randomBytes(9).toString('base64url')}`;
}

/** Deterministic pseudo-random bytes (so failures can be reproduced). */
export function testBytes(length: number, seed = 1): Buffer {
  const out = Buffer.alloc(length);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    out[i] = x & 0xff;
  }
  return out;
}

/**
 * Names that do not compress, as real ones (PostgreSQL compresses long index entries, so repeated
 * letters would fit where real names do not): each call gives `n` letters and digits, the same
 * sequence for the same seed.
 */
export function incompressibleNames(seed: number): (n: number) => string {
  let state = seed;
  return (n) => {
    let out = '';
    for (let i = 0; i < n; i++) {
      state = (state * 1103515245 + 12345) % 2147483648;
      out += 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789'[state % 62];
    }
    return out;
  };
}
