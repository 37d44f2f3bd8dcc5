import type { AriaAttributes, ReactNode } from 'react';

/**
 * One column of a {@link ListTable}. Pages say what a column shows, never how the table is drawn, so
 * the table's inside can become a component library's grid (sorting, resizing, sticky headers)
 * without touching them.
 */
export interface ListColumn<T> {
  /** Stable name of the column: its React key today, a sort or width key later. */
  id: string;
  header: ReactNode;
  /** The header is read by screen readers only (an action column whose buttons name themselves). */
  headerHidden?: boolean;
  /** The column's cell for one row. */
  cell: (row: T) => ReactNode;
  /** The cell names its row (`<th scope="row">`), so a screen reader announces it with each cell. */
  rowHeader?: boolean;
  /** Class of the column's body cells (`num`, `actions`, ...). */
  className?: string;
  /** Class of the column's header cell. */
  headerClassName?: string;
}

/** What a page may put on a row: a test id, a class, ARIA state. */
export type ListRowProps = AriaAttributes & { className?: string; 'data-testid'?: string };

export interface ListTableProps<T> {
  columns: readonly ListColumn<T>[];
  rows: readonly T[];
  /** Stable and unique per row: React keeps a row's focus and state across refetches by it. */
  rowKey: (row: T) => string;
  rowProps?: (row: T) => ListRowProps;
  /**
   * Content shown as one cell across every column in place of the row's cells (an inline editor),
   * or `null`/`undefined`/`false` for the row's ordinary cells.
   */
  spanningRow?: (row: T) => ReactNode;
  className?: string;
  /** Names the table (its accessible name). */
  caption?: ReactNode;
  /** The caption is read by screen readers only. */
  captionHidden?: boolean;
  /**
   * What stands in place of the table when there are no rows: a message (a muted paragraph), or
   * `null` for nothing (the page already says so, e.g. a count). Left out, the table keeps its
   * header over an empty body.
   */
  empty?: ReactNode;
}

/** A list of records as a table: one row per record, one column per field. */
export function ListTable<T>({
  columns,
  rows,
  rowKey,
  rowProps,
  spanningRow,
  className,
  caption,
  captionHidden = false,
  empty,
}: ListTableProps<T>) {
  if (rows.length === 0 && empty !== undefined) {
    return empty === null ? null : <p className="muted">{empty}</p>;
  }
  // The wrapper lets a wide table scroll inside itself on a narrow screen, never the page.
  return (
    // Focusable, so a keyboard can scroll it when it is wider than the screen.
    <div className="table-wrap" tabIndex={0}>
      <table className={className}>
        {caption !== undefined && (
          <caption className={captionHidden ? 'visually-hidden' : undefined}>{caption}</caption>
        )}
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.id} scope="col" className={c.headerClassName}>
                {c.headerHidden ? <span className="visually-hidden">{c.header}</span> : c.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((row) => {
            const key = rowKey(row);
            const spanning = spanningRow?.(row);
            if (spanning !== undefined && spanning !== null && spanning !== false) {
              return (
                <tr key={key} {...rowProps?.(row)}>
                  <td colSpan={columns.length}>{spanning}</td>
                </tr>
              );
            }
            return (
              <tr key={key} {...rowProps?.(row)}>
                {columns.map((c) =>
                  c.rowHeader ? (
                    <th key={c.id} scope="row" className={c.className}>
                      {c.cell(row)}
                    </th>
                  ) : (
                    <td key={c.id} className={c.className}>
                      {c.cell(row)}
                    </td>
                  ),
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}
