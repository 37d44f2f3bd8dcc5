import type { EntryDto } from '@tributary/shared';
import { describe, expect, it } from 'vitest';
import { MetadataCache, OFFLINE_TTL_MS } from './cache';

function entry(path: string, kind: EntryDto['kind'] = 'object', size = 1): EntryDto {
  const name = path.slice(path.lastIndexOf('/') + 1);
  return {
    kind,
    id: '1',
    name,
    path,
    owner: 'ada',
    group: null,
    size,
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
  };
}

describe('MetadataCache', () => {
  function live(ttl = 60_000) {
    let now = 1000;
    const cache = new MetadataCache(ttl, () => now);
    cache.setLive(true);
    return { cache, advance: (ms: number) => (now += ms) };
  }

  it('keeps listings and attributes for the TTL while the feed is live', () => {
    const { cache, advance } = live();
    cache.putListing('/a', [entry('/a/x'), entry('/a/y')]);
    expect(cache.listing('/a')).toEqual(['x', 'y']);
    expect(cache.attr('/a/x')?.size).toBe(1);
    advance(59_000);
    expect(cache.listing('/a')).toEqual(['x', 'y']);
    advance(2000);
    expect(cache.listing('/a')).toBeUndefined();
    expect(cache.attr('/a/x')).toBeUndefined();
  });

  it('keeps entries at most 1 s while the feed is not connected, and empties itself when it drops', () => {
    const { cache, advance } = live();
    cache.putAttr(entry('/a/x'));
    cache.setLive(false);
    expect(cache.attr('/a/x')).toBeUndefined();
    cache.putAttr(entry('/a/x'));
    advance(OFFLINE_TTL_MS + 1);
    expect(cache.attr('/a/x')).toBeUndefined();
  });

  it('drops the listing an object change names and the entries in it, nothing else', () => {
    const { cache } = live();
    cache.putListing('/a', [entry('/a/x'), entry('/a/sub', 'collection')]);
    cache.putListing('/a/sub', [entry('/a/sub/z')]);
    cache.putListing('/b', [entry('/b/w')]);
    cache.apply({
      kind: 'object',
      op: 'update',
      path: '/a',
      parentPath: '/a',
      subtree: false,
      origin: 'tulane',
      at: '2026-11-21T00:00:00.000Z',
    });
    expect(cache.listing('/a')).toBeUndefined();
    expect(cache.attr('/a/x')).toBeUndefined();
    expect(cache.attr('/a/sub')).toBeUndefined();
    expect(cache.listing('/a/sub')).toEqual(['z']);
    expect(cache.listing('/b')).toEqual(['w']);
  });

  it('drops a whole subtree for a move, and everything for a resync', () => {
    const { cache } = live();
    cache.putListing('/a', [entry('/a/sub', 'collection')]);
    cache.putListing('/a/sub', [entry('/a/sub/z')]);
    cache.putListing('/b', [entry('/b/w')]);
    cache.apply({
      kind: 'collection',
      op: 'update',
      path: '/a/sub',
      parentPath: '/a',
      subtree: true,
      origin: null,
      at: '2026-11-21T00:00:00.000Z',
    });
    expect(cache.listing('/a')).toBeUndefined();
    expect(cache.listing('/a/sub')).toBeUndefined();
    expect(cache.attr('/a/sub/z')).toBeUndefined();
    expect(cache.listing('/b')).toEqual(['w']);
    cache.clear();
    expect(cache.listing('/b')).toBeUndefined();
  });

  it('does not store what a fetch started before an invalidation brought back', () => {
    const { cache } = live();
    const epoch = cache.epoch;
    cache.invalidateEntry('/a/x');
    cache.putAttr(entry('/a/x'), epoch);
    cache.putListing('/a', [entry('/a/x')], epoch);
    expect(cache.attr('/a/x')).toBeUndefined();
    expect(cache.listing('/a')).toBeUndefined();
  });

  it('adds an entry this mount created to a cached listing', () => {
    const { cache } = live();
    cache.putListing('/a', [entry('/a/x')]);
    cache.added(entry('/a/new', 'object', 20 * 1024 ** 3));
    expect(cache.listing('/a')).toEqual(['x', 'new']);
    expect(cache.attr('/a/new')?.size).toBe(20 * 1024 ** 3);
  });
});
