import { useLayoutEffect, useRef, useState, type KeyboardEvent, type PointerEvent } from 'react';

/** Pixels one arrow key press widens or narrows a column by (Shift: four times as much). */
export const RESIZE_STEP = 16;
export const MIN_COLUMN_WIDTH = 48;
export const MAX_COLUMN_WIDTH = 1200;

/** A width within the bounds a column may take, in whole pixels. */
export function clampColumnWidth(width: number): number {
  return Math.min(MAX_COLUMN_WIDTH, Math.max(MIN_COLUMN_WIDTH, Math.round(width)));
}

/**
 * The handle at a column header's right edge (place it inside the `<th>`): drag it, or focus it and
 * press the arrow keys; Home or a double click gives the column back to the browser. `width` is the
 * width set for the column (undefined: the browser's), `onResize` gets the next one (undefined:
 * unset), already within bounds.
 */
export function ColumnResizer({
  label,
  width,
  onResize,
}: {
  label: string;
  width: number | undefined;
  onResize: (next: number | undefined) => void;
}) {
  const ref = useRef<HTMLSpanElement>(null);
  const drag = useRef<{ x: number; width: number } | null>(null);
  const [measured, setMeasured] = useState(0);
  // The width the browser gave the column until someone sets one.
  useLayoutEffect(() => {
    const th = ref.current?.parentElement;
    if (th) setMeasured(Math.round(th.getBoundingClientRect().width));
  }, [width]);
  const current = width ?? measured;
  const resize = (next: number | undefined) =>
    onResize(next === undefined ? undefined : clampColumnWidth(next));
  function onKeyDown(e: KeyboardEvent) {
    const step = e.shiftKey ? RESIZE_STEP * 4 : RESIZE_STEP;
    if (e.key === 'ArrowRight' || e.key === 'ArrowUp') resize(current + step);
    else if (e.key === 'ArrowLeft' || e.key === 'ArrowDown') resize(current - step);
    else if (e.key === 'Home') resize(undefined);
    else return;
    e.preventDefault();
  }
  function onPointerDown(e: PointerEvent<HTMLSpanElement>) {
    e.preventDefault();
    e.currentTarget.setPointerCapture(e.pointerId);
    drag.current = { x: e.clientX, width: current };
  }
  function onPointerMove(e: PointerEvent<HTMLSpanElement>) {
    if (drag.current) resize(drag.current.width + e.clientX - drag.current.x);
  }
  return (
    <span
      ref={ref}
      role="separator"
      aria-orientation="vertical"
      aria-label={`Width of ${label}`}
      aria-valuemin={MIN_COLUMN_WIDTH}
      aria-valuemax={MAX_COLUMN_WIDTH}
      aria-valuenow={current}
      tabIndex={0}
      className="resizer"
      onPointerDown={onPointerDown}
      onPointerMove={onPointerMove}
      onPointerUp={() => (drag.current = null)}
      onPointerCancel={() => (drag.current = null)}
      onKeyDown={onKeyDown}
      onDoubleClick={() => resize(undefined)}
      title="Drag, or use the arrow keys, to change the width"
    />
  );
}
