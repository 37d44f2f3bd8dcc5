import { isWithin, splitPath, type ChangeEventDto, type EntryDto } from '@tributary/shared';

/** How long entries live while the change feed is not connected. */
export const OFFLINE_TTL_MS = 1000;
/**
 * How long after its change was answered the mount still waits for the change feed's echo of it.
 * A later echo is applied like any other event (the listing is fetched again): only time is lost.
 */
export const ECHO_WAIT_MS = 2000;
/** Directories whose last child change the mount remembers (the oldest are forgotten first). */
const MAX_DIR_TIMES = 100_000;

interface Timed<T> {
  value: T;
  until: number;
}

/**
 * A change this mount is making to a listing, whose event the change feed will send back. The site
 * sends exactly one event per listing a change touches (one catalog statement), with `origin` null.
 */
interface Echo {
  listing: string;
  kind: ChangeEventDto['kind'];
  /** Collections: the collection's own path (events name it; object events name only the listing). */
  path?: string;
  /** Set once the change was answered: the echo is awaited until then. */
  deadline?: number;
}

/** What `expectEcho` returns: the change was answered (the echo will come) or failed (it will not). */
export interface ExpectedEcho {
  answered(): void;
  cancel(): void;
}

/** Cached attributes, indexed by parent so that a listing's entries are found without a scan. */
class AttrStore {
  private readonly byPath = new Map<string, Timed<EntryDto>>();
  private readonly byParent = new Map<string, Set<string>>();

  get(path: string): Timed<EntryDto> | undefined {
    return this.byPath.get(path);
  }

  set(path: string, value: Timed<EntryDto>): void {
    if (!this.byPath.has(path) && path !== '/') {
      const parent = splitPath(path).parent;
      let children = this.byParent.get(parent);
      if (!children) this.byParent.set(parent, (children = new Set()));
      children.add(path);
    }
    this.byPath.set(path, value);
  }

  delete(path: string): void {
    if (!this.byPath.delete(path) || path === '/') return;
    const parent = splitPath(path).parent;
    const children = this.byParent.get(parent);
    children?.delete(path);
    if (children?.size === 0) this.byParent.delete(parent);
  }

  /** The attributes of every cached entry directly in `listing`. */
  deleteChildren(listing: string): void {
    const children = this.byParent.get(listing);
    if (!children) return;
    this.byParent.delete(listing);
    for (const path of children) this.byPath.delete(path);
  }

  keys(): IterableIterator<string> {
    return this.byPath.keys();
  }

  get size(): number {
    return this.byPath.size;
  }

  clear(): void {
    this.byPath.clear();
    this.byParent.clear();
  }
}

/**
 * Attributes and listings of remote paths, each kept for `ttlMs` and dropped earlier when the
 * change feed says the listing it belongs to changed. Keys are remote (federation) paths.
 *
 * The mount's own changes are recorded as the site answered them (`changedHere`, `removedHere`)
 * instead of dropping the parent's listing, and their echo on the change feed is not applied
 * (`expectEcho`). The echo is recognised by counting, not by time: every change the mount makes
 * registers one expected event for its listing before it is sent, and one event from this site
 * (`origin` null) for that listing is skipped per expectation. If another writer changes the same
 * listing meanwhile, its event may be the one skipped, but then the mount's own event arrives with
 * nothing left to expect and drops the listing: the other writer's change is never lost, at most
 * seen as late as the mount's own echo.
 *
 * Directory times: the catalog does not change a collection when an entry is added to it or
 * removed from it (that would be a replicated change of the collection for every file). The cache
 * remembers, per directory, when this mount or the change feed last saw its entries change
 * (`childChangedAt`); the mount shows that as the directory's mtime and ctime when it is later
 * than the catalog's own last change of the collection.
 */
export class MetadataCache {
  private readonly attrs = new AttrStore();
  private readonly listings = new Map<string, Timed<string[]>>();
  private readonly echoes: Echo[] = [];
  private readonly dirTimes = new Map<string, number>();
  /**
   * Listings an ambiguous event (an update: a new version, or an entry trashed or renamed) dropped,
   * with their names then: when the listing is fetched again, different names mean entries changed.
   */
  private readonly priorNames = new Map<string, { names: Set<string>; at: number }>();
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

