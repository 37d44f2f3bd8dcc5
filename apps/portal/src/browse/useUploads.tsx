import { useCallback, useEffect, useReducer, useRef } from 'react';
import { useQueryClient } from '@tanstack/react-query';
import { ApiError, api, errorMessage, uploadFile } from '../api';
import { baseName, formatBytes, parentPath } from '../format';
import {
  describeUploadError,
  initialUploadState,
  nextToStart,
  percent,
  uploadReducer,
  uploadTotals,
  type UploadItem,
} from './uploadQueue';

const CONCURRENCY = 3;

/** A file to upload and its path relative to the drop target (`run1/a.csv` for a dropped folder). */
export interface PickedFile {
  file: File;
  relativePath: string;
}

/**
 * Runs the upload queue: at most three files at once, each with its own progress, cancel and retry.
 * Folders in a relative path are created first (`mkdir -p`).
 */
export function useUploads() {
  const [state, dispatch] = useReducer(uploadReducer, initialUploadState);
  const files = useRef(new Map<number, { file: File; base: string }>());
  const controllers = useRef(new Map<number, AbortController>());
  // One creation per folder, parents before children: two files of a dropped folder starting at
  // once must not race to create the same folders.
  const folders = useRef(new Map<string, Promise<void>>());
  const queryClient = useQueryClient();

  const nextId = useRef(1);

  const add = useCallback((target: string, picked: PickedFile[]) => {
    const batch = picked.map((p) => {
      const id = nextId.current++;
      files.current.set(id, { file: p.file, base: target });
      return { id, path: `${target === '/' ? '' : target}/${p.relativePath}`, size: p.file.size };
    });
    dispatch({ type: 'add', files: batch });
  }, []);

  useEffect(() => {
    for (const item of nextToStart(state, CONCURRENCY)) {
      const entry = files.current.get(item.id);
      if (entry === undefined) continue;
      dispatch({ type: 'start', id: item.id });
      const controller = new AbortController();
      controllers.current.set(item.id, controller);
      void run(item, entry.file, entry.base, controller.signal);
    }

    function ensureFolder(dir: string, base: string): Promise<void> {
      if (dir === base || dir === '/' || !dir.startsWith(base === '/' ? '/' : `${base}/`))
        return Promise.resolve();
      let made = folders.current.get(dir);
      if (made === undefined) {
        made = ensureFolder(parentPath(dir), base).then(() =>
          api.createCollection(dir).then(
            () => void queryClient.invalidateQueries({ queryKey: ['children', parentPath(dir)] }),
            (err: unknown) => {
              if (!(err instanceof ApiError && err.code === 'NAME_TAKEN')) throw err;
            },
          ),
        );
        // A failure is not remembered: a retry tries to create the folder again.
        made.catch(() => folders.current.delete(dir));
        folders.current.set(dir, made);
      }
      return made;
    }

    async function run(item: UploadItem, file: File, base: string, signal: AbortSignal) {
      const dir = parentPath(item.path);
      try {
        await ensureFolder(dir, base);
        await uploadFile(item.path, file, {
          overwrite: item.overwrite,
          signal,
          onProgress: (loaded) => dispatch({ type: 'progress', id: item.id, loaded }),
        });
        dispatch({ type: 'succeed', id: item.id });
        void queryClient.invalidateQueries({ queryKey: ['children', dir] });
      } catch (err) {
        if (err instanceof ApiError && err.code === 'ABORTED') return;
        const code = err instanceof ApiError ? err.code : 'NETWORK_ERROR';
        const status = err instanceof ApiError ? err.status : 0;
        dispatch({
          type: 'fail',
          id: item.id,
          code,
          message: describeUploadError(code, status, errorMessage(err)),
        });
      } finally {
        controllers.current.delete(item.id);
      }
    }
  }, [state, queryClient]);

  const cancel = useCallback((id: number) => {
    controllers.current.get(id)?.abort();
    dispatch({ type: 'cancel', id });
  }, []);
  const retry = useCallback(
    (id: number, overwrite?: boolean) => dispatch({ type: 'retry', id, overwrite }),
    [],
  );
  const clearFinished = useCallback(() => dispatch({ type: 'clear-finished' }), []);

  return { state, add, cancel, retry, clearFinished };
}

