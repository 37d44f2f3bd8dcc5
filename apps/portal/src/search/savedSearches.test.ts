import type { SavedSearchDto } from '@tributary/shared';
import { describe, expect, it, vi } from 'vitest';
import { importLocalSearches, legacyKey } from './savedSearches';

function storage(items: Record<string, string>) {
  return {
    getItem: (k: string) => items[k] ?? null,
    removeItem: vi.fn((k: string) => {
      delete items[k];
    }),
  };
}

const existing = (name: string): SavedSearchDto => ({
  id: '1',
  name,
  query: '',
  scope: '/',
  kind: 'object',
  createdAt: '2026-11-21T10:00:00.000Z',
  updatedAt: '2026-11-21T10:00:00.000Z',
});

describe('importLocalSearches', () => {
  it('moves the searches an earlier portal kept in localStorage to the API once, then forgets them', async () => {
    const store = storage({
      [legacyKey('alice')]: JSON.stringify([
        { name: 'fits', q: 'filetype = fits', scope: '/projects', kind: 'object' },
        { name: 'taken', q: 'a = 1', scope: '/', kind: 'object' },
        { name: 'folders', q: '', scope: '/', kind: 'collection' },
        { nonsense: true },
      ]),
      [legacyKey('bob')]: '[]',
    });
    const create = vi.fn(() => Promise.resolve());
    expect(await importLocalSearches('alice', [existing('taken')], create, store)).toBe(2);
    expect(create.mock.calls).toEqual([
      [{ name: 'fits', query: 'filetype = fits', scope: '/projects', kind: 'object' }],
      [{ name: 'folders', query: '', scope: '/', kind: 'collection' }],
    ]);
    expect(store.removeItem).toHaveBeenCalledWith(legacyKey('alice'));
    expect(store.getItem(legacyKey('bob'))).toBe('[]');
    // Nothing left to import the second time.
    expect(await importLocalSearches('alice', [], create, store)).toBe(0);
    expect(create).toHaveBeenCalledTimes(2);
  });

  it('drops what the API refuses and what cannot be read', async () => {
    const store = storage({
      [legacyKey('carol')]: JSON.stringify([{ name: 'bad', q: 'size >', scope: '/', kind: 'object' }]),
      [legacyKey('dave')]: '{not json',
    });
    const create = vi.fn(() => Promise.reject(new Error('INVALID_QUERY')));
    expect(await importLocalSearches('carol', [], create, store)).toBe(0);
    expect(store.getItem(legacyKey('carol'))).toBeNull();
    expect(await importLocalSearches('dave', [], create, store)).toBe(0);
    expect(store.getItem(legacyKey('dave'))).toBeNull();
  });
});
