/**
 * Attribute names to suggest. The API has no route listing every attribute in use, so the portal
 * suggests the seed's ten standard attributes (Table 5) plus every attribute it has seen in triples
 * and search results, remembered in this browser (localStorage).
 */
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
