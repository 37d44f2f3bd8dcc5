import { describe, expect, it } from 'vitest';
import {
  ancestorPaths,
  isWithin,
  joinPath,
  MAX_NAME_BYTES,
  MAX_PATH_BYTES,
  normalizeName,
  normalizeObjectPath,
  normalizePath,
  PathError,
  splitPath,
} from './paths';

/** The PathError message thrown by `fn`, or a failure when it does not throw one. */
function pathError(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(PathError);
    return (err as PathError).message;
  }
  throw new Error('expected a PathError');
}

describe('normalizeName', () => {
  it('returns ordinary names unchanged', () => {
    expect(normalizeName('results.csv')).toBe('results.csv');
    expect(normalizeName('a b  c')).toBe('a b  c');
    expect(normalizeName('.hidden')).toBe('.hidden');
    expect(normalizeName('...')).toBe('...');
  });

  it('converts to Unicode NFC', () => {
    const decomposed = 'cafe\u0301'; // e + combining acute accent
    const composed = 'caf\u00e9';
    expect(decomposed).not.toBe(composed);
    expect(normalizeName(decomposed)).toBe(composed);
    expect(normalizeName(composed)).toBe(composed);
  });

  it('refuses empty names, "." and ".."', () => {
    expect(pathError(() => normalizeName(''))).toMatch(/empty/);
    expect(pathError(() => normalizeName('.'))).toMatch(/not allowed/);
    expect(pathError(() => normalizeName('..'))).toMatch(/not allowed/);
  });

  it('refuses "/" inside a name', () => {
    expect(pathError(() => normalizeName('a/b'))).toMatch(/"\/"/);
  });

  it('refuses NUL, C0/C1 control characters and DEL', () => {
    for (const bad of [
      'a\u0000b',
      'tab\there',
      'line\nbreak',
      'cr\r',
      'del\u007f',
      'c1\u0085',
      'esc\u001b[0m',
    ]) {
      expect(
        pathError(() => normalizeName(bad)),
        JSON.stringify(bad),
      ).toMatch(/control/);
    }
  });

  it('refuses U+FFFD and lone surrogates: text that was not valid UTF-8 must not merge into one name', () => {
    expect(pathError(() => normalizeName('a\ufffdb'))).toMatch(/U\+FFFD/);
    for (const bad of ['a\ud800', '\udc00b', 'x\ud800y\udbff']) {
      expect(
        pathError(() => normalizeName(bad)),
        JSON.stringify(bad),
      ).toMatch(/surrogate/);
    }
    // A well-formed pair is one character outside the BMP.
    expect(normalizeName('\ud83d\ude00.txt')).toBe('\u{1f600}.txt');
  });

  it('refuses bidirectional controls and invisible characters', () => {
    for (const bad of [
      'invoice\u202Etxt.exe', // RIGHT-TO-LEFT OVERRIDE
      'a\u202Ab',
      'a\u2066b\u2069',
      'a\u200Eb', // LEFT-TO-RIGHT MARK
      'a\u200Fb',
      'a\u061Cb',
      'zero\u200Bwidth',
      'a\u2060b',
      '\uFEFFbom',
      'soft\u00ADhyphen',
      'a\u2063b',
    ]) {
      expect(
        pathError(() => normalizeName(bad)),
        JSON.stringify(bad),
      ).toMatch(/invisible|bidirectional/);
    }
  });

  it('accepts joiners inside words of scripts that need them, not beside ASCII or at the ends', () => {
    expect(normalizeName('\u0645\u06CC\u200C\u062E\u0648\u0627\u0647\u0645')).toHaveLength(8); // Persian ZWNJ
    expect(normalizeName('\u{1f468}\u200D\u{1f469}\u200D\u{1f467}')).toHaveLength(8); // emoji family
    for (const bad of ['ab\u200Dc', '\u200Cab', 'x\u200C', '\u0645\u200D']) {
      expect(
        pathError(() => normalizeName(bad)),
        JSON.stringify(bad),
      ).toMatch(/invisible/);
    }
  });

  it('accepts names up to 255 bytes of UTF-8 and refuses longer ones', () => {
    expect(normalizeName('x'.repeat(MAX_NAME_BYTES))).toHaveLength(255);
    expect(pathError(() => normalizeName('x'.repeat(MAX_NAME_BYTES + 1)))).toMatch(/255 bytes/);
    // 'é' is 2 bytes: 127 of them are 254 bytes, 128 are 256.
    expect(normalizeName('\u00e9'.repeat(127))).toHaveLength(127);
    expect(pathError(() => normalizeName('\u00e9'.repeat(128)))).toMatch(/255 bytes/);
  });

  it('counts the length after NFC normalisation', () => {
    // Decomposed: 3 bytes each (e + U+0301), composed: 2 bytes; 100 of them fit only when composed.
    expect(normalizeName('e\u0301'.repeat(100))).toBe('\u00e9'.repeat(100));
  });
});

