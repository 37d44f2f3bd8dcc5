import { describe, expect, it } from 'vitest';
import {
  checkLinkTarget,
  formatMode,
  formatMtime,
  LinkTargetSchema,
  ModeSchema,
  mtimeToNs,
  MtimeSchema,
  parseMode,
  parseMtime,
  splitMtime,
} from './attributes';
import { SetAttributesSchema } from './dto/namespace';

describe('mode', () => {
  it('takes numbers 0..0o7777 and octal text', () => {
    expect(parseMode(0o644)).toEqual({ ok: true, value: 0o644 });
    expect(parseMode(0)).toEqual({ ok: true, value: 0 });
    expect(parseMode(0o7777)).toEqual({ ok: true, value: 0o7777 });
    expect(parseMode('755')).toEqual({ ok: true, value: 0o755 });
    expect(parseMode('0755')).toEqual({ ok: true, value: 0o755 });
    expect(parseMode('0o2775')).toEqual({ ok: true, value: 0o2775 });
    expect(parseMode('4755')).toEqual({ ok: true, value: 0o4755 });
  });

  it('refuses file type bits, fractions, negative numbers and text that is not octal', () => {
    for (const bad of [
      0o10000,
      4096,
      -1,
      1.5,
      NaN,
      '10000',
      '0o10000',
      'abc',
      '8',
      '',
      '0x1ff',
      null,
      true,
    ]) {
      const parsed = parseMode(bad);
      expect(parsed.ok, String(bad)).toBe(false);
      if (!parsed.ok) expect(parsed.message).toContain('0o7777');
    }
  });

  it('shows like ls -l, with setuid, setgid and sticky bits', () => {
    expect(formatMode('object', 0o644)).toBe('-rw-r--r--');
    expect(formatMode('collection', 0o755)).toBe('drwxr-xr-x');
    expect(formatMode('symlink', 0o777)).toBe('lrwxrwxrwx');
    expect(formatMode('object', 0o4755)).toBe('-rwsr-xr-x');
    expect(formatMode('object', 0o2644)).toBe('-rw-r-Sr--');
    expect(formatMode('collection', 0o1777)).toBe('drwxrwxrwt');
    expect(formatMode('collection', 0o1776)).toBe('drwxrwxrwT');
    expect(formatMode('object', 0)).toBe('----------');
  });
});

describe('mtime', () => {
  it('reads ISO 8601 to the nanosecond, in any zone, and writes it back in UTC with nine digits', () => {
    const ns = mtimeToNs('2026-11-27T10:00:00.123456789Z');
    expect(ns).toBe(1795773600123456789n);
    expect(formatMtime(ns)).toBe('2026-11-27T10:00:00.123456789Z');
    expect(mtimeToNs('2026-11-27T11:30:00.5+01:30')).toBe(1795773600500000000n);
    expect(mtimeToNs('2026-11-27T10:00:00Z')).toBe(1795773600000000000n);
    expect(formatMtime(0n)).toBe('1970-01-01T00:00:00.000000000Z');
  });

  it('reads milliseconds since 1970, as numbers and exactly as text', () => {
    expect(parseMtime(1795773600123)).toEqual({ ok: true, value: 1795773600123000000n });
    expect(parseMtime('1795773600123.456789')).toEqual({ ok: true, value: 1795773600123456789n });
    expect(parseMtime('-1.5')).toEqual({ ok: true, value: -1500000n });
  });

  it('splits into a timespec: whole seconds (floor) and nanoseconds', () => {
    expect(splitMtime(1_500_000_001n)).toEqual({ seconds: 1n, nanoseconds: 500_000_001 });
    expect(splitMtime(-1n)).toEqual({ seconds: -1n, nanoseconds: 999_999_999 });
    expect(splitMtime(-1_000_000_000n)).toEqual({ seconds: -1n, nanoseconds: 0 });
  });

  it('keeps times before 1970 (touch -d 1960-01-01)', () => {
    const ns = mtimeToNs('1960-01-01T00:00:00.25Z');
    expect(ns).toBe(-315619200000000000n + 250000000n);
    expect(formatMtime(ns)).toBe('1960-01-01T00:00:00.250000000Z');
    expect(formatMtime(-1n)).toBe('1969-12-31T23:59:59.999999999Z');
  });

  it('refuses garbage, times without a zone, impossible dates and times beyond 64-bit nanoseconds', () => {
    for (const bad of [
      'yesterday',
      '2026-11-27',
      '2026-11-27T10:00:00',
      '2026-02-30T00:00:00Z',
      '2026-11-27T24:00:00Z',
      '2026-11-27T10:00:00.1234567891Z',
      '3000-01-01T00:00:00Z',
      '1600-01-01T00:00:00Z',
      '0050-01-01T00:00:00Z',
      Infinity,
      1e20,
      '',
      null,
      {},
    ]) {
      expect(parseMtime(bad).ok, typeof bad === 'number' ? String(bad) : JSON.stringify(bad)).toBe(false);
    }
  });

  it('as request fields: errors say what to send', () => {
    const bad = SetAttributesSchema.safeParse({ path: '/a', mode: 'abc', mtime: 'soon' });
    expect(bad.success).toBe(false);
    const fields = Object.fromEntries(bad.error!.issues.map((i) => [i.path.join('.'), i.message]));
    expect(fields.mode).toContain('octal');
    expect(fields.mtime).toContain('ISO 8601');
    expect(SetAttributesSchema.safeParse({ path: '/a' }).success).toBe(false);
    expect(SetAttributesSchema.parse({ path: '/a', mode: '0700' })).toEqual({ path: '/a', mode: 0o700 });
    expect(ModeSchema.parse(420)).toBe(0o644);
    expect(MtimeSchema.parse('1970-01-01T00:00:01Z')).toBe(1_000_000_000n);
  });
});

describe('symlink targets', () => {
  it('are kept exactly as written: relative, absolute, dangling, odd characters', () => {
    for (const target of ['../lib/libfoo.so.1', '/usr/share/zoneinfo/UTC', 'x', 'a b\nc', 'é', 'e\u0301']) {
      expect(checkLinkTarget(target)).toEqual({ ok: true, value: target });
    }
    expect(LinkTargetSchema.parse('e\u0301')).toBe('e\u0301');
  });

  it('refuse empty, NUL, lone surrogates and more than 4,096 bytes', () => {
    expect(checkLinkTarget('').ok).toBe(false);
    expect(checkLinkTarget('a\u0000b').ok).toBe(false);
    expect(checkLinkTarget('\ud800').ok).toBe(false);
    expect(checkLinkTarget('a'.repeat(4096)).ok).toBe(true);
    expect(checkLinkTarget('a'.repeat(4097)).ok).toBe(false);
    // 2,049 two-byte characters: 4,098 bytes.
    const long = checkLinkTarget('é'.repeat(2049));
    expect(long.ok).toBe(false);
    if (!long.ok) expect(long.message).toContain('4098');
  });
});
