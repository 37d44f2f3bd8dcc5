import { useQuery } from '@tanstack/react-query';
import type { EntryDto } from '@tributary/shared';
import { downloadHref } from '../api';
import {
  csvPreview,
  FITS_PREVIEW_BYTES,
  parseFitsHeader,
  PREVIEW_BYTES,
  previewKind,
  textPreview,
  type FitsCard,
} from './preview';

/**
 * A look at a file without downloading it: an image as itself, the first rows of a CSV or TSV as a
 * table, the first lines of a text or JSON file (one ranged request for the first 16 KiB), the
 * header cards of a FITS file (one ranged request for its first five 2880-byte blocks).
 */
export function Preview({ entry }: { entry: EntryDto }) {
  const kind = entry.kind === 'object' && entry.size > 0 ? previewKind(entry.name, entry.contentType) : null;
  const text = useQuery({
    queryKey: ['preview', entry.path, entry.checksum],
    enabled: kind !== null && kind !== 'image',
    queryFn: async ({ signal }) => {
      const bytes = kind === 'fits' ? FITS_PREVIEW_BYTES : PREVIEW_BYTES;
      const res = await fetch(downloadHref(entry.path), {
        headers: { range: `bytes=0-${bytes - 1}` },
        signal,
      });
      if (!res.ok) throw new Error(`the preview could not be read (${res.status})`);
      // A FITS header is ASCII; latin1 keeps every byte one character, so cards stay 80 long.
      const body =
        kind === 'fits' ? new TextDecoder('latin1').decode(await res.arrayBuffer()) : await res.text();
      return { body, complete: entry.size <= bytes };
    },
  });
  if (kind === null) return null;
  return (
    <section aria-label={`Preview of ${entry.name}`} className="preview">
      <h3>Preview</h3>
      {kind === 'image' && <img src={downloadHref(entry.path)} alt={`The image ${entry.name}`} />}
      {text.isPending && kind !== 'image' && <p className="muted">Loading…</p>}
      {text.error && <p className="muted">{text.error.message}</p>}
      {text.data && kind === 'csv' && (
        <CsvTable {...csvPreview(text.data.body, entry.name, text.data.complete)} />
      )}
      {text.data && kind === 'fits' && <FitsHeader {...parseFitsHeader(text.data.body)} />}
      {text.data && (kind === 'json' || kind === 'text') && (
        <TextLines {...textPreview(text.data.body, kind, text.data.complete)} />
      )}
    </section>
  );
}

function CsvTable({ header, rows, more }: { header: string[]; rows: string[][]; more: boolean }) {
  return (
    <>
      <div className="table-wrap" tabIndex={0}>
        <table className="preview-table">
          <caption className="visually-hidden">First rows</caption>
          <thead>
            <tr>
              {header.map((h, i) => (
                <th key={i} scope="col">
                  {h}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {rows.map((r, i) => (
              <tr key={i}>
                {r.map((c, j) => (
                  <td key={j}>{c}</td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {more && <p className="muted small">First rows only.</p>}
    </>
  );
}

function TextLines({ lines, more }: { lines: string[]; more: boolean }) {
  return (
    <>
      <pre className="preview-text" tabIndex={0}>
        {lines.join('\n')}
      </pre>
      {more && <p className="muted small">First lines only.</p>}
    </>
  );
}

function FitsHeader({ cards, complete, valid }: { cards: FitsCard[]; complete: boolean; valid: boolean }) {
  if (!valid) return <p className="muted">This file does not start with a FITS header.</p>;
  return (
    <>
      <div className="table-wrap" tabIndex={0}>
        <table className="preview-table fits-header">
          <caption className="visually-hidden">FITS header</caption>
          <thead>
            <tr>
              <th scope="col">Keyword</th>
              <th scope="col">Value</th>
              <th scope="col">Comment</th>
            </tr>
          </thead>
          <tbody>
            {cards.map((c, i) => (
              <tr key={i}>
                <th scope="row">{c.keyword}</th>
                <td>{c.value}</td>
                <td className="muted">{c.comment}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {!complete && <p className="muted small">The first {cards.length} cards only.</p>}
    </>
  );
}
