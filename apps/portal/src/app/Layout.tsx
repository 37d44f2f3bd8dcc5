import { Suspense, useEffect, useId, useState } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { Navigate, NavLink, Outlet, useNavigate, useRouteError } from 'react-router';
import { ApiError, api, logout } from '../api';
import { browseHref } from '../format';
import { ErrorNote } from './ErrorNote';
import { useSession } from './session';
import { ThemeSwitch } from './theme';

/** Header (navigation, conflicts badge, active group, sign out) around the screen the URL names. */
export function Layout() {
  const { session } = useSession();
  const isAdmin = session.user.isAdmin;
  return (
    <>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="app-header">
        <span className="brand">Tributary</span>
        <nav aria-label="Main" className="main-nav">
          <NavLink to={browseHref(session.user.homePath)} className={navClass}>
            Browse
          </NavLink>
          <NavLink to="/search" className={navClass}>
            Search
          </NavLink>
          <ConflictsLink />
          <NavLink to="/trash" className={navClass}>
            Trash
          </NavLink>
          <NavLink to="/tokens" className={navClass}>
            Tokens
          </NavLink>
          {isAdmin && (
            <NavLink to="/sites" className={navClass}>
              Sites
            </NavLink>
          )}
          {isAdmin && (
            <NavLink to="/admin" className={navClass}>
              Admin
            </NavLink>
          )}
          {isAdmin && (
            <NavLink to="/transfers" className={navClass}>
              Transfers
            </NavLink>
          )}
        </nav>
        <UserMenu />
      </header>
      <main id="main">
        {/* Each screen is its own chunk (app/routes.tsx), loaded the first time it is opened. */}
        <Suspense fallback={<p role="status">Loading…</p>}>
          <Outlet />
        </Suspense>
      </main>
    </>
  );
}

function navClass({ isActive }: { isActive: boolean }): string {
  return isActive ? 'active' : '';
}

function ConflictsLink() {
  const summary = useQuery({
    queryKey: ['conflicts', 'summary'],
    queryFn: ({ signal }) => api.conflictSummary(signal),
    refetchInterval: 30_000,
  });
  const open = summary.data?.open ?? 0;
  const mine = summary.data?.involvingMe ?? 0;
  return (
    <NavLink
      to="/conflicts"
      className={navClass}
      aria-label={summary.data ? `Conflicts: ${open} open, ${mine} involving you` : 'Conflicts'}
    >
      Conflicts
      {open > 0 && (
        <span className={mine > 0 ? 'badge badge-mine' : 'badge'} data-testid="conflicts-badge">
          {open}
        </span>
      )}
    </NavLink>
  );
}

function UserMenu() {
  const { session, setUser, endSession } = useSession();
  const { user } = session;
  const queryClient = useQueryClient();
  const navigate = useNavigate();
  const groupId = useId();
  const switchGroup = useMutation({
    mutationFn: (group: string) => api.switchGroup(group),
    onSuccess: (u) => {
      setUser(u);
      void queryClient.invalidateQueries();
    },
  });
  const [signOutError, setSignOutError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);

  async function signOut() {
    setBusy(true);
    setSignOutError(null);
    try {
      await logout();
    } catch (err) {
      // 401: the session was already gone, which is what signing out wants anyway.
      if (!(err instanceof ApiError && err.status === 401)) {
        setSignOutError(err);
        setBusy(false);
        return;
      }
    }
    // The next person to sign in starts at their own home, not at this page.
    void navigate('/', { replace: true });
    endSession();
  }

  return (
    <div className="user">
      <NavLink to="/account" className={navClass} aria-label={`Your account: ${user.displayName}`}>
        <strong>{user.displayName}</strong>
      </NavLink>
      {user.groups.length === 0 && <span className="muted">no project group</span>}
      {user.groups.length > 0 && (
        <span className="group-switch">
          <label htmlFor={groupId}>Group</label>
          <select
            id={groupId}
            value={user.activeGroup ?? ''}
            disabled={switchGroup.isPending}
            onChange={(e) => switchGroup.mutate(e.target.value)}
          >
            {user.activeGroup === null && <option value="">(none)</option>}
            {user.groups.map((g) => (
              <option key={g} value={g}>
                {g}
              </option>
            ))}
          </select>
        </span>
      )}
      <ThemeSwitch />
      <button type="button" onClick={() => void signOut()} disabled={busy}>
        {busy ? 'Signing out…' : 'Sign out'}
      </button>
      <ErrorNote error={switchGroup.error ?? signOutError} />
    </div>
  );
}

export function HomeRedirect() {
  const { session } = useSession();
  return <Navigate to={browseHref(session.user.homePath)} replace />;
}

export function NotFound() {
  useTitle('Not found');
  return (
    <section>
      <h1>Page not found</h1>
      <p>
        Nothing lives at this address. <NavLink to="/">Go to your home collection</NavLink>.
      </p>
    </section>
  );
}

/** Shown instead of a screen that failed to render: what happened, and a way back. */
export function RouteError() {
  const error = useRouteError();
  return (
    <main className="centered">
      <h1>Something went wrong on this page</h1>
      <p role="alert">{error instanceof Error ? error.message : 'An unexpected error occurred.'}</p>
      <p>
        <a href="/">Go to your home collection</a> or reload the page.
      </p>
    </main>
  );
}

/** Sets the document title for a screen. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Tributary`;
  }, [title]);
}
