import { describe, expect, it } from 'vitest';
import { escapeControlCharacters, hasControlCharacter } from './control-characters';
import { text } from './dto/common';
import { normalizePath } from './paths';
import { typedValue } from './metadata-query';

const codePoints = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => String.fromCodePoint(from + i));

describe('control characters', () => {
  it('are C0, DEL and C1, every one of them', () => {
    for (const c of [...codePoints(0x00, 0x1f), '\u007f', ...codePoints(0x80, 0x9f)]) {
      expect(hasControlCharacter(`a${c}b`), `U+${c.codePointAt(0)!.toString(16)}`).toBe(true);
    }
  });

  it('are not printable text, white space other than the C0 ones, or format characters', () => {
    for (const c of [' ', '~', '\u00a0', '\u00e9', '\u200b', '\u200d', '\u2028', '\ufeff', '😀']) {
      expect(hasControlCharacter(`a${c}b`), `U+${c.codePointAt(0)!.toString(16)}`).toBe(false);
    }
  });

  it('are escaped for a terminal as \\xNN, the rest kept', () => {
    expect(escapeControlCharacters('a\u001b[31mb\u009bc\u0085é')).toBe('a\\x1b[31mb\\x9bc\\x85é');
  });

  it('are refused in stored text, names and metadata values alike', () => {
    for (const bad of ['\u0007', '\u007f', '\u0085', '\u009b']) {
      expect(text().safeParse(`run ${bad} 7`).success).toBe(false);
      expect(() => normalizePath(`/home/run${bad}7`)).toThrow(/control characters/);
      expect(() => typedValue(`run${bad}7`)).toThrow(/control characters/);
    }
    expect(text().safeParse('run 7 é\u200b').success).toBe(true);
    expect(normalizePath('/home/run 7 é')).toBe('/home/run 7 é');
  });
});