describe('normalizePath', () => {
  it('keeps the root and normal absolute paths', () => {
    expect(normalizePath('/')).toBe('/');
    expect(normalizePath('/home/alice/data.bin')).toBe('/home/alice/data.bin');
  });

  it('tolerates one trailing slash and drops it', () => {
    expect(normalizePath('/home/alice/')).toBe('/home/alice');
    expect(pathError(() => normalizePath('/home/alice//'))).toMatch(/empty segments/);
  });

  it('refuses invisible and bidirectional characters in any segment', () => {
    expect(pathError(() => normalizePath('/home/\u202Eexe.txt/x'))).toMatch(/bidirectional/);
  });

  it('refuses empty and relative paths', () => {
    expect(pathError(() => normalizePath(''))).toMatch(/empty/);
    expect(pathError(() => normalizePath('home/alice'))).toMatch(/absolute/);
    expect(pathError(() => normalizePath('./home'))).toMatch(/absolute/);
  });

  it('refuses "//" anywhere', () => {
    expect(pathError(() => normalizePath('//'))).toMatch(/empty segments/);
    expect(pathError(() => normalizePath('//home'))).toMatch(/empty segments/);
    expect(pathError(() => normalizePath('/home//alice'))).toMatch(/empty segments/);
  });

  it('refuses "." and ".." segments instead of resolving them', () => {
    expect(pathError(() => normalizePath('/home/..'))).toMatch(/not allowed/);
    expect(pathError(() => normalizePath('/home/../etc/passwd'))).toMatch(/not allowed/);
    expect(pathError(() => normalizePath('/home/./alice'))).toMatch(/not allowed/);
    expect(pathError(() => normalizePath('/..'))).toMatch(/not allowed/);
  });

  it('refuses NUL and control characters in any segment', () => {
    expect(pathError(() => normalizePath('/home/a\u0000b'))).toMatch(/control/);
    expect(pathError(() => normalizePath('/ho\nme/alice'))).toMatch(/control/);
  });

  it('normalises every segment to NFC', () => {
    expect(normalizePath('/proje\u0301t/re\u0301sume\u0301')).toBe('/proj\u00e9t/r\u00e9sum\u00e9');
  });

  it('refuses paths longer than 4096 bytes and names longer than 255 bytes', () => {
    const segment = 'x'.repeat(200);
    // 20 segments of "/" + 200 = 4020 bytes: fits; one more does not.
    const fits = '/' + Array.from({ length: 20 }, () => segment).join('/');
    expect(fits.length).toBeLessThanOrEqual(MAX_PATH_BYTES);
    expect(normalizePath(fits)).toBe(fits);
    expect(pathError(() => normalizePath(fits + '/' + segment))).toMatch(/4096 bytes/);
    expect(pathError(() => normalizePath('/a/' + 'y'.repeat(256)))).toMatch(/255 bytes/);
  });

  it('is idempotent', () => {
    for (const p of ['/', '/a', '/a/b/', '/caf\u0065\u0301/x']) {
      const once = normalizePath(p);
      expect(normalizePath(once)).toBe(once);
    }
  });
});

describe('normalizeObjectPath', () => {
  it('is normalizePath without the trailing slash: "/a/x/" names a collection, not the object x', () => {
    expect(normalizeObjectPath('/a/x')).toBe('/a/x');
    expect(normalizeObjectPath('/a/caf\u0065\u0301')).toBe('/a/caf\u00e9');
    expect(pathError(() => normalizeObjectPath('/a/x/'))).toMatch(/must not end with "\/"/);
    expect(normalizeObjectPath('/')).toBe('/');
    expect(pathError(() => normalizeObjectPath('a/x'))).toMatch(/absolute/);
  });
});

describe('splitPath and joinPath', () => {
  it('split into parent and name', () => {
    expect(splitPath('/a')).toEqual({ parent: '/', name: 'a' });
    expect(splitPath('/a/b/c')).toEqual({ parent: '/a/b', name: 'c' });
    expect(() => splitPath('/')).toThrow(PathError);
  });

  it('join without doubling the root slash', () => {
    expect(joinPath('/', 'a')).toBe('/a');
    expect(joinPath('/a/b', 'c')).toBe('/a/b/c');
  });
});

describe('ancestorPaths', () => {
  it('lists the root and every collection above, root first, the path itself excluded', () => {
    expect(ancestorPaths('/')).toEqual([]);
    expect(ancestorPaths('/home')).toEqual(['/']);
    expect(ancestorPaths('/home/alice/data/x.bin')).toEqual([
      '/',
      '/home',
      '/home/alice',
      '/home/alice/data',
    ]);
  });
});

describe('isWithin', () => {
  it('is true for the ancestor itself and for paths below it', () => {
    expect(isWithin('/home/alice', '/home/alice')).toBe(true);
    expect(isWithin('/home/alice/x', '/home/alice')).toBe(true);
    expect(isWithin('/home/alice/x/y', '/home')).toBe(true);
    expect(isWithin('/anything', '/')).toBe(true);
    expect(isWithin('/', '/')).toBe(true);
  });

  it('is false for siblings that merely share a prefix', () => {
    expect(isWithin('/home/alice2', '/home/alice')).toBe(false);
    expect(isWithin('/home/alic', '/home/alice')).toBe(false);
    expect(isWithin('/home', '/home/alice')).toBe(false);
    expect(isWithin('/', '/home')).toBe(false);
    expect(isWithin('/projects/x', '/home')).toBe(false);
  });
});
