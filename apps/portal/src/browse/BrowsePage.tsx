import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Link, useNavigate, useParams, useSearchParams } from 'react-router';
import { formatMode, joinPath, type EntryDto } from '@tributary/shared';
import { api, downloadHref } from '../api';
import { ColumnResizer } from '../app/ColumnResizer';
import { useColumnWidths } from '../app/columnWidths';
import { ErrorNote } from '../app/ErrorNote';
import { useConfirm } from '../app/ConfirmDialog';
import { useTitle } from '../app/Layout';
import { baseName, breadcrumbs, browseHref, formatBytes, parentPath, pathFromSplat } from '../format';
import { CopiesPanel } from '../placement/CopiesPanel';
import { StorageUsage } from './StorageUsage';
import { ObjectCopies } from '../placement/ObjectCopies';
import { ObjectShards } from '../placement/ObjectShards';
import { archiveOnly, tierLabel, tiersMoving } from '../placement/tiers';
import { MetadataPanel, TripleFormView, toInput } from './MetadataPanel';
import { FolderTree } from './FolderTree';
import { Preview } from './Preview';
import { filesFromDrop, filesFromInput, UploadPanel, useUploads, type Uploads } from './useUploads';
import { rowWindow } from './virtualRows';
import { useListing } from './useListing';
import { DRAG_TYPE, dropTarget } from './dnd';
import { When } from '../app/When';

const ROW = 36;
type Sort = 'name' | 'size' | 'modified';

/**
 * One collection: breadcrumb, folder tree, a sortable table paged from the server and rendered as a
 * window (so 100,000 entries scroll smoothly), uploads, and the details of the entry in focus.
 * URL: `/browse/<path>?sort=&order=&entry=<name>`.
 */