  /** Cached attributes (for tests and measurements). */
  get attrCount(): number {
    return this.attrs.size;
  }

  attr(path: string): EntryDto | undefined {
    const hit = this.attrs.get(path);
    if (!hit) return undefined;
    if (hit.until <= this.now()) {
      this.attrs.delete(path);
      return undefined;
    }
    return hit.value;
  }

  listing(path: string): string[] | undefined {
    return this.freshListing(path)?.value;
  }

  /** A cached listing not expired yet (an expired one is dropped, not brought back by a change). */
  private freshListing(path: string): Timed<string[]> | undefined {
    const hit = this.listings.get(path);
    if (!hit) return undefined;
    if (hit.until <= this.now()) {
      this.listings.delete(path);
      return undefined;
    }
    return hit;
  }

  /** Remembers an entry fetched while the cache was at `epoch` (ignored if it changed since). */
  putAttr(entry: EntryDto, epoch = this.generation): void {
    if (epoch !== this.generation || this.ttl <= 0) return;
    this.attrs.set(entry.path, { value: entry, until: this.now() + this.ttl });
  }

  putListing(path: string, children: EntryDto[], epoch = this.generation): void {
    const names = children.map((c) => c.name);
    const prior = this.priorNames.get(path);
    if (prior) {
      this.priorNames.delete(path);
      if (names.length !== prior.names.size || names.some((n) => !prior.names.has(n)))
        this.childChanged(path, prior.at);
    }
    if (epoch !== this.generation || this.ttl <= 0) return;
    const until = this.now() + this.ttl;
    this.listings.set(path, { value: names, until });
    for (const child of children) this.attrs.set(child.path, { value: child, until });
  }

  /**
   * An entry this mount created or changed, as the site answered: its attributes, and its name in
   * the parent's listing if that is cached (which lives its TTL from this change on: the change feed
   * tells of other writers' changes to it).
   */
  changedHere(entry: EntryDto): void {
    this.generation++;
    if (this.ttl <= 0) return;
    const until = this.now() + this.ttl;
    this.attrs.set(entry.path, { value: entry, until });
    if (entry.path === '/') return;
    const { parent, name } = splitPath(entry.path);
    const listing = this.freshListing(parent);
    if (!listing) return;
    if (!listing.value.includes(name)) listing.value = [...listing.value, name];
    listing.until = until;
  }

  /** A collection this mount just made, fetched while the cache was at `epoch`: empty. */
  createdHere(entry: EntryDto, epoch: number): void {
    const fresh = epoch === this.generation;
    this.changedHere(entry);
    if (fresh && this.ttl > 0) this.listings.set(entry.path, { value: [], until: this.now() + this.ttl });
  }

  /** An entry this mount removed: gone with everything below it, and from the parent's listing. */
  removedHere(path: string): void {
    this.generation++;
    this.attrs.delete(path);
    this.listings.delete(path);
    for (const key of [...this.listings.keys()]) if (isWithin(key, path)) this.listings.delete(key);
    this.attrs.deleteChildren(path);
    // A folder made again under this name is a new one.
    this.dirTimes.delete(path);
    if (path === '/') return;
    const { parent, name } = splitPath(path);
    const listing = this.freshListing(parent);
    if (!listing) return;
    listing.value = listing.value.filter((n) => n !== name);
    listing.until = this.now() + this.ttl;
  }

  /** Forgets what is cached at `path` itself (a name about to be created), not its parent's listing. */
  forgetEntry(path: string): void {
    this.generation++;
    this.attrs.delete(path);
    this.listings.delete(path);
  }

