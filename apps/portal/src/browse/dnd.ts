import type { DragEvent } from 'react';

/** The drag data type of entries dragged from the table: a JSON array of paths. */
export const DRAG_TYPE = 'application/x-tributary-paths';

/** Props that make an element accept entries dragged from the table (a move into `target`). */
export function dropTarget(target: string, onDropPaths: (to: string, from: string[]) => void) {
  return {
    onDragOver: (e: DragEvent) => {
      if (e.dataTransfer.types.includes(DRAG_TYPE)) {
        e.preventDefault();
        e.dataTransfer.dropEffect = 'move';
      }
    },
    onDrop: (e: DragEvent) => {
      const raw = e.dataTransfer.getData(DRAG_TYPE);
      if (raw === '') return;
      e.preventDefault();
      e.stopPropagation();
      onDropPaths(target, JSON.parse(raw) as string[]);
    },
  };
}