export function BrowsePage() {
  const [confirm, confirmation] = useConfirm();
  const params = useParams();
  const path = pathFromSplat(params['*']);
  const [search, setSearch] = useSearchParams();
  const sort = (['name', 'size', 'modified'] as const).find((s) => s === search.get('sort')) ?? 'name';
  const order = search.get('order') === 'desc' ? 'desc' : 'asc';
  const activeName = search.get('entry');
  const navigate = useNavigate();
  const queryClient = useQueryClient();
  const uploads = useUploads();
  const [selected, setSelected] = useState<Set<string>>(new Set());
  const [actionError, setActionError] = useState<unknown>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  useTitle(baseName(path));

  useEffect(() => {
    setSelected(new Set());
    setActionError(null);
  }, [path]);

  const listing = useListing(path, sort, order);
  const { total } = listing;
  const loadedActive = listing.loaded.find((e) => e.name === activeName);
  // An entry named in the URL but not on a loaded page (a link from search into a large folder).
  const activeStat = useQuery({
    queryKey: ['stat', activeName === null ? '' : joinPath(path, activeName)],
    queryFn: () => api.stat(joinPath(path, activeName ?? '')),
    enabled: activeName !== null && loadedActive === undefined && !listing.isPending,
  });
  const active = loadedActive ?? activeStat.data ?? null;
  // Entries of this folder with an open conflict (about them or one of their attributes).
  const conflicts = useQuery({
    queryKey: ['conflicts', 'in', path],
    queryFn: ({ signal }) => api.listConflicts({ status: 'open', path, limit: 100 }, signal),
    refetchInterval: 30_000,
  });
  const conflicted = new Set(
    (conflicts.data?.items ?? []).flatMap((c) => [c.entry.path, c.entry.on].filter((x) => x !== null)),
  );

  const refresh = () => void queryClient.invalidateQueries({ queryKey: ['children'] });
  const move = useMutation({
    mutationFn: async ({ from, to }: { from: string[]; to: string }) => {
      // The API takes the new full path: the entry keeps its name inside the target collection.
      for (const f of from) await api.move(f, joinPath(to, baseName(f)));
    },
    onSuccess: () => {
      setSelected(new Set());
      refresh();
    },
    onError: setActionError,
  });
  const remove = useMutation({
    mutationFn: async (paths: string[]) => {
      for (const p of paths) await api.remove(p);
    },
    onSuccess: () => {
      setSelected(new Set());
      refresh();
      void queryClient.invalidateQueries({ queryKey: ['trash'] });
    },
    onError: setActionError,
  });

  function setParam(changes: Record<string, string | null>) {
    const next = new URLSearchParams(search);
    for (const [k, v] of Object.entries(changes)) {
      if (v === null) next.delete(k);
      else next.set(k, v);
    }
    setSearch(next, { replace: true });
  }

  function open(entry: EntryDto) {
    if (entry.kind === 'collection') void navigate(browseHref(entry.path));
    else setParam({ entry: entry.name });
  }

  function confirmDelete(paths: string[]) {
    if (paths.length === 0) return;
    const what = paths.length === 1 ? `"${baseName(paths[0]!)}"` : `${paths.length} entries`;
    void confirm({ title: `Move ${what} to the trash?`, action: 'Move to trash' }).then((yes) => {
      if (!yes) return;
      setActionError(null);
      remove.mutate(paths);
    });
  }

  function moveInto(target: string, from: string[]) {
    const moving = from.filter(
      (f) => f !== target && parentPath(f) !== target && !target.startsWith(`${f}/`),
    );
    if (moving.length === 0) return;
    setActionError(null);
    move.mutate({ from: moving, to: target });
  }

  return (
    <div className={active ? 'browse with-details' : 'browse'}>
      {confirmation}
      <aside className="tree-pane" aria-label="Folders">
        <FolderTree current={path} onDropPaths={moveInto} />
      </aside>
      <section aria-labelledby="listing-title" className="listing-pane">
        <Breadcrumbs path={path} onDropPaths={moveInto} />
        <h1 id="listing-title" ref={heading} tabIndex={-1}>
          {path === '/' ? 'Root' : baseName(path)}
        </h1>
        <Toolbar
          path={path}
          uploads={uploads}
          selected={[...selected]}
          onDelete={() => confirmDelete([...selected])}
          onMove={(to) => moveInto(to, [...selected])}
          busy={move.isPending || remove.isPending}
        />
        <ErrorNote error={actionError} />
        {listing.error ? (
          <ErrorNote error={listing.error}>
            <button type="button" onClick={() => void listing.refetch()}>
              Try again
            </button>{' '}
            <Link to="/">Go to your home collection</Link>
          </ErrorNote>
        ) : listing.isPending ? (
          <p role="status">Loading…</p>
        ) : (
          <>
            <p role="status" className="count">
              {total === 1 ? '1 entry' : `${total.toLocaleString()} entries`}
              {selected.size > 0 && ` · ${selected.size} selected`}
            </p>
            <EntryTable
              path={path}
              rowAt={listing.rowAt}
              loaded={listing.loaded}
              total={total}
              sort={sort}
              order={order}
              selected={selected}
              activeName={activeName}
              conflicted={conflicted}
              loadingMore={listing.isFetching}
              onShowRows={listing.showRows}
              onSort={(s) =>
                setParam({
                  sort: s,
                  order: s === sort && order === 'asc' ? 'desc' : s !== sort ? 'asc' : 'asc',
                })
              }
              onToggle={(p) =>
                setSelected((prev) => {
                  const next = new Set(prev);
                  if (next.has(p)) next.delete(p);
                  else next.add(p);
                  return next;
                })
              }
              onToggleAll={(all) => setSelected(all ? new Set(listing.loaded.map((e) => e.path)) : new Set())}
              onOpen={open}
              onDelete={(e) => confirmDelete(selected.has(e.path) ? [...selected] : [e.path])}
              onDropPaths={moveInto}
              onDropFiles={(files) => uploads.add(path, files)}
              onRenamed={refresh}
            />
          </>
        )}
        {selected.size > 0 && <BulkTag paths={[...selected]} />}
        <UploadPanel uploads={uploads} />
        <StorageUsage path={path} />
        <CopiesPanel path={path} />
      </section>
      {active && (
        <aside className="details-pane" aria-label={`Details of ${active.name}`}>
          <Details entry={active} onClose={() => setParam({ entry: null })} />
        </aside>
      )}
    </div>
  );
}

function Breadcrumbs({
  path,
  onDropPaths,
}: {
  path: string;
  onDropPaths: (to: string, from: string[]) => void;
}) {
  const crumbs = breadcrumbs(path);
  return (
    <nav aria-label="Path" className="breadcrumbs">
      <ol>
        {crumbs.map((crumb, index) => (
          <li key={crumb.path} {...dropTarget(crumb.path, onDropPaths)}>
            {index === crumbs.length - 1 ? (
              <span aria-current="page">{crumb.path === '/' ? 'Root' : crumb.label}</span>
            ) : (
              <Link to={browseHref(crumb.path)}>{crumb.path === '/' ? 'Root' : crumb.label}</Link>
            )}
          </li>
        ))}
      </ol>
    </nav>
  );
}

