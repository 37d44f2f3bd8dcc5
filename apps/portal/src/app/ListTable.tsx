import { useMemo, useState, type AriaAttributes, type ReactNode } from 'react';
import {
  getCoreRowModel,
  getSortedRowModel,
  useReactTable,
  type ColumnDef,
  type ColumnSizingState,
  type Header,
  type Row,
  type SortingState,
} from '@tanstack/react-table';
import { ColumnResizer, MAX_COLUMN_WIDTH, MIN_COLUMN_WIDTH } from './ColumnResizer';

/**
 * One column of a {@link ListTable}. Pages say what a column shows, never how the table is drawn:
 * sorting, resizing and the sticky header are the table's (TanStack Table underneath).
 */
export interface ListColumn<T> {
  /** Stable name of the column: its React key, its sort and width key. */
  id: string;
  header: ReactNode;
  /** The header is read by screen readers only (an action column whose buttons name themselves). */
  headerHidden?: boolean;
  /** The column's cell for one row. */
  cell: (row: T) => ReactNode;
  /**
   * What the column sorts by: its header becomes a button that sorts the rows (ascending, then
   * descending, then back to the page's order). `null` sorts last.
   */
  sortValue?: (row: T) => string | number | null;
  /**
   * The cell's whole text, shown on hover when it is cut off. Left out, a cell whose content is a
   * string is its own title.
   */
  title?: (row: T) => string;
  /** The cell names its row (`<th scope="row">`), so a screen reader announces it with each cell. */
  rowHeader?: boolean;
  /** Class of the column's body cells (`num`, `actions`, ...). */
  className?: string;
  /** Class of the column's header cell. */
  headerClassName?: string;
  /** Whether the column's width can be changed (by dragging its edge or with the arrow keys); default yes. */
  resizable?: boolean;
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

export { RESIZE_STEP } from './ColumnResizer';

/**
 * A list of records as a table: one row per record, one column per field. Columns with a
 * `sortValue` sort from their header; every column but the last can be made wider or narrower from
 * the handle at its right edge (pointer, or focus it and use the arrow keys); the header row stays
 * in view while the table scrolls inside its box; a cut-off cell ends in an ellipsis with its whole
 * text on hover.
 */
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
  const [sorting, setSorting] = useState<SortingState>([]);
  const [sizing, setSizing] = useState<ColumnSizingState>({});
  const defs = useMemo(
    () =>
      columns.map((c): ColumnDef<T> => ({
        id: c.id,
        ...(c.sortValue
          ? {
              accessorFn: (row: T) => c.sortValue!(row) ?? undefined,
              sortingFn: compareRows,
              sortUndefined: 'last' as const,
            }
          : { enableSorting: false }),
        enableResizing: c.resizable !== false,
        minSize: MIN_COLUMN_WIDTH,
        maxSize: MAX_COLUMN_WIDTH,
      })),
    [columns],
  );
  const table = useReactTable<T>({
    data: rows as T[],
    columns: defs,
    state: { sorting, columnSizing: sizing },
    onSortingChange: setSorting,
    onColumnSizingChange: setSizing,
    getCoreRowModel: getCoreRowModel(),
    getSortedRowModel: getSortedRowModel(),
    getRowId: (row) => rowKey(row),
    enableSortingRemoval: true,
    sortDescFirst: false,
  });

  if (rows.length === 0 && empty !== undefined) {
    return empty === null ? null : <p className="muted">{empty}</p>;
  }
  const byId = new Map(columns.map((c) => [c.id, c]));
  const headers = table.getHeaderGroups()[0]?.headers ?? [];
  const width = (id: string) =>
    sizing[id] === undefined ? undefined : { width: sizing[id], maxWidth: sizing[id] };
  return (
    // The box scrolls a wide or long table inside itself (the header row stays in view), never the
    // page; focusable, so a keyboard can scroll it.
    <div className="table-wrap" tabIndex={0}>
      <table className={['list-table', className].filter(Boolean).join(' ')}>
        {caption !== undefined && (
          <caption className={captionHidden ? 'visually-hidden' : undefined}>{caption}</caption>
        )}
        <thead>
          <tr>
            {headers.map((h, i) => {
              const c = byId.get(h.column.id)!;
              const sorted = h.column.getIsSorted();
              return (
                <th
                  key={c.id}
                  scope="col"
                  className={c.headerClassName}
                  style={width(c.id)}
                  aria-sort={
                    c.sortValue
                      ? sorted === 'asc'
                        ? 'ascending'
                        : sorted === 'desc'
                          ? 'descending'
                          : 'none'
                      : undefined
                  }
                >
                  {c.headerHidden ? (
                    <span className="visually-hidden">{c.header}</span>
                  ) : c.sortValue ? (
                    <button type="button" className="sort" onClick={h.column.getToggleSortingHandler()}>
                      {c.header}
                      <span aria-hidden="true" className="sort-mark">
                        {sorted === 'asc' ? ' ▲' : sorted === 'desc' ? ' ▼' : ' ↕'}
                      </span>
                    </button>
                  ) : (
                    c.header
                  )}
                  {h.column.getCanResize() && i < headers.length - 1 && (
                    <ResizeHandle header={h} label={typeof c.header === 'string' ? c.header : c.id} />
                  )}
                </th>
              );
            })}
          </tr>
        </thead>
        <tbody>
          {table.getRowModel().rows.map((r) => {
            const row = r.original;
            const key = r.id;
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
                {columns.map((c) => {
                  const content = c.cell(row);
                  const title = c.title?.(row) ?? (typeof content === 'string' ? content : undefined);
                  const props = { className: c.className, style: width(c.id), title };
                  return c.rowHeader ? (
                    <th key={c.id} scope="row" {...props}>
                      {content}
                    </th>
                  ) : (
                    <td key={c.id} {...props}>
                      {content}
                    </td>
                  );
                })}
              </tr>
            );
          })}
        </tbody>
      </table>
    </div>
  );
}

/** TanStack's column sizing driving the shared handle. */
function ResizeHandle<T>({ header, label }: { header: Header<T, unknown>; label: string }) {
  const table = header.getContext().table;
  const id = header.column.id;
  return (
    <ColumnResizer
      label={label}
      width={table.getState().columnSizing[id]}
      onResize={(next) =>
        table.setColumnSizing((old) => {
          const rest = { ...old };
          delete rest[id];
          return next === undefined ? rest : { ...rest, [id]: next };
        })
      }
    />
  );
}

/** Numbers by value, text in the reader's collation with the numbers inside it in order. */
function compareRows<T>(a: Row<T>, b: Row<T>, id: string): number {
  const x = a.getValue(id);
  const y = b.getValue(id);
  if (typeof x === 'number' && typeof y === 'number') return x - y;
  return String(x).localeCompare(String(y), undefined, { numeric: true, sensitivity: 'base' });
}
