import { describe, expect, it } from 'vitest';
import { copyText } from './copy-rows';

describe('copyText', () => {
  it('sends null as \\N and numbers and ids as their text', () => {
    expect(copyText(null)).toBe('\\N');
    expect(copyText(12.5)).toBe('12.5');
    expect(copyText(1e21)).toBe('1e+21');
    expect(copyText(281474976710656n)).toBe('281474976710656');
  });

  it('escapes what COPY would read as a separator or an escape, and nothing else', () => {
    expect(copyText('plain value, with spaces; and "quotes"')).toBe('plain value, with spaces; and "quotes"');
    expect(copyText('C:\\data\\new')).toBe('C:\\\\data\\\\new');
    expect(copyText('\\N')).toBe('\\\\N');
    expect(copyText('\\.')).toBe('\\\\.');
    expect(copyText('a\tb\nc\rd')).toBe('a\\tb\\nc\\rd');
    expect(copyText('Zürich ✓')).toBe('Zürich ✓');
  });
});