function Toolbar({
  path,
  uploads,
  selected,
  onDelete,
  onMove,
  busy,
}: {
  path: string;
  uploads: Uploads;
  selected: string[];
  onDelete: () => void;
  onMove: (to: string) => void;
  busy: boolean;
}) {
  const id = useId();
  const queryClient = useQueryClient();
  const [mode, setMode] = useState<'none' | 'folder' | 'move'>('none');
  const [name, setName] = useState('');
  const files = useRef<HTMLInputElement>(null);
  const folder = useRef<HTMLInputElement>(null);
  const mkdir = useMutation({
    mutationFn: (n: string) => api.createCollection(joinPath(path, n)),
    onSuccess: () => {
      setName('');
      setMode('none');
      void queryClient.invalidateQueries({ queryKey: ['children', path] });
    },
  });

  useEffect(() => {
    // Folder picking is not in the DOM typings' attribute list; set it on the element.
    folder.current?.setAttribute('webkitdirectory', '');
  }, []);

  function submit(e: FormEvent) {
    e.preventDefault();
    if (mode === 'folder') mkdir.mutate(name.trim());
    else if (mode === 'move') {
      onMove(name.trim());
      setMode('none');
    }
  }

  return (
    <div className="toolbar">
      <div className="toolbar-buttons">
        <button type="button" onClick={() => setMode(mode === 'folder' ? 'none' : 'folder')}>
          New folder
        </button>
        <button type="button" onClick={() => files.current?.click()}>
          Upload files
        </button>
        <button type="button" onClick={() => folder.current?.click()}>
          Upload folder
        </button>
        <input
          ref={files}
          type="file"
          multiple
          hidden
          aria-label="Files to upload"
          onChange={(e) => {
            uploads.add(path, filesFromInput(e.target.files));
            e.target.value = '';
          }}
        />
        <input
          ref={folder}
          type="file"
          hidden
          aria-label="Folder to upload"
          onChange={(e) => {
            uploads.add(path, filesFromInput(e.target.files));
            e.target.value = '';
          }}
        />
        {selected.length > 0 && (
          <>
            <button
              type="button"
              onClick={() => {
                setName(path);
                setMode('move');
              }}
              disabled={busy}
            >
              Move selected…
            </button>
            <button type="button" onClick={onDelete} disabled={busy} className="danger">
              Delete selected
            </button>
          </>
        )}
      </div>
      {mode !== 'none' && (
        <form onSubmit={submit} className="inline-form">
          <label htmlFor={`${id}-name`}>
            {mode === 'folder' ? 'Folder name' : 'Move to (collection path)'}
          </label>
          <input
            id={`${id}-name`}
            autoFocus
            required
            value={name}
            onChange={(e) => setName(e.target.value)}
            onKeyDown={(e) => e.key === 'Escape' && setMode('none')}
          />
          <button type="submit" disabled={mkdir.isPending}>
            {mode === 'folder' ? 'Create' : 'Move'}
          </button>
          <button type="button" onClick={() => setMode('none')}>
            Cancel
          </button>
          <ErrorNote error={mkdir.error} />
        </form>
      )}
    </div>
  );
}

