/**
 * What the details panel previews of a file, pure so it is unit-tested: the kind of preview a name
 * and content type call for, and the first rows of a CSV or the first lines of a text or JSON file
 * from the first bytes of it.
 */

export type PreviewKind = 'image' | 'csv' | 'json' | 'text' | 'fits' | null;

/** Bytes read for a text preview (one ranged request). */
export const PREVIEW_BYTES = 16 * 1024;
/** Rows of a table and lines of a text shown. */
export const PREVIEW_ROWS = 8;
export const PREVIEW_LINES = 20;

export function previewKind(name: string, contentType: string | null | undefined): PreviewKind {
  const type = (contentType ?? '').toLowerCase();
  if (/\.(fits?|fts)$/i.test(name) || type === 'application/fits' || type === 'image/fits') return 'fits';
  if (/\.(png|jpe?g|gif|webp)$/i.test(name) || /^image\/(png|jpeg|gif|webp)$/.test(type)) return 'image';
  if (/\.(csv|tsv)$/i.test(name) || type === 'text/csv' || type === 'text/tab-separated-values') return 'csv';
  if (/\.json$/i.test(name) || type === 'application/json') return 'json';
  if (/\.(txt|md|log|ya?ml|toml|xml|py|r|sh|ini|cfg|conf)$/i.test(name) || type.startsWith('text/')) {
    return 'text';
  }
  return null;
}

/** One line of CSV (or TSV) split into fields, with `"quoted, fields"` and `""` escapes. */
export function splitCsvLine(line: string, separator: string): string[] {
  const out: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i] as string;
    if (quoted) {
      if (ch === '"' && line[i + 1] === '"') {
        field += '"';
        i++;
      } else if (ch === '"') quoted = false;
      else field += ch;
    } else if (ch === '"' && field === '') quoted = true;
    else if (ch === separator) {
      out.push(field);
      field = '';
    } else field += ch;
  }
  out.push(field);
  return out;
}

/** Complete lines of the first bytes (a cut last line dropped unless the file ended there). */
function lines(text: string, complete: boolean): string[] {
  const all = text.replace(/\r\n/g, '\n').split('\n');
  if (!complete) all.pop();
  while (all.length > 0 && all.at(-1) === '') all.pop();
  return all;
}

/** The first rows of a CSV or TSV file: the header, then up to PREVIEW_ROWS rows. */
export function csvPreview(
  text: string,
  name: string,
  complete: boolean,
): { header: string[]; rows: string[][]; more: boolean } {
  const separator = /\.tsv$/i.test(name) || (!text.includes(',') && text.includes('\t')) ? '\t' : ',';
  const all = lines(text, complete).map((l) => splitCsvLine(l, separator));
  const [header = [], ...rest] = all;
  return { header, rows: rest.slice(0, PREVIEW_ROWS), more: rest.length > PREVIEW_ROWS || !complete };
}

/** The first lines of a text; a whole JSON document is shown indented. */
export function textPreview(
  text: string,
  kind: 'json' | 'text',
  complete: boolean,
): { lines: string[]; more: boolean } {
  let body = text;
  if (kind === 'json' && complete) {
    try {
      body = JSON.stringify(JSON.parse(text), null, 2);
    } catch {
      // Not valid JSON: shown as it is.
    }
  }
  const all = lines(body, complete || kind === 'json');
  return { lines: all.slice(0, PREVIEW_LINES), more: all.length > PREVIEW_LINES || !complete };
}

/** A FITS header is 2880-byte blocks of 36 cards of 80 ASCII characters; the preview reads this many. */
export const FITS_BLOCK = 2880;
export const FITS_PREVIEW_BYTES = 5 * FITS_BLOCK;
const CARD = 80;

export interface FitsCard {
  keyword: string;
  /** The value as written (a string without its quotes); empty for commentary cards. */
  value: string;
  comment: string;
}

/**
 * The cards of a FITS primary header from the file's first bytes (latin1-decoded), up to `END`:
 * keyword in columns 1-8, `= ` in 9-10 for a value, a quoted string (`''` is a quote) or a number
 * or logical, then `/ comment`. COMMENT, HISTORY and blank keywords keep their text as the comment.
 * `complete` is false when no END card came within the bytes read; `valid` false when the first card
 * is not `SIMPLE` (not a FITS file).
 */
export function parseFitsHeader(text: string): { cards: FitsCard[]; complete: boolean; valid: boolean } {
  const cards: FitsCard[] = [];
  let complete = false;
  for (let at = 0; at + CARD <= text.length; at += CARD) {
    const card = text.slice(at, at + CARD);
    const keyword = card.slice(0, 8).trimEnd();
    if (keyword === 'END') {
      complete = true;
      break;
    }
    if (card.slice(8, 10) !== '= ') {
      if (keyword === '' && card.trim() === '') continue;
      cards.push({ keyword, value: '', comment: card.slice(8).trim() });
      continue;
    }
    const rest = card.slice(10);
    let value: string;
    let tail: string;
    const open = rest.indexOf("'");
    if (open >= 0 && rest.slice(0, open).trim() === '') {
      // A string: up to the closing quote that is not doubled.
      let i = open + 1;
      let out = '';
      while (i < rest.length) {
        if (rest[i] === "'" && rest[i + 1] === "'") {
          out += "'";
          i += 2;
        } else if (rest[i] === "'") break;
        else out += rest[i++];
      }
      value = out.trimEnd();
      tail = rest.slice(i + 1);
    } else {
      const slash = rest.indexOf('/');
      value = (slash >= 0 ? rest.slice(0, slash) : rest).trim();
      tail = slash >= 0 ? rest.slice(slash) : '';
    }
    const slash = tail.indexOf('/');
    cards.push({ keyword, value, comment: slash >= 0 ? tail.slice(slash + 1).trim() : '' });
  }
  return { cards, complete, valid: cards[0]?.keyword === 'SIMPLE' };
}
