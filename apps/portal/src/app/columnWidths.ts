import { useCallback, useState, type CSSProperties } from 'react';
import { clampColumnWidth } from './ColumnResizer';

/** Column widths a person set, by column id, in pixels. */
export type ColumnWidths = Record<string, number>;

/** The widths kept in this browser under `key`; anything unreadable is dropped, not trusted. */
export function readColumnWidths(storage: Pick<Storage, 'getItem'>, key: string): ColumnWidths {
  try {
    const parsed: unknown = JSON.parse(storage.getItem(key) ?? '{}');
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return {};
    const widths: ColumnWidths = {};
    for (const [id, w] of Object.entries(parsed))
      if (typeof w === 'number' && Number.isFinite(w)) widths[id] = clampColumnWidth(w);
    return widths;
  } catch {
    return {};
  }
}

/**
 * Column widths kept in this browser (localStorage) under `key`, and a setter for one column
 * (undefined: back to the browser's width). `style` carries them as `--col-<id>` variables for the
 * table's stylesheet.
 */
export function useColumnWidths(key: string): {
  widths: ColumnWidths;
  setWidth: (id: string, width: number | undefined) => void;
  style: CSSProperties;
} {
  const [widths, setWidths] = useState<ColumnWidths>(() => readColumnWidths(localStorage, key));
  const setWidth = useCallback(
    (id: string, width: number | undefined) =>
      setWidths((old) => {
        const next = { ...old };
        if (width === undefined) delete next[id];
        else next[id] = width;
        try {
          localStorage.setItem(key, JSON.stringify(next));
        } catch {
          // Storage full or refused (private windows): the widths last for this page only.
        }
        return next;
      }),
    [key],
  );
  const style = Object.fromEntries(
    Object.entries(widths).map(([id, w]) => [`--col-${id}`, `${w}px`]),
  ) as CSSProperties;
  return { widths, setWidth, style };
}
