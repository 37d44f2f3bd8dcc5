import { useCallback, useState } from 'react';
import { useSession } from '../app/session';

/**
 * Saved searches, per user, in this browser's localStorage. (The API has no saved-search store yet;
 * a search is also a URL, which can be bookmarked or shared.)
 */
export interface SavedSearch {
  name: string;
  q: string;
  scope: string;
  kind: string;
}

function key(username: string): string {
  return `tributary.saved-searches.${username}`;
}

function load(username: string): SavedSearch[] {
  try {
    const parsed: unknown = JSON.parse(localStorage.getItem(key(username)) ?? '[]');
    return Array.isArray(parsed) ? (parsed as SavedSearch[]).filter((s) => typeof s?.name === 'string') : [];
  } catch {
    return [];
  }
}

export function useSavedSearches() {
  const username = useSession().session.user.username;
  const [saved, setSaved] = useState(() => load(username));
  const write = useCallback(
    (next: SavedSearch[]) => {
      setSaved(next);
      try {
        localStorage.setItem(key(username), JSON.stringify(next));
      } catch {
        // Storage disabled: the list lives until the page is left.
      }
    },
    [username],
  );
  const save = useCallback(
    (s: SavedSearch) => write([s, ...saved.filter((x) => x.name !== s.name)]),
    [saved, write],
  );
  const remove = useCallback((name: string) => write(saved.filter((x) => x.name !== name)), [saved, write]);
  return { saved, save, remove };
}
