/**
 * The upload queue as a pure state machine (no DOM, no network), so it is unit-tested on its own.
 * `useUploads` drives it: it starts what `nextToStart` names and reports progress and outcomes.
 *
 *   queued ──start──▶ uploading ──succeed──▶ done
 *     ▲                  │  │
 *     │                  │  └──fail──▶ failed ──retry──▶ queued
 *     └──────retry───────┴──cancel──▶ cancelled
 */

export type UploadStatus = 'queued' | 'uploading' | 'done' | 'failed' | 'cancelled';

export interface UploadItem {
  id: number;
  /** Absolute destination path of the object. */
  path: string;
  size: number;
  loaded: number;
  status: UploadStatus;
  /** Replace an existing object of that name (chosen after a name clash). */
  overwrite: boolean;
  error?: { code: string; message: string };
}

export interface UploadState {
  items: UploadItem[];
}

export type UploadAction =
  /** `id`s are chosen by the caller (a counter), unique within the queue. */
  | { type: 'add'; files: Array<{ id: number; path: string; size: number }> }
  | { type: 'start'; id: number }
  | { type: 'progress'; id: number; loaded: number }
  | { type: 'succeed'; id: number }
  | { type: 'fail'; id: number; code: string; message: string }
  | { type: 'cancel'; id: number }
  | { type: 'retry'; id: number; overwrite?: boolean }
  | { type: 'clear-finished' };

export const initialUploadState: UploadState = { items: [] };

function update(state: UploadState, id: number, fn: (item: UploadItem) => UploadItem | null): UploadState {
  let changed = false;
  const items = state.items.map((item) => {
    if (item.id !== id) return item;
    const next = fn(item);
    if (next === null) return item;
    changed = true;
    return next;
  });
  return changed ? { ...state, items } : state;
}

export function uploadReducer(state: UploadState, action: UploadAction): UploadState {
  switch (action.type) {
    case 'add': {
      const added = action.files.map((f): UploadItem => ({
        id: f.id,
        path: f.path,
        size: f.size,
        loaded: 0,
        status: 'queued',
        overwrite: false,
      }));
      return { items: [...state.items, ...added] };
    }
    case 'start':
      return update(state, action.id, (it) =>
        it.status === 'queued' ? { ...it, status: 'uploading', loaded: 0, error: undefined } : null,
      );
    case 'progress':
      return update(state, action.id, (it) =>
        it.status === 'uploading' ? { ...it, loaded: Math.min(it.size, Math.max(0, action.loaded)) } : null,
      );
    case 'succeed':
      return update(state, action.id, (it) =>
        it.status === 'uploading' ? { ...it, status: 'done', loaded: it.size } : null,
      );
    case 'fail':
      return update(state, action.id, (it) =>
        it.status === 'uploading'
          ? { ...it, status: 'failed', loaded: 0, error: { code: action.code, message: action.message } }
          : null,
      );
    case 'cancel':
      return update(state, action.id, (it) =>
        it.status === 'queued' || it.status === 'uploading' ? { ...it, status: 'cancelled' } : null,
      );
    case 'retry':
      return update(state, action.id, (it) =>
        it.status === 'failed' || it.status === 'cancelled'
          ? {
              ...it,
              status: 'queued',
              loaded: 0,
              error: undefined,
              overwrite: action.overwrite ?? it.overwrite,
            }
          : null,
      );
    case 'clear-finished':
      return {
        ...state,
        items: state.items.filter((it) => it.status !== 'done' && it.status !== 'cancelled'),
      };
  }
}

/** The queued items to start now so that at most `concurrency` upload at once, in queue order. */
export function nextToStart(state: UploadState, concurrency: number): UploadItem[] {
  const running = state.items.filter((it) => it.status === 'uploading').length;
  const free = Math.max(0, concurrency - running);
  return state.items.filter((it) => it.status === 'queued').slice(0, free);
}

export interface UploadTotals {
  /** Bytes sent of the files that are not cancelled. */
  loaded: number;
  total: number;
  done: number;
  failed: number;
  active: number;
  count: number;
}

/** Overall progress: cancelled files leave the total, failed ones stay until retried or cleared. */
export function uploadTotals(state: UploadState): UploadTotals {
  const t: UploadTotals = { loaded: 0, total: 0, done: 0, failed: 0, active: 0, count: 0 };
  for (const it of state.items) {
    if (it.status === 'cancelled') continue;
    t.count++;
    t.total += it.size;
    t.loaded += it.loaded;
    if (it.status === 'done') t.done++;
    else if (it.status === 'failed') t.failed++;
    else t.active++;
  }
  return t;
}

/** Percentage 0-100 for a progress bar; an empty file or total counts as complete when done. */
export function percent(loaded: number, total: number): number {
  if (total <= 0) return loaded >= total ? 100 : 0;
  return Math.min(100, Math.floor((loaded / total) * 100));
}

/** What to tell a person about a failed upload, by the API's error code or HTTP status. */
export function describeUploadError(code: string, status: number, fallback: string): string {
  switch (code) {
    case 'NAME_TAKEN':
      return 'A file with this name already exists here. Replace it, or rename yours and upload again.';
    case 'PERMISSION_DENIED':
    case 'TOKEN_SCOPE_INSUFFICIENT':
    case 'TOKEN_OUTSIDE_COLLECTION':
      return 'You may not write to this folder.';
    case 'PAYLOAD_TOO_LARGE':
      return 'The file is larger than this site accepts (upload limit or quota).';
    case 'NETWORK_ERROR':
      return 'The connection was lost during the upload. Retry when you are online.';
    case 'NOT_A_COLLECTION':
      return 'Something in the destination path is a file, not a folder.';
    case 'INVALID_PATH':
    case 'VALIDATION_FAILED':
      return `The name is not allowed: ${fallback}`;
    case 'UNAUTHENTICATED':
      return 'Your session has ended. Sign in again, then retry.';
    default:
      return status >= 500 ? `The server failed to store the file (${fallback}). Retry later.` : fallback;
  }
}
