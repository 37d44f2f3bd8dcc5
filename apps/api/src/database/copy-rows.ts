import { once } from 'node:events';
import { finished } from 'node:stream/promises';
import type pg from 'pg';
import { from as copyFrom } from 'pg-copy-streams';

/** A value of one column of a row sent by COPY: null is SQL NULL; others are sent as their text. */
export type CopyValue = string | number | bigint | null;

/** Lines per chunk written to the stream (about 100 bytes each). */
const LINES_PER_CHUNK = 2000;

/**
 * A value in COPY's text format: backslash, tab, newline and carriage return escaped (so a value can
 * hold any of them, and `\N` or `\.` in a value stay text); null as `\N`.
 */
export function copyText(value: CopyValue): string {
  if (value === null) return '\\N';
  if (typeof value !== 'string') return String(value);
  return /[\\\t\n\r]/.test(value) ? value.replace(/[\\\t\n\r]/g, (c) => COPY_ESCAPES[c]!) : value;
}

const COPY_ESCAPES: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/**
 * Inserts rows into `table` with `COPY ... FROM STDIN` (text format), in `db`'s transaction, and
 * returns how many went in. For bulk inserts: the server parses the rows as they stream in and
 * writes them several to a page (heap multi-insert), where an `INSERT ... SELECT FROM unnest(...)`
 * first builds and parses one array per column. The table's statement triggers fire as for an
 * INSERT. `table` and `columns` are identifiers written by the caller, never user input.
 */
export async function copyRows(
  db: pg.ClientBase,
  table: string,
  columns: readonly string[],
  rows: Iterable<readonly CopyValue[]>,
): Promise<number> {
  const stream = db.query(copyFrom(`COPY ${table} (${columns.join(', ')}) FROM STDIN`));
  let lines: string[] = [];
  try {
    for (const row of rows) {
      if (stream.destroyed) break; // the server refused the rows: its error is reported below
      lines.push(row.map(copyText).join('\t') + '\n');
      if (lines.length < LINES_PER_CHUNK) continue;
      const more = stream.write(lines.join(''));
      lines = [];
      // Wait for the socket to take the chunk, so a large request is not held in memory twice
      // (`once` rejects if the server refuses the rows meanwhile).
      if (!more && !stream.destroyed) await once(stream, 'drain');
    }
    if (!stream.destroyed) stream.end(lines.join(''));
  } catch (err) {
    // Ends the COPY with CopyFail (no-op when the server ended it), so the connection stays usable.
    stream.destroy(err instanceof Error ? err : new Error(String(err)));
  }
  await finished(stream);
  return stream.rowCount;
}
