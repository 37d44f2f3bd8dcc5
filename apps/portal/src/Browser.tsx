import { useCallback, useEffect, useMemo, useRef, useState, type MouseEvent, type ReactNode } from 'react';
import type { EntryDto, SessionDto } from '@tributary/shared';
import { ApiError, errorMessage, listChildren } from './api';
import { breadcrumbs, formatBytes, formatDateTime, pathFromQuery, pathHref } from './format';

interface Props {
  session: SessionDto;
  onSessionExpired: () => void;
}

interface Listing {
  path: string;
  items: EntryDto[];
  total: number;
  nextCursor?: string;
}

/** Lists one collection; the path lives in the URL (`?path=…`) so it can be shared and reloaded. */
export function Browser({ session, onSessionExpired }: Props) {
  const home = session.user.homePath;
  const [path, navigate] = useUrlPath(home);
  const [listing, setListing] = useState<Listing | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [attempt, setAttempt] = useState(0);
  const [more, setMore] = useState<{ busy: boolean; error: string | null }>({ busy: false, error: null });
  const moreRequest = useRef<AbortController | null>(null);
  const heading = useRef<HTMLHeadingElement>(null);
  const movedByUser = useRef(false);

  const fail = useCallback(
    (err: unknown, show: (message: string) => void) => {
      if (err instanceof ApiError && err.status === 401) onSessionExpired();
      else show(errorMessage(err));
    },
    [onSessionExpired],
  );

  // The first page, whenever the path changes (or on "Try again").
  useEffect(() => {
    const controller = new AbortController();
    setListing(null);
    setError(null);
    setMore({ busy: false, error: null });
    listChildren({ path }, controller.signal).then(
      (page) => setListing({ path, ...page }),
      (err: unknown) => {
        if (!controller.signal.aborted) fail(err, setError);
      },
    );
    return () => {
      controller.abort();
      moreRequest.current?.abort();
    };
  }, [path, attempt, fail]);

  useEffect(() => {
    const name = breadcrumbs(path).at(-1)?.label ?? '/';
    document.title = `${name} · Tributary`;
    // After the person moves somewhere, put keyboard focus on the new heading rather than losing it.
    if (movedByUser.current) heading.current?.focus();
    movedByUser.current = false;
  }, [path]);

  const goTo = useCallback(
    (to: string) => {
      movedByUser.current = true;
      navigate(to);
    },
    [navigate],
  );

  function loadMore() {
    if (listing?.nextCursor === undefined || more.busy) return;
    const controller = new AbortController();
    moreRequest.current = controller;
    setMore({ busy: true, error: null });
    listChildren({ path: listing.path, cursor: listing.nextCursor }, controller.signal).then(
      (page) => {
        setListing((prev) =>
          prev && prev.path === listing.path
            ? {
                ...prev,
                items: [...prev.items, ...page.items],
                total: page.total,
                nextCursor: page.nextCursor,
              }
            : prev,
        );
        setMore({ busy: false, error: null });
      },
      (err: unknown) => {
        if (!controller.signal.aborted) fail(err, (message) => setMore({ busy: false, error: message }));
      },
    );
  }

  const rows = useMemo(() => (listing ? collectionsFirst(listing.items) : []), [listing]);

  return (
    <section aria-labelledby="listing-title" className="browser">
      <Breadcrumbs path={path} onNavigate={goTo} />
      <h1 id="listing-title" ref={heading} tabIndex={-1}>
        {breadcrumbs(path).at(-1)?.label}
      </h1>

      {error !== null ? (
        <div role="alert" className="error-box">
          <p>{error}</p>
          <button type="button" onClick={() => setAttempt((n) => n + 1)}>
            Try again
          </button>{' '}
          {path !== home && (
            <PathLink path={home} onNavigate={goTo}>
              Go to your home collection
            </PathLink>
          )}
        </div>
      ) : listing === null ? (
        <p role="status">Loading…</p>
      ) : (
        <>
          <p role="status" className="count">
            {countText(listing.items.length, listing.total)}
          </p>
          {rows.length > 0 && <EntryTable path={listing.path} entries={rows} onNavigate={goTo} />}
          {listing.nextCursor !== undefined && (
            <div className="more">
              {/* aria-disabled rather than disabled, so keyboard focus stays on the button. */}
              <button type="button" onClick={loadMore} aria-disabled={more.busy}>
                {more.busy ? 'Loading…' : 'Load more'}
              </button>
              {more.error !== null && (
                <span role="alert" className="error">
                  {more.error}
                </span>
              )}
            </div>
          )}
        </>
      )}
    </section>
  );
}