  /**
   * A change to `path` (an entry) made by this mount: its attributes, its parent's listing and
   * the parent's attributes go.
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
    for (const key of [...this.attrs.keys()]) if (isWithin(key, path)) this.attrs.delete(key);
    for (const key of [...this.listings.keys()]) if (isWithin(key, path)) this.listings.delete(key);
    if (path !== '/') {
      const parent = splitPath(path).parent;
      this.listings.delete(parent);
      this.attrs.delete(parent);
    }
  }

  /**
   * This mount is about to change an entry of `listing` (kind `kind`; for a collection, the one at
   * `path`): the change feed's event for it is not applied. Call before sending the request, then
   * `answered()` or `cancel()`.
   */
  expectEcho(listing: string, kind: ChangeEventDto['kind'], path?: string): ExpectedEcho {
    const echo: Echo = { listing, kind, path };
    this.echoes.push(echo);
    return {
      answered: () => {
        echo.deadline = this.now() + ECHO_WAIT_MS;
      },
      cancel: () => {
        const at = this.echoes.indexOf(echo);
        if (at >= 0) this.echoes.splice(at, 1);
      },
    };
  }

  /** Echoes still awaited (for tests). */
  get expectedEchoes(): number {
    return this.echoes.length;
  }

  /** What a change-feed event makes stale. */
  apply(change: ChangeEventDto): void {
    if (this.takeEcho(change)) return;
    const at = Date.parse(change.at);
    const when = Number.isFinite(at) ? at : this.now();
    if (change.subtree) {
      // A collection moved or renamed: its parent's entries changed.
      this.childChanged(change.parentPath, when);
      this.invalidateTree(change.path);
      return;
    }
    this.generation++;
    const listing = change.parentPath;
    if (change.op !== 'update') this.childChanged(listing, when);
    else this.rememberNames(listing, when);
    this.listings.delete(listing);
    this.attrs.delete(listing);
    this.attrs.delete(change.path);
    if (change.kind === 'collection') this.listings.delete(change.path);
    // The entries of the changed listing (an object's size or version, a trashed child).
    this.attrs.deleteChildren(listing);
  }

  clear(): void {
    this.generation++;
    this.attrs.clear();
    this.listings.clear();
    this.priorNames.clear();
    // Their events may have been missed: when they come, they are applied.
    this.echoes.length = 0;
  }

  /** When the entries of directory `path` last changed, as far as this mount knows (ms). */
  childChangedAt(path: string): number | undefined {
    return this.dirTimes.get(path);
  }

  /** Entries of directory `path` were created, removed or renamed at `at` (ms). */
  childChanged(path: string, at: number = this.now()): void {
    const before = this.dirTimes.get(path);
    if (before !== undefined && before >= at) return;
    this.dirTimes.delete(path);
    this.dirTimes.set(path, at);
    if (this.dirTimes.size > MAX_DIR_TIMES) {
      const oldest = this.dirTimes.keys().next().value;
      if (oldest !== undefined) this.dirTimes.delete(oldest);
    }
  }

  /** The directory's time was set (utimens): what the catalog says from now on. */
  forgetChildChanges(path: string): void {
    this.dirTimes.delete(path);
  }

  private takeEcho(change: ChangeEventDto): boolean {
    const now = this.now();
    for (let i = this.echoes.length - 1; i >= 0; i--) {
      const deadline = this.echoes[i]!.deadline;
      if (deadline !== undefined && deadline <= now) this.echoes.splice(i, 1);
    }
    if (change.subtree || change.origin !== null) return false;
    const at = this.echoes.findIndex(
      (e) =>
        e.listing === change.parentPath &&
        e.kind === change.kind &&
        (e.path === undefined || e.path === change.path),
    );
    if (at < 0) return false;
    this.echoes.splice(at, 1);
    return true;
  }

  private rememberNames(listing: string, at: number): void {
    const cached = this.listings.get(listing);
    const prior = this.priorNames.get(listing);
    if (prior) {
      prior.at = Math.max(prior.at, at);
      return;
    }
    if (!cached) return;
    this.priorNames.set(listing, { names: new Set(cached.value), at });
    if (this.priorNames.size > MAX_DIR_TIMES) {
      const oldest = this.priorNames.keys().next().value;
      if (oldest !== undefined) this.priorNames.delete(oldest);
    }
  }
}
