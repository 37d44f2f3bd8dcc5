import type { ChangeEventDto, EntryDto } from '@tributary/shared';
import { performance } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { testEntry } from '../testing/entries';
import { ECHO_WAIT_MS, MetadataCache, OFFLINE_TTL_MS } from './cache';

function entry(path: string, kind: EntryDto['kind'] = 'object', size = 1): EntryDto {
  return testEntry(path, { kind, size });
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

  it('adds an entry this mount created to a cached listing, which lives its TTL from then', () => {
    const { cache, advance } = live(3000);
    cache.putListing('/a', [entry('/a/x')]);
    advance(2000);
    cache.changedHere(entry('/a/new', 'object', 20 * 1024 ** 3));
    expect(cache.listing('/a')).toEqual(['x', 'new']);
    expect(cache.attr('/a/new')?.size).toBe(20 * 1024 ** 3);
    advance(2000);
    expect(cache.listing('/a')).toEqual(['x', 'new']);
    advance(1001);
    expect(cache.listing('/a')).toBeUndefined();
    // An expired listing is not brought back by a change.
    cache.putListing('/b', [entry('/b/x')]);
    advance(3001);
    cache.changedHere(entry('/b/y'));
    expect(cache.listing('/b')).toBeUndefined();
  });

  it('forgets only the new name on create, and removes a name this mount removed', () => {
    const { cache } = live();
    cache.putListing('/a', [entry('/a/x'), entry('/a/sub', 'collection')]);
    cache.putListing('/a/sub', [entry('/a/sub/z')]);
    cache.forgetEntry('/a/y');
    expect(cache.listing('/a')).toEqual(['x', 'sub']);
    cache.removedHere('/a/sub');
    expect(cache.listing('/a')).toEqual(['x']);
    expect(cache.listing('/a/sub')).toBeUndefined();
    expect(cache.attr('/a/sub/z')).toBeUndefined();
    expect(cache.attr('/a/x')).toBeDefined();
  });

  it('caches a collection this mount made as empty, unless something changed meanwhile', () => {
    const { cache } = live();
    let epoch = cache.epoch;
    cache.createdHere(entry('/a/new', 'collection'), epoch);
    expect(cache.listing('/a/new')).toEqual([]);
    epoch = cache.epoch;
    cache.apply(change('/b', 'tulane'));
    cache.createdHere(entry('/a/other', 'collection'), epoch);
    expect(cache.listing('/a/other')).toBeUndefined();
    expect(cache.attr('/a/other')).toBeDefined();
  });

  describe("the echo of the mount's own changes", () => {
    it('does not apply the one event its change causes, and applies the next', () => {
      const { cache } = live();
      cache.putListing('/a', [entry('/a/x')]);
      const echo = cache.expectEcho('/a', 'object');
      cache.apply(change('/a'));
      echo.answered();
      cache.changedHere(entry('/a/y'));
      expect(cache.listing('/a')).toEqual(['x', 'y']);
      expect(cache.expectedEchoes).toBe(0);
      cache.apply(change('/a'));
      expect(cache.listing('/a')).toBeUndefined();
    });

    it("never loses another writer's change made at the same moment, in either order", () => {
      for (const foreignFirst of [true, false]) {
        const { cache } = live();
        cache.putListing('/a', [entry('/a/x')]);
        const echo = cache.expectEcho('/a', 'object');
        // Another client of this site (origin null too) creates a file in /a at the same time.
        cache.apply(change('/a'));
        if (!foreignFirst) echo.answered();
        cache.apply(change('/a'));
        if (foreignFirst) echo.answered();
        cache.changedHere(entry('/a/y'));
        // Two events for one expected: the listing was dropped, the other file will be listed.
        expect(cache.listing('/a')).toBeUndefined();
      }
    });

    it('applies events from other sites, of another kind, another collection or a move', () => {
      const { cache } = live();
      const reset = () => cache.putListing('/a', [entry('/a/x')]);
      cache.expectEcho('/a', 'object');
      cache.expectEcho('/a', 'collection', '/a/sub');
      reset();
      cache.apply(change('/a', 'tulane'));
      expect(cache.listing('/a')).toBeUndefined();
      reset();
      cache.apply({ ...change('/a/other'), kind: 'collection', parentPath: '/a', op: 'create' });
      expect(cache.listing('/a')).toBeUndefined();
      reset();
      cache.apply({ ...change('/a/sub'), kind: 'collection', parentPath: '/a', subtree: true });
      expect(cache.listing('/a')).toBeUndefined();
      expect(cache.expectedEchoes).toBe(2);
      reset();
      cache.apply({ ...change('/a/sub'), kind: 'collection', parentPath: '/a', op: 'create' });
      cache.apply(change('/a'));
      expect(cache.listing('/a')).toEqual(['x']);
      expect(cache.expectedEchoes).toBe(0);
    });

    it('stops waiting for an echo once the change failed, or a while after it was answered', () => {
      const { cache, advance } = live();
      cache.putListing('/a', [entry('/a/x')]);
      cache.expectEcho('/a', 'object').cancel();
      const late = cache.expectEcho('/a', 'object');
      late.answered();
      advance(ECHO_WAIT_MS + 1);
      cache.apply(change('/a'));
      expect(cache.listing('/a')).toBeUndefined();
      expect(cache.expectedEchoes).toBe(0);
      // Not answered yet: waited for as long as the request runs.
      cache.putListing('/a', [entry('/a/x')]);
      cache.expectEcho('/a', 'object');
      advance(60_000);
      cache.putListing('/a', [entry('/a/x')]);
      cache.apply(change('/a'));
      expect(cache.listing('/a')).toEqual(['x']);
    });

    it('forgets the echoes it waited for when the cache is emptied (their events may be lost)', () => {
      const { cache } = live();
      cache.expectEcho('/a', 'object');
      cache.clear();
      cache.putListing('/a', [entry('/a/x')]);
      cache.apply(change('/a'));
      expect(cache.listing('/a')).toBeUndefined();
    });
  });

  it("drops the changed listing's entries through the index, also with many cached", () => {
    const { cache } = live();
    const many = Array.from({ length: 20_000 }, (_, i) => entry(`/big/f${i}`));
    cache.putListing('/big', many);
    cache.putListing('/a', [entry('/a/x')]);
    const started = performance.now();
    for (let i = 0; i < 1000; i++) cache.apply(change('/a'));
    expect(performance.now() - started).toBeLessThan(200);
    expect(cache.attr('/a/x')).toBeUndefined();
    expect(cache.attr('/big/f7')).toBeDefined();
    cache.apply(change('/big'));
    expect(cache.attrCount).toBe(0);
  });

  describe('directory times', () => {
    it('records the time entries changed, from the mount and from the change feed', () => {
      const { cache } = live();
      expect(cache.childChangedAt('/a')).toBeUndefined();
      cache.childChanged('/a', 5000);
      cache.childChanged('/a', 4000);
      expect(cache.childChangedAt('/a')).toBe(5000);
      cache.apply({ ...change('/a'), op: 'create', at: new Date(7000).toISOString() });
      expect(cache.childChangedAt('/a')).toBe(7000);
      cache.apply({
        ...change('/a/sub'),
        kind: 'collection',
        parentPath: '/a',
        subtree: true,
        at: new Date(8000).toISOString(),
      });
      expect(cache.childChangedAt('/a')).toBe(8000);
      cache.forgetChildChanges('/a');
      expect(cache.childChangedAt('/a')).toBeUndefined();
      cache.childChanged('/a/sub', 9000);
      cache.removedHere('/a/sub');
      expect(cache.childChangedAt('/a/sub')).toBeUndefined();
    });

    it('takes an update as a change of entries when the listing fetched again has other names', () => {
      const { cache } = live();
      cache.putListing('/a', [entry('/a/x'), entry('/a/y')]);
      // A new version of x: the same names.
      cache.apply({ ...change('/a'), at: new Date(7000).toISOString() });
      cache.putListing('/a', [entry('/a/x'), entry('/a/y')]);
      expect(cache.childChangedAt('/a')).toBeUndefined();
      // y trashed elsewhere.
      cache.apply({ ...change('/a'), at: new Date(9000).toISOString() });
      cache.putListing('/a', [entry('/a/x')]);
      expect(cache.childChangedAt('/a')).toBe(9000);
    });

    it("is not changed by the echo of the mount's own change (recorded when it was made)", () => {
      const { cache } = live();
      cache.expectEcho('/a', 'object');
      cache.apply({ ...change('/a'), op: 'create', at: new Date(7000).toISOString() });
      expect(cache.childChangedAt('/a')).toBeUndefined();
    });
  });
});

function change(path: string, origin: string | null = null): ChangeEventDto {
  return {
    kind: 'object',
    op: 'update',
    path,
    parentPath: path,
    subtree: false,
    origin,
    at: '2026-11-21T00:00:00.000Z',
  };
}