function EntryTable(props: {
  path: string;
  /** The entry at a position, when its page is loaded. */
  rowAt: (index: number) => EntryDto | undefined;
  /** Every loaded entry (for "select all loaded"). */
  loaded: EntryDto[];
  total: number;
  sort: Sort;
  order: 'asc' | 'desc';
  selected: Set<string>;
  activeName: string | null;
  /** Paths of entries with an open conflict. */
  conflicted: ReadonlySet<string>;
  loadingMore: boolean;
  /** The rows in view changed: load their pages. */
  onShowRows: (start: number, end: number) => void;
  onSort: (s: Sort) => void;
  onToggle: (path: string) => void;
  onToggleAll: (all: boolean) => void;
  onOpen: (e: EntryDto) => void;
  onDelete: (e: EntryDto) => void;
  onDropPaths: (to: string, from: string[]) => void;
  onDropFiles: (files: Awaited<ReturnType<typeof filesFromDrop>>) => void;
  onRenamed: () => void;
}) {
  const { rowAt, loaded, total, selected, onShowRows } = props;
  const scroller = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 600 });
  const [renaming, setRenaming] = useState<string | null>(null);
  // Roving tab stop: one row is in the tab order (Tab enters the table there), arrows move it.
  const [current, setCurrent] = useState(0);
  const [dropping, setDropping] = useState(false);
  // Widths set with the headers' handles, kept in this browser for every collection.
  const columns = useColumnWidths('tributary.browse.columns');
  const win = rowWindow({
    scrollTop: view.top,
    viewHeight: view.height,
    rowHeight: ROW,
    count: total,
    loaded: total,
  });

  useEffect(() => {
    const el = scroller.current;
    if (el === null) return;
    const measure = () => setView({ top: el.scrollTop, height: el.clientHeight });
    measure();
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    onShowRows(win.start, win.end);
  }, [win.start, win.end, onShowRows]);

  const pendingFocus = useRef<number | null>(null);
  function focusRow(index: number) {
    const el = scroller.current;
    if (el === null || index < 0 || index >= total) return;
    setCurrent(index);
    const top = index * ROW;
    if (top < el.scrollTop + ROW) el.scrollTop = Math.max(0, top - ROW);
    else if (top + ROW > el.scrollTop + el.clientHeight) el.scrollTop = top + 2 * ROW - el.clientHeight;
    // The row may be on a page still on its way (End in a large collection): focused once it is rendered.
    pendingFocus.current = index;
    requestAnimationFrame(focusPending);
  }

  function focusPending() {
    const index = pendingFocus.current;
    const row =
      index === null ? null : scroller.current?.querySelector<HTMLElement>(`tr[data-index="${index}"]`);
    if (row) {
      pendingFocus.current = null;
      row.focus();
    }
  }
  // After every render: a row waited for may have arrived.
  useEffect(focusPending);

  function onRowKey(e: KeyboardEvent<HTMLTableRowElement>, entry: EntryDto, index: number) {
    if (e.target !== e.currentTarget) return;
    switch (e.key) {
      case 'Enter':
        e.preventDefault();
        props.onOpen(entry);
        break;
      case 'Delete':
        e.preventDefault();
        props.onDelete(entry);
        break;
      case 'F2':
        e.preventDefault();
        setRenaming(entry.path);
        break;
      case ' ':
        e.preventDefault();
        props.onToggle(entry.path);
        break;
      case 'ArrowDown':
        e.preventDefault();
        focusRow(index + 1);
        break;
      case 'ArrowUp':
        e.preventDefault();
        focusRow(index - 1);
        break;
      case 'Home':
        e.preventDefault();
        focusRow(0);
        break;
      case 'End':
        e.preventDefault();
        focusRow(total - 1);
        break;
    }
  }

  const allSelected = loaded.length > 0 && loaded.every((e) => selected.has(e.path));
  const resizer = (id: string, label: string) => (
    <ColumnResizer label={label} width={columns.widths[id]} onResize={(w) => columns.setWidth(id, w)} />
  );
  const sortHeader = (key: Sort, label: string) => (
    <th
      scope="col"
      className={`col-${key}`}
      aria-sort={props.sort === key ? (props.order === 'asc' ? 'ascending' : 'descending') : 'none'}
    >
      <button type="button" className="sort" onClick={() => props.onSort(key)}>
        {label}
        <span aria-hidden="true">{props.sort === key ? (props.order === 'asc' ? ' ▲' : ' ▼') : ''}</span>
      </button>
      {resizer(key, label)}
    </th>
  );

  return (
    <div
      ref={scroller}
      className={dropping ? 'table-scroll dropping' : 'table-scroll'}
      onScroll={(e) => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight })}
      onDragOver={(e) => {
        if (e.dataTransfer.types.includes('Files')) {
          e.preventDefault();
          setDropping(true);
        }
      }}
      onDragLeave={() => setDropping(false)}
      onDrop={(e) => {
        setDropping(false);
        if (!e.dataTransfer.types.includes('Files')) return;
        e.preventDefault();
        void filesFromDrop(e.dataTransfer).then(props.onDropFiles);
      }}
      data-testid="drop-zone"
    >
      <table
        className={Object.keys(columns.widths).length > 0 ? 'entries sized' : 'entries'}
        aria-rowcount={total + 1}
        style={columns.style}
      >
        <thead>
          <tr>
            <th scope="col" className="check">
              <input
                type="checkbox"
                aria-label="Select all loaded entries"
                checked={allSelected}
                onChange={(e) => props.onToggleAll(e.target.checked)}
              />
            </th>
            {sortHeader('name', 'Name')}
            {sortHeader('size', 'Size')}
            <th scope="col" className="col-owner">
              Owner
              {resizer('owner', 'Owner')}
            </th>
            {sortHeader('modified', 'Modified')}
            <th scope="col" className="col-site" title="The site holding the bytes">
              Site
              {resizer('site', 'Site')}
            </th>
            <th scope="col" className="col-replicas" title="How many sites hold a copy">
              Copies
              {resizer('replicas', 'Copies')}
            </th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {win.before > 0 && <tr aria-hidden="true" style={{ height: win.before }} />}
          {Array.from({ length: win.end - win.start }, (_, k) => {
            const index = win.start + k;
            const entry = rowAt(index);
            if (entry === undefined) {
              return (
                <tr key={`loading-${index}`} className="row" aria-rowindex={index + 2}>
                  <td colSpan={8} className="muted">
                    Loading…
                  </td>
                </tr>
              );
            }
            return (
              <Row
                key={entry.id}
                entry={entry}
                index={index}
                selected={selected.has(entry.path)}
                active={props.activeName === entry.name}
                conflicted={props.conflicted.has(entry.path)}
                renaming={renaming === entry.path}
                dragPaths={selected.has(entry.path) ? [...selected] : [entry.path]}
                tabStop={index === Math.min(current, total - 1)}
                onFocus={() => setCurrent(index)}
                onKeyDown={(e) => onRowKey(e, entry, index)}
                onToggle={() => props.onToggle(entry.path)}
                onOpen={() => props.onOpen(entry)}
                onRename={() => setRenaming(entry.path)}
                onRenameDone={(changed) => {
                  setRenaming(null);
                  if (changed) props.onRenamed();
                }}
                onDropPaths={props.onDropPaths}
              />
            );
          })}
          {win.after > 0 && <tr aria-hidden="true" style={{ height: win.after }} />}
        </tbody>
      </table>
      {total === 0 && <p className="empty">This collection is empty. Drop files here to upload.</p>}
      {props.loadingMore && (
        <p role="status" className="visually-hidden">
          Loading more…
        </p>
      )}
    </div>
  );
}