function Breadcrumbs({ path, onNavigate }: { path: string; onNavigate: (to: string) => void }) {
  const crumbs = breadcrumbs(path);
  return (
    <nav aria-label="Path" className="breadcrumbs">
      <ol>
        {crumbs.map((crumb, index) => (
          <li key={crumb.path}>
            {index === crumbs.length - 1 ? (
              <span aria-current="page">{crumb.path === '/' ? <RootLabel /> : crumb.label}</span>
            ) : (
              <PathLink path={crumb.path} onNavigate={onNavigate}>
                {crumb.path === '/' ? <RootLabel /> : crumb.label}
              </PathLink>
            )}
          </li>
        ))}
      </ol>
    </nav>
  );
}

function RootLabel() {
  return (
    <>
      <span aria-hidden="true">/</span>
      <span className="visually-hidden">Root</span>
    </>
  );
}

function EntryTable({
  path,
  entries,
  onNavigate,
}: {
  path: string;
  entries: EntryDto[];
  onNavigate: (to: string) => void;
}) {
  return (
    <div className="table-wrap">
      <table>
        <caption className="visually-hidden">Contents of {path}</caption>
        <thead>
          <tr>
            <th scope="col">Name</th>
            <th scope="col" className="num">
              Size
            </th>
            <th scope="col">Owner</th>
            <th scope="col">Modified</th>
            <th scope="col">Site</th>
            <th scope="col" className="num">
              Replicas
            </th>
          </tr>
        </thead>
        <tbody>
          {entries.map((entry) => (
            <tr key={entry.id}>
              <th scope="row" className="name">
                {entry.kind === 'collection' ? (
                  <PathLink path={entry.path} onNavigate={onNavigate}>
                    <span className="icon" aria-hidden="true">
                      ▸
                    </span>
                    {entry.name}
                    <span className="visually-hidden"> (collection)</span>
                  </PathLink>
                ) : (
                  <span>
                    <span className="icon" aria-hidden="true" />
                    {entry.name}
                  </span>
                )}
              </th>
              <td className="num" title={entry.kind === 'object' ? `${entry.size} bytes` : undefined}>
                {entry.kind === 'object' ? formatBytes(entry.size) : '—'}
              </td>
              <td>{entry.owner}</td>
              <td>
                <time dateTime={entry.modifiedAt}>{formatDateTime(entry.modifiedAt)}</time>
              </td>
              <td>{entry.site ?? '—'}</td>
              <td className="num">{entry.replicaCount}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * A real link (so it can be opened in a new tab or copied) that navigates in place on a plain click.
 */
function PathLink({
  path,
  onNavigate,
  children,
}: {
  path: string;
  onNavigate: (to: string) => void;
  children: ReactNode;
}) {
  function onClick(event: MouseEvent<HTMLAnchorElement>) {
    if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
    event.preventDefault();
    onNavigate(path);
  }
  return (
    <a href={pathHref(path)} onClick={onClick}>
      {children}
    </a>
  );
}

function countText(shown: number, total: number): string {
  if (total === 0) return 'This collection is empty.';
  const noun = total === 1 ? 'entry' : 'entries';
  return shown >= total ? `${total} ${noun}` : `Showing ${shown} of ${total} ${noun}`;
}

/** Collections before objects, otherwise in the order the API sent them. */
function collectionsFirst(entries: EntryDto[]): EntryDto[] {
  return [
    ...entries.filter((entry) => entry.kind === 'collection'),
    ...entries.filter((entry) => entry.kind !== 'collection'),
  ];
}

/** The current path, kept in `?path=` and in step with the browser's back and forward buttons. */
function useUrlPath(fallback: string): [string, (to: string) => void] {
  const [path, setPath] = useState(() => pathFromQuery(queryPath()) ?? fallback);

  useEffect(() => {
    const onPopState = () => setPath(pathFromQuery(queryPath()) ?? fallback);
    window.addEventListener('popstate', onPopState);
    return () => window.removeEventListener('popstate', onPopState);
  }, [fallback]);

  // Make the starting place (or a tidied `?path=`) shareable too, without adding a history entry.
  useEffect(() => {
    if (queryPath() !== path) history.replaceState(null, '', pathHref(path));
  }, [path]);

  const navigate = useCallback((to: string) => {
    if (queryPath() !== to) history.pushState(null, '', pathHref(to));
    setPath(to);
  }, []);

  return [path, navigate];
}

function queryPath(): string | null {
  return new URLSearchParams(location.search).get('path');
}
