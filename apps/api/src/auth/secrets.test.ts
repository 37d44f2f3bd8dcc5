import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  DUMMY_PASSWORD_HASH,
  hashPassword,
  hashSecret,
  newSecret,
  safeEqual,
  TOKEN_PREFIX,
  verifyPassword,
} from './secrets';

describe('password hashing', () => {
  it('verifies the right password and refuses a wrong one', async () => {
    const hash = await hashPassword('correct horse battery staple');
    expect(await verifyPassword('correct horse battery staple', hash)).toBe(true);
    expect(await verifyPassword('correct horse battery stapl', hash)).toBe(false);
    expect(await verifyPassword('Correct horse battery staple', hash)).toBe(false);
    expect(await verifyPassword('', hash)).toBe(false);
  });

  it('stores the scrypt parameters and a random salt with each hash', async () => {
    const [a, b] = await Promise.all([hashPassword('same password!'), hashPassword('same password!')]);
    expect(a).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(a).not.toContain('same password');
    expect(await verifyPassword('same password!', b)).toBe(true);
  });

  it('refuses malformed stored hashes instead of throwing', async () => {
    expect(await verifyPassword('x', '')).toBe(false);
    expect(await verifyPassword('x', 'bcrypt$10$abc')).toBe(false);
    expect(await verifyPassword('x', 'scrypt$32768$8$1$salt')).toBe(false);
  });

  it('the dummy hash matches no password', async () => {
    expect(await verifyPassword('', DUMMY_PASSWORD_HASH)).toBe(false);
    expect(await verifyPassword('admin-password-123', DUMMY_PASSWORD_HASH)).toBe(false);
  });

  it('handles non-ASCII passwords', async () => {
    const hash = await hashPassword('pässwörd-ünïcode-🔑');
    expect(await verifyPassword('pässwörd-ünïcode-🔑', hash)).toBe(true);
    expect(await verifyPassword('passwort-unicode-🔑', hash)).toBe(false);
  });
});

describe('secrets', () => {
  it('hashSecret is the hex SHA-256 of the secret', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hashSecret('trib_x')).toBe(createHash('sha256').update('trib_x').digest('hex'));
    expect(hashSecret('a')).not.toBe(hashSecret('b'));
  });

  it('newSecret gives 256 random bits, URL-safe, with the prefix', () => {
    const a = newSecret(TOKEN_PREFIX);
    const b = newSecret(TOKEN_PREFIX);
    expect(a).toMatch(/^trib_[A-Za-z0-9_-]{43}$/);
    expect(a).not.toBe(b);
    expect(newSecret()).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  it('safeEqual compares exactly, including different lengths', () => {
    expect(safeEqual('token', 'token')).toBe(true);
    expect(safeEqual('token', 'tokeN')).toBe(false);
    expect(safeEqual('token', 'token2')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
  });
});