function Row({
  entry,
  index,
  selected,
  active,
  renaming,
  dragPaths,
  tabStop,
  conflicted,
  onFocus,
  onKeyDown,
  onToggle,
  onOpen,
  onRename,
  onRenameDone,
  onDropPaths,
}: {
  entry: EntryDto;
  index: number;
  selected: boolean;
  active: boolean;
  renaming: boolean;
  dragPaths: string[];
  tabStop: boolean;
  conflicted: boolean;
  onFocus: () => void;
  onKeyDown: (e: KeyboardEvent<HTMLTableRowElement>) => void;
  onToggle: () => void;
  onOpen: () => void;
  onRename: () => void;
  onRenameDone: (changed: boolean) => void;
  onDropPaths: (to: string, from: string[]) => void;
}) {
  const isCollection = entry.kind === 'collection';
  const drop = isCollection ? dropTarget(entry.path, onDropPaths) : {};
  return (
    <tr
      className={`row${selected ? ' selected' : ''}${active ? ' active' : ''}`}
      data-index={index}
      aria-rowindex={index + 2}
      aria-selected={selected}
      tabIndex={tabStop ? 0 : -1}
      onFocus={(e) => {
        if (e.target === e.currentTarget) onFocus();
      }}
      draggable={!renaming}
      onDragStart={(e) => {
        e.dataTransfer.setData(DRAG_TYPE, JSON.stringify(dragPaths));
        e.dataTransfer.effectAllowed = 'move';
      }}
      onKeyDown={onKeyDown}
      onDoubleClick={onOpen}
      {...drop}
    >
      <td className="check">
        <input type="checkbox" aria-label={`Select ${entry.name}`} checked={selected} onChange={onToggle} />
      </td>
      <td className="name col-name">
        {renaming ? (
          <RenameForm entry={entry} onDone={onRenameDone} />
        ) : isCollection ? (
          <Link to={browseHref(entry.path)} tabIndex={-1} title={entry.name}>
            <FolderIcon />
            {entry.name}
          </Link>
        ) : (
          <button type="button" className="link" tabIndex={-1} onClick={onOpen} title={entry.name}>
            <FileIcon name={entry.name} link={entry.kind === 'symlink'} />
            {entry.name}
          </button>
        )}
        {conflicted && !renaming && (
          <Link
            to={`/conflicts?path=${encodeURIComponent(entry.path)}`}
            className="conflict-mark"
            tabIndex={-1}
            aria-label={`${entry.name} has an open conflict`}
            title="An open conflict between sites: see and decide it"
          >
            conflict
          </Link>
        )}
        {entry.kind === 'symlink' && !renaming && (
          <span className="link-target" title="Symbolic link: its target, as written (not followed)">
            {' → '}
            {entry.linkTarget}
          </span>
        )}
      </td>
      <td className="num col-size">{entry.kind === 'object' ? formatBytes(entry.size) : '—'}</td>
      <td className="col-owner">
        <span className="cell-clip" title={entry.owner}>
          {entry.owner}
        </span>
      </td>
      <td className="col-modified">
        <span className="cell-clip">
          <When iso={entry.modifiedAt} />
        </span>
      </td>
      <td className="col-site">
        <span className="cell-clip">{entry.site ?? '—'}</span>
      </td>
      <td className="num col-replicas">{isCollection ? '—' : entry.replicaCount}</td>
      <td>
        <div className="actions">
          <button type="button" onClick={onRename} aria-label={`Rename ${entry.name}`} tabIndex={-1}>
            Rename
          </button>
          {entry.kind === 'object' && (
            <a
              href={downloadHref(entry.path)}
              download={entry.name}
              aria-label={`Download ${entry.name}`}
              tabIndex={-1}
            >
              Download
            </a>
          )}
        </div>
      </td>
    </tr>
  );
}

