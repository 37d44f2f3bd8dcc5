import { useId, useState, type FormEvent } from 'react';
import type { SessionDto } from '@tributary/shared';
import { errorMessage, login } from './api';

interface Props {
  /** Shown above the form, e.g. when a session has just expired. */
  notice?: string;
  onSignedIn: (session: SessionDto) => void;
}

export function SignInForm({ notice, onSignedIn }: Props) {
  const id = useId();
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);

  async function onSubmit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (busy) return;
    setBusy(true);
    setError(null);
    try {
      onSignedIn(await login(username.trim(), password));
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  }

  return (
    <form className="sign-in" onSubmit={(event) => void onSubmit(event)} aria-labelledby={`${id}-title`}>
      <h1 id={`${id}-title`}>Sign in to Tributary</h1>
      {notice !== undefined && <p className="notice">{notice}</p>}

      <label htmlFor={`${id}-username`}>Username</label>
      <input
        id={`${id}-username`}
        name="username"
        autoComplete="username"
        autoCapitalize="none"
        spellCheck={false}
        required
        autoFocus
        value={username}
        onChange={(event) => setUsername(event.target.value)}
      />

      <label htmlFor={`${id}-password`}>Password</label>
      <input
        id={`${id}-password`}
        name="password"
        type="password"
        autoComplete="current-password"
        required
        value={password}
        onChange={(event) => setPassword(event.target.value)}
      />

      <button type="submit" disabled={busy}>
        {busy ? 'Signing in…' : 'Sign in'}
      </button>

      {/* Always rendered so screen readers announce the message when it appears. */}
      <p role="alert" className="error">
        {error}
      </p>
    </form>
  );
}
