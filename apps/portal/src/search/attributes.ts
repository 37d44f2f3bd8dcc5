/**
 * Attribute names to suggest: those in use on entries the caller may read
 * (`GET /api/v1/metadata/attributes`), then those this browser has seen lately (localStorage), and
 * for tagging also the seed's ten standard attributes (Table 5).
 */
import { useQuery } from '@tanstack/react-query';
import { api } from '../api';

export const STANDARD_ATTRIBUTES = [
  'location',
  'dateOfCreation',
  'filetype',
  'size',
  'name',
  'institution',
  'creator',
  'resolution',
  'department',
  'project',
] as const;

const KEY = 'tributary.attributes';
const MAX = 500;

function load(): string[] {
  try {
    const raw = localStorage.getItem(KEY);
    const parsed: unknown = raw ? JSON.parse(raw) : [];
    return Array.isArray(parsed) ? parsed.filter((v): v is string => typeof v === 'string') : [];
  } catch {
    return [];
  }
}

/** Remembers attribute names seen in the catalog. */
export function rememberAttributes(names: Iterable<string>): void {
  const seen = load();
  const set = new Set(seen);
  let changed = false;
  for (const n of names) {
    if (!set.has(n)) {
      set.add(n);
      seen.unshift(n);
      changed = true;
    }
  }
  if (!changed) return;
  try {
    localStorage.setItem(KEY, JSON.stringify(seen.slice(0, MAX)));
  } catch {
    // Storage full or disabled: suggestions simply stay shorter.
  }
}

/** Seen attributes first (most recent first), then the standard ones. */
export function knownAttributes(): string[] {
  return [...new Set([...load(), ...STANDARD_ATTRIBUTES])];
}

/** Names for completion: what exists (from the API), then what this browser saw; `standard` adds Table 5. */
export function useAttributeNames(standard: boolean): string[] {
  const inUse = useQuery({
    queryKey: ['metadata', 'attributes'],
    queryFn: ({ signal }) => api.metadataAttributes('', 500, signal),
    staleTime: 5 * 60_000,
  });
  const seen = knownAttributes().filter(
    (a) => standard || !(STANDARD_ATTRIBUTES as readonly string[]).includes(a),
  );
  return [...new Set([...(inUse.data?.attributes ?? []), ...seen])];
}
