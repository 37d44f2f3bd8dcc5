import { describe, expect, it } from 'vitest';
import { csvPreview, FITS_BLOCK, parseFitsHeader, previewKind, splitCsvLine, textPreview } from './preview';

describe('file previews', () => {
  it('picks the preview a name or content type calls for', () => {
    expect(previewKind('readings.csv', 'application/octet-stream')).toBe('csv');
    expect(previewKind('x.bin', 'text/csv')).toBe('csv');
    expect(previewKind('config.json', null)).toBe('json');
    expect(previewKind('notes.txt', null)).toBe('text');
    expect(previewKind('photo.PNG', null)).toBe('image');
    expect(previewKind('run-1.fits', 'application/octet-stream')).toBe('fits');
    expect(previewKind('m31.FTS', null)).toBe('fits');
    expect(previewKind('data.h5', 'application/octet-stream')).toBeNull();
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

  it('reads a FITS header’s cards up to END: values, quoted strings, comments, commentary cards', () => {
    const card = (text: string) => text.padEnd(80, ' ');
    const header = [
      card('SIMPLE  =                    T / conforms to FITS standard'),
      card('BITPIX  =                  -32 / bits per pixel'),
      card('NAXIS   =                    2'),
      card("OBJECT  = 'M31 ''core'''         / target, with a quote"),
      card("DATE-OBS= '2026-11-27T10:00:00'"),
      card('COMMENT taken with the 2.1 m / not a comment field'),
      card(''),
      card('END'),
    ].join('');
    const block = header.padEnd(FITS_BLOCK, ' ') + 'binary data after the header';
    const { cards, complete, valid } = parseFitsHeader(block);
    expect(valid).toBe(true);
    expect(complete).toBe(true);
    expect(cards).toEqual([
      { keyword: 'SIMPLE', value: 'T', comment: 'conforms to FITS standard' },
      { keyword: 'BITPIX', value: '-32', comment: 'bits per pixel' },
      { keyword: 'NAXIS', value: '2', comment: '' },
      { keyword: 'OBJECT', value: "M31 'core'", comment: 'target, with a quote' },
      { keyword: 'DATE-OBS', value: '2026-11-27T10:00:00', comment: '' },
      { keyword: 'COMMENT', value: '', comment: 'taken with the 2.1 m / not a comment field' },
    ]);
    // Cut before END: the cards so far, not complete; not starting with SIMPLE: not FITS.
    expect(parseFitsHeader(header.slice(0, 160))).toMatchObject({ complete: false, valid: true });
    expect(parseFitsHeader(' '.repeat(FITS_BLOCK))).toEqual({ cards: [], complete: false, valid: false });
  });
});
