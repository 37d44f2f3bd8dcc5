import { escapeControlCharacters } from '@tributary/shared';

/** Where a command writes: stdout for results, stderr for progress, messages and errors. */
export interface OutputStream {
  write(chunk: string): unknown;
  isTTY?: boolean;
  columns?: number;
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

/** 1536 → "1.5 KiB"; exact bytes below 1 KiB. */
export function formatSize(bytes: number): string {
  if (!Number.isFinite(bytes) || bytes < 0) return '-';
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  if (unit === 0) return `${bytes} B`;
  return `${value >= 100 ? value.toFixed(0) : value.toFixed(1)} ${UNITS[unit]}`;
}

/** An ISO time as `YYYY-MM-DD HH:MM` in UTC (stable for scripts and tests). */
export function formatTime(iso: string | null | undefined): string {
  if (!iso) return '-';
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return iso;
  return date.toISOString().slice(0, 16).replace('T', ' ');
}

export interface Column<T> {
  header: string;
  value: (row: T) => string;
  align?: 'left' | 'right';
}

/** A plain text table: a header line, then one line per row, columns padded to their widest cell. */
export function formatTable<T>(rows: readonly T[], columns: readonly Column<T>[], header = true): string {
  const cells = rows.map((row) => columns.map((c) => sanitize(c.value(row))));
  const widths = columns.map((c, i) =>
    Math.max(header ? c.header.length : 0, ...cells.map((r) => r[i]!.length)),
  );
  const line = (values: string[]) =>
    values
      .map((v, i) => {
        const last = i === values.length - 1;
        if (columns[i]!.align === 'right') return v.padStart(widths[i]!);
        return last ? v : v.padEnd(widths[i]!);
      })
      .join('  ')
      .trimEnd();
  const lines = cells.map(line);
  if (header) lines.unshift(line(columns.map((c) => c.header)));
  return lines.length > 0 ? lines.join('\n') + '\n' : '';
}

/** Control characters in names would move the cursor or hide text in a terminal: show them escaped. */
export function sanitize(value: string): string {
  return escapeControlCharacters(value);
}

/** Key: value lines, keys padded. */
export function formatFields(fields: Array<[string, string | number | null | undefined]>): string {
  const width = Math.max(...fields.map(([k]) => k.length));
  return (
    fields
      .map(
        ([k, v]) =>
          `${(k + ':').padEnd(width + 1)} ${v === null || v === undefined ? '-' : sanitize(String(v))}`,
      )
      .join('\n') + '\n'
  );
}

/** `1h 5m`, `42s`, `3d 2h` for durations in milliseconds. */
export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h ${m % 60}m`;
  return `${Math.floor(h / 24)}d ${h % 24}h`;
}