/** Kinds of files people tell apart at a glance, by the name's extension. */
const FILE_KINDS: Array<[RegExp, string, string]> = [
  [/\.(csv|tsv|xlsx?|parquet)$/i, 'table', 'M2 2h12v12H2zM2 6h12M2 10h12M6 2v12'],
  [
    /\.(json|ya?ml|toml|xml)$/i,
    'structured text',
    'M6 2C4 2 5 7 3 8c2 1 1 6 3 6M10 2c2 0 1 5 3 6-2 1-1 6-3 6',
  ],
  [/\.(png|jpe?g|gif|webp|svg|tiff?)$/i, 'image', 'M2 3h12v10H2zM2 11l4-4 3 3 2-2 3 3'],
  [
    /\.(fits?|fts|h5|hdf5?|nc|zarr)$/i,
    'scientific data',
    'M8 1l6 3.5v7L8 15l-6-3.5v-7zM2 4.5 8 8l6-3.5M8 8v7',
  ],
  [/\.(tar|gz|tgz|zip|bz2|xz|7z|zst)$/i, 'archive', 'M3 2h10v12H3zM8 2v2M8 5v2M8 8v2'],
  [/\.(txt|md|log|rst)$/i, 'text', 'M3 2h7l3 3v9H3zM5 7h6M5 9.5h6M5 12h4'],
  [/\.(py|r|jl|m|c|h|cpp|rs|go|js|ts|sh|ipynb)$/i, 'code', 'M6 4 2 8l4 4M10 4l4 4-4 4'],
];

/** An icon for the kind of file, from its name (a generic page for the rest). */
function FileIcon({ name, link }: { name: string; link: boolean }) {
  const [, kind, d] = FILE_KINDS.find(([re]) => re.test(name)) ?? [null, 'file', 'M3 2h7l3 3v9H3zM10 2v3h3'];
  return (
    <svg
      className={`file-icon file-${kind.replace(/ /g, '-')}`}
      width="16"
      height="16"
      viewBox="0 0 16 16"
      aria-hidden="true"
    >
      <title>{link ? `link to ${kind}` : kind}</title>
      <path d={d} />
    </svg>
  );
}

function FolderIcon() {
  return (
    <svg className="folder-icon" width="16" height="13" viewBox="0 0 16 13" aria-hidden="true">
      <path d="M1 2.5A1.5 1.5 0 0 1 2.5 1H6l1.5 1.5h6A1.5 1.5 0 0 1 15 4v6.5a1.5 1.5 0 0 1-1.5 1.5h-11A1.5 1.5 0 0 1 1 10.5z" />
    </svg>
  );
}

