import { useEffect, useRef } from 'react';
import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import type { CreateSavedSearchRequest, SavedSearchDto } from '@tributary/shared';
import { api } from '../api';
import { useSession } from '../app/session';

/**
 * Saved searches, kept by the API (`/api/v1/saved-searches`), so they follow a person to every
 * browser and every site. Saving under a name already used replaces that search.
 */
export const SAVED_SEARCHES_KEY = ['saved-searches'] as const;

export function useSavedSearches() {
  const queryClient = useQueryClient();
  const username = useSession().session.user.username;
  const list = useQuery({
    queryKey: SAVED_SEARCHES_KEY,
    // One page holds them all: the API keeps at most 500 per user.
    queryFn: ({ signal }) => api.listSavedSearches(500, undefined, signal),
  });
  const saved = list.data?.items ?? [];
  const invalidate = () => queryClient.invalidateQueries({ queryKey: SAVED_SEARCHES_KEY });

  const save = useMutation({
    mutationFn: (s: CreateSavedSearchRequest & { name: string }) => {
      const existing = saved.find((x) => x.name === s.name.trim());
      return existing ? api.updateSavedSearch(existing.id, s) : api.createSavedSearch(s);
    },
    onSuccess: invalidate,
  });
  const rename = useMutation({
    mutationFn: ({ id, name }: { id: string; name: string }) => api.updateSavedSearch(id, { name }),
    onSuccess: invalidate,
  });
  const remove = useMutation({
    mutationFn: (id: string) => api.deleteSavedSearch(id),
    onSuccess: invalidate,
  });

  // Searches an earlier portal kept in this browser move to the API once per user and page load.
  const imported = useRef<string | null>(null);
  const data = list.data;
  useEffect(() => {
    if (data === undefined || imported.current === username) return;
    imported.current = username;
    void importLocalSearches(username, data.items, api.createSavedSearch).then((n) => {
      if (n > 0) void queryClient.invalidateQueries({ queryKey: SAVED_SEARCHES_KEY });
    });
  }, [data, username, queryClient]);

  return { list, saved, save, rename, remove };
}

/** The localStorage key the portal used before saved searches moved to the API. */
export function legacyKey(username: string): string {
  return `tributary.saved-searches.${username}`;
}

/**
 * Moves saved searches an earlier portal kept in localStorage to the API: creates those whose name
 * is not taken yet, then forgets the local copy (also when some were refused: a query the API does
 * not accept could never run). Returns how many were created.
 */
export async function importLocalSearches(
  username: string,
  existing: SavedSearchDto[],
  create: (s: CreateSavedSearchRequest) => Promise<unknown>,
  storage: Pick<Storage, 'getItem' | 'removeItem'> | undefined = globalThis.localStorage,
): Promise<number> {
  let raw: string | null = null;
  try {
    raw = storage?.getItem(legacyKey(username)) ?? null;
  } catch {
    return 0; // storage disabled
  }
  if (raw === null) return 0;
  let parsed: unknown = [];
  try {
    parsed = JSON.parse(raw);
  } catch {
    // unreadable: forgotten below
  }
  const taken = new Set(existing.map((s) => s.name));
  let created = 0;
  for (const item of Array.isArray(parsed) ? parsed : []) {
    if (typeof item !== 'object' || item === null) continue;
    const { name, q, scope, kind } = item as Record<string, unknown>;
    if (typeof name !== 'string' || typeof q !== 'string' || taken.has(name.trim())) continue;
    try {
      await create({
        name,
        query: q,
        scope: typeof scope === 'string' ? scope : '/',
        kind: kind === 'collection' ? 'collection' : 'object',
      });
      taken.add(name.trim());
      created += 1;
    } catch {
      // refused (e.g. a query the API does not accept): dropped
    }
  }
  try {
    storage?.removeItem(legacyKey(username));
  } catch {
    // nothing to forget with
  }
  return created;
}
