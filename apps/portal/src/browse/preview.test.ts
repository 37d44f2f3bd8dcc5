import { describe, expect, it } from 'vitest';
import { csvPreview, previewKind, splitCsvLine, textPreview } from './preview';

describe('file previews', () => {
  it('picks the preview a name or content type calls for', () => {
    expect(previewKind('readings.csv', 'application/octet-stream')).toBe('csv');
    expect(previewKind('x.bin', 'text/csv')).toBe('csv');
    expect(previewKind('config.json', null)).toBe('json');
    expect(previewKind('notes.txt', null)).toBe('text');
    expect(previewKind('photo.PNG', null)).toBe('image');
    expect(previewKind('run-1.fits', 'application/octet-stream')).toBeNull();
  });

  it('splits quoted CSV fields', () => {
    expect(splitCsvLine('a,"b, c","say ""hi""",', ',')).toEqual(['a', 'b, c', 'say "hi"', '']);
    expect(splitCsvLine('x\ty', '\t')).toEqual(['x', 'y']);
  });

  it('shows the header and the first rows, dropping a line cut by the byte limit', () => {
    const text = 'station,temp\nA,1\nB,2\nC,3\nD,4\nE,5\nF,6\nG,7\nH,8\nI,9\nJ,1';
    const whole = csvPreview(text, 'r.csv', true);
    expect(whole.header).toEqual(['station', 'temp']);
    expect(whole.rows).toHaveLength(8);
    expect(whole.more).toBe(true);
    const cut = csvPreview('a,b\n1,2\n3,', 'r.csv', false);
    expect(cut.rows).toEqual([['1', '2']]);
    expect(cut.more).toBe(true);
    expect(csvPreview('a\tb\n1\t2\n', 'r.tsv', true)).toEqual({
      header: ['a', 'b'],
      rows: [['1', '2']],
      more: false,
    });
  });

  it('indents a whole JSON document and keeps the first lines of a text', () => {
    expect(textPreview('{"probe":"CTD-7","n":1}', 'json', true)).toEqual({
      lines: ['{', '  "probe": "CTD-7",', '  "n": 1', '}'],
      more: false,
    });
    const long = Array.from({ length: 30 }, (_, i) => `line ${i}`).join('\n');
    const shown = textPreview(long, 'text', true);
    expect(shown.lines).toHaveLength(20);
    expect(shown.more).toBe(true);
    expect(textPreview('one\ntwo\nthr', 'text', false)).toEqual({ lines: ['one', 'two'], more: true });
  });
});