function RenameForm({ entry, onDone }: { entry: EntryDto; onDone: (changed: boolean) => void }) {
  const [name, setName] = useState(entry.name);
  const rename = useMutation({
    mutationFn: (n: string) => api.move(entry.path, joinPath(parentPath(entry.path), n)),
    onSuccess: () => onDone(true),
  });
  return (
    <form
      className="rename"
      onSubmit={(e) => {
        e.preventDefault();
        if (name.trim() === entry.name) onDone(false);
        else rename.mutate(name.trim());
      }}
    >
      <input
        aria-label={`New name for ${entry.name}`}
        autoFocus
        value={name}
        onChange={(e) => setName(e.target.value)}
        onKeyDown={(e) => {
          if (e.key === 'Escape') onDone(false);
          e.stopPropagation();
        }}
      />
      <button type="submit" disabled={rename.isPending}>
        Save
      </button>
      <ErrorNote error={rename.error} />
    </form>
  );
}

function Details({ entry, onClose }: { entry: EntryDto; onClose: () => void }) {
  const stat = useQuery({
    queryKey: ['stat', entry.path],
    queryFn: () => api.stat(entry.path),
    refetchInterval: (q) => (tiersMoving(q.state.data?.replicas) ? 2_000 : false),
  });
  // Held here only in a compound resource's archive: the download waits while it is staged.
  const staged = archiveOnly(stat.data?.replicas);
  const canWrite = entry.access === 'write' || entry.access === 'own';
  return (
    <div className="details">
      <div className="details-head">
        <h2>{entry.name}</h2>
        <button type="button" onClick={onClose} aria-label="Close details">
          ×
        </button>
      </div>
      <dl>
        <dt>Path</dt>
        <dd>{entry.path}</dd>
        {entry.kind === 'symlink' ? (
          <>
            <dt>Link to</dt>
            <dd className="mono">{entry.linkTarget}</dd>
          </>
        ) : (
          <>
            <dt>Size</dt>
            <dd>{formatBytes(entry.size)}</dd>
          </>
        )}
        <dt>Owner</dt>
        <dd>{entry.owner}</dd>
        <dt>Mode</dt>
        <dd className="mono">
          {formatMode(entry.kind, entry.mode)} ({entry.mode.toString(8).padStart(4, '0')})
        </dd>
        <dt>File time</dt>
        <dd>
          <When iso={entry.mtime} />
        </dd>
        <dt>Record changed</dt>
        <dd>
          <When iso={entry.modifiedAt} />
        </dd>
        {entry.kind === 'object' && (
          <>
            <dt>Checksum</dt>
            <dd className="mono">{entry.checksum ?? '—'}</dd>
            <dt>Replicas</dt>
            <dd>
              {stat.data?.replicas
                .map((r) => `${r.site} (${r.status}${r.tier ? `, ${tierLabel(r.tier)}` : ''})`)
                .join(', ') ?? '…'}
            </dd>
          </>
        )}
      </dl>
      <ErrorNote error={stat.error} />
      {entry.kind === 'object' && (
        <p>
          <a
            href={staged ? `${downloadHref(entry.path)}&wait=600` : downloadHref(entry.path)}
            download={entry.name}
          >
            Download
          </a>
          {staged && (
            <span className="muted" data-testid="staging-note">
              {' '}
              Kept in the archive only: the download starts once it is staged into the cache.
            </span>
          )}
        </p>
      )}
      <Preview entry={entry} />
      {entry.kind === 'object' && <ObjectCopies path={entry.path} />}
      {entry.kind === 'object' && <ObjectShards path={entry.path} />}
      <MetadataPanel path={entry.path} canWrite={canWrite} />
    </div>
  );
}

function BulkTag({ paths }: { paths: string[] }) {
  const queryClient = useQueryClient();
  const tag = useMutation({
    mutationFn: (t: Parameters<typeof toInput>[0]) =>
      api.bulkMetadata({ operations: [{ paths, add: [toInput(t)] }] }),
    onSuccess: () => void queryClient.invalidateQueries({ queryKey: ['metadata'] }),
  });
  return (
    <div className="bulk-tag">
      <TripleFormView
        legend={`Tag ${paths.length} selected`}
        submitLabel="Tag selected"
        busy={tag.isPending}
        error={tag.error}
        onSubmit={(t, reset) => tag.mutate(t, { onSuccess: reset })}
      />
      {tag.data && (
        <p role="status">
          Tagged {tag.data.targets} {tag.data.targets === 1 ? 'entry' : 'entries'} ({tag.data.added} added).
        </p>
      )}
    </div>
  );
}
