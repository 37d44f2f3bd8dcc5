import { useCallback, useEffect, useState } from 'react';
import type { SessionDto } from '@tributary/shared';
import { ApiError, errorMessage, getSession, logout } from './api';
import { Browser } from './Browser';
import { SignInForm } from './SignInForm';

type SessionState =
  | { status: 'checking' }
  | { status: 'failed'; message: string }
  | { status: 'signed-out'; notice?: string }
  | { status: 'signed-in'; session: SessionDto };

/** Checks the session cookie, then shows either the sign-in form or the collection browser. */
export function App() {
  const [state, setState] = useState<SessionState>({ status: 'checking' });
  const [attempt, setAttempt] = useState(0);

  useEffect(() => {
    const controller = new AbortController();
    setState({ status: 'checking' });
    getSession(controller.signal).then(
      (session) => setState(session ? { status: 'signed-in', session } : { status: 'signed-out' }),
      (err: unknown) => {
        if (!controller.signal.aborted) setState({ status: 'failed', message: errorMessage(err) });
      },
    );
    return () => controller.abort();
  }, [attempt]);

  const onSessionExpired = useCallback(() => {
    setState({ status: 'signed-out', notice: 'Your session has ended. Please sign in again.' });
  }, []);

  switch (state.status) {
    case 'checking':
      return (
        <main className="centered">
          <p role="status">Loading…</p>
        </main>
      );
    case 'failed':
      return (
        <main className="centered">
          <p role="alert">{state.message}</p>
          <button type="button" onClick={() => setAttempt((n) => n + 1)}>
            Try again
          </button>
        </main>
      );
    case 'signed-out':
      return (
        <main className="centered">
          <SignInForm
            notice={state.notice}
            onSignedIn={(session) => setState({ status: 'signed-in', session })}
          />
        </main>
      );
    case 'signed-in':
      return (
        <>
          <Header
            session={state.session}
            onSignedOut={() => {
              // The next person to sign in starts at their own home, not at this path.
              history.replaceState(null, '', location.pathname);
              setState({ status: 'signed-out' });
            }}
          />
          <main>
            <Browser session={state.session} onSessionExpired={onSessionExpired} />
          </main>
        </>
      );
  }
}

function Header({ session, onSignedOut }: { session: SessionDto; onSignedOut: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const { user } = session;

  async function signOut() {
    setBusy(true);
    setError(null);
    try {
      await logout(session.csrfToken);
      onSignedOut();
    } catch (err) {
      // 401: the session was already gone, which is what signing out wants anyway.
      if (err instanceof ApiError && err.status === 401) {
        onSignedOut();
        return;
      }
      setError(errorMessage(err));
      setBusy(false);
    }
  }

  return (
    <header className="app-header">
      <span className="brand">Tributary</span>
      <div className="user">
        <span>
          Signed in as <strong>{user.displayName}</strong>
          {user.activeGroup !== null && (
            <>
              {' '}
              · group <strong>{user.activeGroup}</strong>
            </>
          )}
        </span>
        <button type="button" onClick={() => void signOut()} disabled={busy}>
          {busy ? 'Signing out…' : 'Sign out'}
        </button>
      </div>
      {error !== null && (
        <p role="alert" className="error">
          {error}
        </p>
      )}
    </header>
  );
}
