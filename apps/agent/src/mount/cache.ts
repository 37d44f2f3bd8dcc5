import { isWithin, splitPath, type ChangeEventDto, type EntryDto } from '@tributary/shared';

/** How long entries live while the change feed is not connected. */
export const OFFLINE_TTL_MS = 1000;

interface Timed<T> {
  value: T;
  until: number;
}

/**
 * Attributes and listings of remote paths, each kept for `ttlMs` and dropped earlier when the
 * change feed says the listing it belongs to changed. Keys are remote (federation) paths.
 */
export class MetadataCache {
  private readonly attrs = new Map<string, Timed<EntryDto>>();
  private readonly listings = new Map<string, Timed<string[]>>();
  /** Bumped by every invalidation: a fetch that started before it must not fill the cache. */
  private generation = 0;
  /** The change feed is connected: entries may live their whole TTL (the feed drops changed ones). */
  private live = false;

  constructor(
    private readonly ttlMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Without a connected change feed nothing would tell the cache about changes made elsewhere:
   * it is emptied and keeps entries for at most `OFFLINE_TTL_MS` until the feed is back.
   */
  setLive(live: boolean): void {
    if (this.live === live) return;
    this.live = live;
    this.clear();
  }

  private get ttl(): number {
    return this.live ? this.ttlMs : Math.min(this.ttlMs, OFFLINE_TTL_MS);
  }

  get epoch(): number {
    return this.generation;
  }

  attr(path: string): EntryDto | undefined {
    return this.fresh(this.attrs, path);
  }

  listing(path: string): string[] | undefined {
    return this.fresh(this.listings, path);
  }

  /** Remembers an entry fetched while the cache was at `epoch` (ignored if it changed since). */
  putAttr(entry: EntryDto, epoch = this.generation): void {
    if (epoch !== this.generation || this.ttl <= 0) return;
    this.attrs.set(entry.path, { value: entry, until: this.now() + this.ttl });
  }

  putListing(path: string, children: EntryDto[], epoch = this.generation): void {
    if (epoch !== this.generation || this.ttl <= 0) return;
    const until = this.now() + this.ttl;
    this.listings.set(path, { value: children.map((c) => c.name), until });
    for (const child of children) this.attrs.set(child.path, { value: child, until });
  }

  /** An entry this mount just created or replaced, as the site answered: listed and remembered. */
  added(entry: EntryDto): void {
    if (this.ttl <= 0) return;
    const until = this.now() + this.ttl;
    this.attrs.set(entry.path, { value: entry, until });
    if (entry.path === '/') return;
    const { parent, name } = splitPath(entry.path);
    const listing = this.listings.get(parent);
    if (listing && !listing.value.includes(name)) listing.value = [...listing.value, name];
  }

  /**
   * A change to `path` (an entry) made by this mount: its attributes, its parent's listing and
   * the parent's attributes (modification time) go.
   */
  invalidateEntry(path: string): void {
    this.generation++;
    this.attrs.delete(path);
    this.listings.delete(path);
    if (path !== '/') {
      const parent = splitPath(path).parent;
      this.listings.delete(parent);
      this.attrs.delete(parent);
    }
  }

  /** Everything at or below `path`. */
  invalidateTree(path: string): void {
    this.generation++;
    for (const map of [this.attrs, this.listings] as Map<string, unknown>[])
      for (const key of [...map.keys()]) if (isWithin(key, path)) map.delete(key);
    if (path !== '/') {
      const parent = splitPath(path).parent;
      this.listings.delete(parent);
      this.attrs.delete(parent);
    }
  }

  /** What a change-feed event makes stale. */
  apply(change: ChangeEventDto): void {
    if (change.subtree) {
      this.invalidateTree(change.path);
      return;
    }
    this.generation++;
    const listing = change.parentPath;
    this.listings.delete(listing);
    this.attrs.delete(listing);
    this.attrs.delete(change.path);
    if (change.kind === 'collection') this.listings.delete(change.path);
    // The entries of the changed listing (an object's size or version, a trashed child).
    for (const key of [...this.attrs.keys()])
      if (key !== '/' && splitPath(key).parent === listing) this.attrs.delete(key);
  }

  clear(): void {
    this.generation++;
    this.attrs.clear();
    this.listings.clear();
  }

  private fresh<T>(map: Map<string, Timed<T>>, key: string): T | undefined {
    const hit = map.get(key);
    if (!hit) return undefined;
    if (hit.until <= this.now()) {
      map.delete(key);
      return undefined;
    }
    return hit.value;
  }
}
