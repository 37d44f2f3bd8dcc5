import type { EntryDto } from '@tributary/shared';

/**
 * An entry as the API lists it, for unit tests: an object of one byte at `path` (a collection
 * with `{ kind: 'collection' }`), owned by ada at lsu, with `overrides` on top.
 */
export function testEntry(path: string, overrides: Partial<EntryDto> = {}): EntryDto {
  const kind = overrides.kind ?? 'object';
  return {
    kind,
    id: '1',
    name: path.slice(path.lastIndexOf('/') + 1),
    path,
    owner: 'ada',
    group: null,
    size: 1,
    checksum: null,
    contentType: null,
    version: 1,
    site: 'lsu',
    replicaCount: 1,
    createdAt: '2026-11-21T00:00:00.000Z',
    modifiedAt: '2026-11-21T00:00:00.000Z',
    mtime: '2026-11-21T00:00:00.000000000Z',
    mode: kind === 'collection' ? 0o755 : 0o644,
    linkTarget: null,
    access: 'own',
    ...overrides,
  };
}
