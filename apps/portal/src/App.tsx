import { useCallback, useEffect, useState } from 'react';
import type { SessionDto } from '@tributary/shared';
import { errorMessage, forgetSession, getSession } from './api';
import { queryClient, setUnauthenticatedHandler } from './app/queryClient';
import { SessionProvider } from './app/session';
import { Layout } from './app/Layout';
import { SignInForm } from './SignInForm';

type SessionState =
  | { status: 'checking' }
  | { status: 'failed'; message: string }
  | { status: 'signed-out'; notice?: string }
  | { status: 'signed-in'; session: SessionDto };

/**
 * The root route: checks the session cookie, then shows either the sign-in form (keeping the URL,
 * so a shared link opens after signing in) or the layout with the screen the URL names.
 */
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

  const endSession = useCallback((notice?: string) => {
    forgetSession();
    queryClient.clear();
    setState({ status: 'signed-out', notice });
  }, []);

  useEffect(() => {
    setUnauthenticatedHandler(() => endSession('Your session has ended. Please sign in again.'));
  }, [endSession]);

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
        <SessionProvider key={state.session.user.id} session={state.session} onEnded={endSession}>
          <Layout />
        </SessionProvider>
      );
  }
}
