import { useId, useState } from 'react';
import { ErrorNote } from '../app/ErrorNote';
import { useSavedSearches } from './savedSearches';

/**
 * The search page's saved searches: the list (a click runs one), rename in place, forget, and "save
 * this search as". Kept by the API; every failure is shown next to the form or list that caused it.
 */
export function SavedSearches({
  q,
  scope,
  kind,
  canSave,
  onRun,
}: {
  q: string;
  scope: string;
  kind: 'object' | 'collection';
  canSave: boolean;
  onRun: (next: { q: string; scope: string; kind: string }) => void;
}) {
  const id = useId();
  const { list, saved, save, rename, remove } = useSavedSearches();
  const [name, setName] = useState('');
  const [renaming, setRenaming] = useState<{ id: string; name: string } | null>(null);
  return (
    <section aria-labelledby={`${id}-title`} className="saved">
      <h2 id={`${id}-title`}>Saved searches</h2>
      <ErrorNote error={list.error} />
      {list.isPending && <p className="muted">Loading…</p>}
      {list.isSuccess && saved.length === 0 && <p className="muted">None yet.</p>}
      <ul>
        {saved.map((s) => (
          <li key={s.id}>
            {renaming?.id === s.id ? (
              <form
                onSubmit={(e) => {
                  e.preventDefault();
                  rename.mutate(renaming, { onSuccess: () => setRenaming(null) });
                }}
              >
                <label htmlFor={`${id}-rename-${s.id}`} className="visually-hidden">
                  New name for {s.name}
                </label>
                <input
                  id={`${id}-rename-${s.id}`}
                  value={renaming.name}
                  onChange={(e) => setRenaming({ id: s.id, name: e.target.value })}
                  onKeyDown={(e) => {
                    if (e.key === 'Escape') setRenaming(null);
                  }}
                  autoFocus
                  required
                />
                <button type="submit" disabled={rename.isPending}>
                  Rename
                </button>
                <button type="button" onClick={() => setRenaming(null)}>
                  Cancel
                </button>
                <ErrorNote error={rename.error} />
              </form>
            ) : (
              <>
                <button
                  type="button"
                  className="link"
                  onClick={() => onRun({ q: s.query, scope: s.scope, kind: s.kind })}
                >
                  {s.name}
                </button>{' '}
                <button
                  type="button"
                  onClick={() => {
                    rename.reset();
                    setRenaming({ id: s.id, name: s.name });
                  }}
                  aria-label={`Rename saved search ${s.name}`}
                >
                  ✎
                </button>{' '}
                <button
                  type="button"
                  onClick={() => remove.mutate(s.id)}
                  disabled={remove.isPending}
                  aria-label={`Forget saved search ${s.name}`}
                >
                  ×
                </button>
              </>
            )}
          </li>
        ))}
      </ul>
      <ErrorNote error={remove.error} />
      {canSave && (
        <form
          onSubmit={(e) => {
            e.preventDefault();
            if (name.trim() === '') return;
            save.mutate({ name: name.trim(), query: q, scope, kind }, { onSuccess: () => setName('') });
          }}
        >
          <label htmlFor={`${id}-name`}>Save this search as</label>
          <input id={`${id}-name`} value={name} onChange={(e) => setName(e.target.value)} required />
          <button type="submit" disabled={save.isPending}>
            Save
          </button>
          <ErrorNote error={save.error} />
        </form>
      )}
      <p className="muted small">Kept with your account: at every site, in every browser.</p>
    </section>
  );
}
