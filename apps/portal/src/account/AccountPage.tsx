import { useId, useState, type FormEvent } from 'react';
import { useMutation } from '@tanstack/react-query';
import { api } from '../api';
import { ErrorNote } from '../app/ErrorNote';
import { useTitle } from '../app/Layout';
import { useSession } from '../app/session';
import { When } from '../app/When';

/** The signed-in user: who they are, their groups, and a password change. */
export function AccountPage() {
  useTitle('Account');
  const { user } = useSession().session;
  return (
    <section aria-labelledby="account-title" className="account">
      <h1 id="account-title">Your account</h1>
      <dl className="facts">
        <dt>Username</dt>
        <dd>{user.username}</dd>
        <dt>Name</dt>
        <dd>{user.displayName}</dd>
        <dt>E-mail</dt>
        <dd>{user.email ?? '—'}</dd>
        <dt>Home</dt>
        <dd>{user.homePath}</dd>
        <dt>Groups</dt>
        <dd>{user.groups.length ? user.groups.join(', ') : 'none'}</dd>
        <dt>Administrator</dt>
        <dd>{user.isAdmin ? 'yes' : 'no'}</dd>
        <dt>Since</dt>
        <dd>
          <When iso={user.createdAt} />
        </dd>
      </dl>
      <ChangePassword />
    </section>
  );
}

function ChangePassword() {
  const id = useId();
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [again, setAgain] = useState('');
  const mismatch = again !== '' && next !== again;
  const change = useMutation({
    mutationFn: () => api.changePassword(current, next),
    onSuccess: () => {
      setCurrent('');
      setNext('');
      setAgain('');
    },
  });
  function submit(e: FormEvent) {
    e.preventDefault();
    if (!mismatch && !change.isPending) change.mutate();
  }
  return (
    <form onSubmit={submit} className="stack-form">
      <fieldset>
        <legend>Change your password</legend>
        <label htmlFor={`${id}-c`}>Current password</label>
        <input
          id={`${id}-c`}
          type="password"
          autoComplete="current-password"
          required
          value={current}
          onChange={(e) => setCurrent(e.target.value)}
        />
        <label htmlFor={`${id}-n`}>New password (at least 12 characters)</label>
        <input
          id={`${id}-n`}
          type="password"
          autoComplete="new-password"
          required
          minLength={12}
          value={next}
          onChange={(e) => setNext(e.target.value)}
        />
        <label htmlFor={`${id}-a`}>New password again</label>
        <input
          id={`${id}-a`}
          type="password"
          autoComplete="new-password"
          required
          value={again}
          aria-invalid={mismatch}
          aria-describedby={mismatch ? `${id}-mm` : undefined}
          onChange={(e) => setAgain(e.target.value)}
        />
        <button type="submit" disabled={change.isPending}>
          Change password
        </button>
        {mismatch && (
          <span id={`${id}-mm`} role="alert" className="error">
            The two new passwords differ.
          </span>
        )}
      </fieldset>
      <ErrorNote error={change.error} />
      {change.isSuccess && <p role="status">Your password has been changed.</p>}
    </form>
  );
}