export type Uploads = ReturnType<typeof useUploads>;

/** The per-file and overall progress, with cancel, retry and replace. */
export function UploadPanel({ uploads }: { uploads: Uploads }) {
  const { state, cancel, retry, clearFinished } = uploads;
  if (state.items.length === 0) return null;
  const totals = uploadTotals(state);
  const overall = percent(totals.loaded, totals.total);
  return (
    <section className="upload-panel" aria-labelledby="uploads-title">
      <div className="upload-head">
        <h2 id="uploads-title">Uploads</h2>
        <span role="status">
          {totals.done} of {totals.count} done
          {totals.failed > 0 && `, ${totals.failed} failed`} · {formatBytes(totals.loaded)} of{' '}
          {formatBytes(totals.total)}
        </span>
        <progress aria-label="Overall upload progress" max={100} value={overall} />
        <button type="button" onClick={clearFinished}>
          Clear finished
        </button>
      </div>
      <ul className="upload-list">
        {state.items.map((it) => (
          <li key={it.id} className={`upload upload-${it.status}`} data-testid="upload-item">
            <span className="upload-name" title={it.path}>
              {baseName(it.path)}
            </span>
            <progress
              aria-label={`Progress of ${baseName(it.path)}`}
              max={100}
              value={percent(it.loaded, it.size)}
            />
            <span className="upload-status">
              {it.status === 'uploading'
                ? `${percent(it.loaded, it.size)} %`
                : it.status === 'queued'
                  ? 'waiting'
                  : it.status}
            </span>
            {(it.status === 'queued' || it.status === 'uploading') && (
              <button type="button" onClick={() => cancel(it.id)} aria-label={`Cancel ${baseName(it.path)}`}>
                Cancel
              </button>
            )}
            {(it.status === 'failed' || it.status === 'cancelled') && (
              <button type="button" onClick={() => retry(it.id)} aria-label={`Retry ${baseName(it.path)}`}>
                Retry
              </button>
            )}
            {it.status === 'failed' && it.error?.code === 'NAME_TAKEN' && (
              <button
                type="button"
                onClick={() => retry(it.id, true)}
                aria-label={`Replace the existing ${baseName(it.path)}`}
              >
                Replace
              </button>
            )}
            {it.error && (
              <span role="alert" className="error">
                {it.error.message}
              </span>
            )}
          </li>
        ))}
      </ul>
    </section>
  );
}

/** Files from a drop, folders walked recursively (their relative paths kept). */
export async function filesFromDrop(dt: DataTransfer): Promise<PickedFile[]> {
  const entries = Array.from(dt.items)
    .filter((i) => i.kind === 'file')
    .map((i) => i.webkitGetAsEntry?.() ?? null);
  if (entries.every((e) => e === null)) {
    return Array.from(dt.files).map((file) => ({ file, relativePath: file.name }));
  }
  const out: PickedFile[] = [];
  async function walk(entry: FileSystemEntry, prefix: string): Promise<void> {
    if (entry.isFile) {
      const file = await new Promise<File>((resolve, reject) =>
        (entry as FileSystemFileEntry).file(resolve, reject),
      );
      out.push({ file, relativePath: prefix + entry.name });
    } else if (entry.isDirectory) {
      const reader = (entry as FileSystemDirectoryEntry).createReader();
      for (;;) {
        const batch = await new Promise<FileSystemEntry[]>((resolve, reject) =>
          reader.readEntries(resolve, reject),
        );
        if (batch.length === 0) break;
        for (const child of batch) await walk(child, `${prefix}${entry.name}/`);
      }
    }
  }
  for (const e of entries) if (e !== null) await walk(e, '');
  return out;
}

/** Files from an `<input type=file>` (with `webkitdirectory`, their relative paths kept). */
export function filesFromInput(list: FileList | null): PickedFile[] {
  return Array.from(list ?? []).map((file) => ({
    file,
    relativePath: file.webkitRelativePath !== '' ? file.webkitRelativePath : file.name,
  }));
}
