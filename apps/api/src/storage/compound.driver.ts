import { createHash } from 'node:crypto';
import { Readable, type Writable } from 'node:stream';
import {
  ForwardingDrafts,
  StorageUnavailableError,
  type DraftStore,
  type ResourceHealth,
  type StagedFile,
  type StorageDriver,
} from './storage-driver';

/** What this site knows of one key of a compound resource (table compound_objects). */
export interface CompoundState {
  key: string;
  size: number;
  sha256: string;
  inCache: boolean;
  /** `archived`: copied to the archive and read back there hashing to `sha256`. */
  archive: 'pending' | 'archived';
  archivedAt: Date | null;
  archiveError: string | null;
}

/** Where a compound's per-key state is kept (CompoundStateRepository; the catalog's compound_objects). */
export interface CompoundStateStore {
  get(key: string): Promise<CompoundState | null>;
  many(keys: readonly string[]): Promise<Map<string, CompoundState>>;
  /** New bytes landed in the cache under `key` (not yet archived). */
  written(key: string, size: number, sha256: string): Promise<void>;
  /** Keys in the cache still to archive, oldest first. */
  pending(limit: number): Promise<CompoundState[]>;
  /** Marks the key archived, only while its bytes are still `sha256`; false otherwise. */
  archived(key: string, sha256: string): Promise<boolean>;
  archiveFailed(key: string, error: string): Promise<void>;
  /** The cache holds the key again (staged from the archive). */
  cached(key: string): Promise<void>;
  /** The key was read (the eviction order). */
  touched(key: string): Promise<void>;
  /** Bytes the cache holds. */
  cachedBytes(): Promise<number>;
  /** Keys the cache holds that are archived, least recently read first. */
  evictable(limit: number): Promise<CompoundState[]>;
  /**
   * The cache no longer holds the key: only while it is archived with bytes `sha256` (a row not so
   * is left as it is: false).
   */
  evicted(key: string, sha256: string): Promise<boolean>;
  /** The key is gone from both tiers. */
  forget(key: string): Promise<void>;
}

/** How a staging from the archive into the cache is going (a read answered 202 shows it). */
export interface StagingProgress {
  bytesStaged: number;
  bytesTotal: number;
}

/** Time between background passes (archive what is pending, then evict over the limit). */
export const COMPOUND_PASS_MS = 1000;
/** Keys archived per pass. */
const ARCHIVE_BATCH = 16;

/**
 * A compound resource (docs/storage.md, "Compound resources"): a local cache resource in front of
 * an archive resource (local or s3), each a driver of its own. New bytes land in the cache and are
 * recorded `pending`; a background pass copies each to the archive under the same key, reads it
 * back there, and marks it `archived` only when it hashes to the bytes' SHA-256. When the cache
 * holds more than `cacheMaxBytes`, archived keys are evicted from it, least recently read first,
 * each after its archive copy is read and hashed once more. A read of a key held only in the archive
 * stages it into the cache first (hashed, compared), then reads the cache.
 *
 * Safety: every operation on a key (archive, evict, stage, remove) runs under that key's lock in
 * this process; a reader pins the key before it looks at its state and until its bytes are read,
 * and a pinned key is never evicted. A key is marked evicted in the catalog before its cache file
 * goes, so a crash in between leaves a file nobody reads (never a row naming missing bytes).
 */
export class CompoundDriver implements StorageDriver {
  readonly drafts: DraftStore;
  readonly copies: DraftStore;
  /** Keys archived, evicted and staged back since the start (tests, logs). */
  readonly counts = { archived: 0, evicted: 0, staged: 0 };
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly pins = new Map<string, number>();
  private readonly staging = new Map<string, { progress: StagingProgress; done: Promise<void> }>();
  private timer: NodeJS.Timeout | undefined;
  private pass: Promise<void> | undefined;
  private again = false;
  private closed = false;

  constructor(
    readonly name: string,
    readonly cache: StorageDriver,
    readonly archive: StorageDriver,
    private readonly names: { cache: string; archive: string },
    readonly cacheMaxBytes: number,
    private readonly store: CompoundStateStore,
    private readonly log: (message: string) => void = () => undefined,
    private readonly passMs = COMPOUND_PASS_MS,
  ) {
    this.drafts = new CompoundDrafts(cache.drafts, (s) => this.recorded(s));
    this.copies = new CompoundDrafts(cache.copies, (s) => this.recorded(s));
  }

  /** The parts are initialised as resources of their own; this starts the background passes. */
  init(): Promise<void> {
    if (!this.timer && this.passMs > 0) {
      this.timer = setInterval(() => void this.kick(), this.passMs);
      this.timer.unref();
    }
    return Promise.resolve();
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearInterval(this.timer);
    await this.pass?.catch(() => undefined);
    await Promise.all([...this.staging.values()].map((s) => s.done.catch(() => undefined)));
  }

  async check(): Promise<ResourceHealth> {
    // Writes and cached reads need only the cache; the archive's health is its own resource's.
    return this.cache.check();
  }

  async stage(
    source: Readable,
    limits: { maxBytes: number; expectedBytes?: number; key?: string },
  ): Promise<StagedFile> {
    return this.recorded(await this.cache.stage(source, limits));
  }

  async stageAll(bodies: readonly Buffer[]): Promise<StagedFile[]> {
    return (await this.cache.stageAll(bodies)).map((s) => this.recorded(s));
  }

  open(key: string, range?: { start: number; end: number }): Readable {
    return Readable.from(this.cachedBytes(key, range), { objectMode: false });
  }

  private async *cachedBytes(key: string, range?: { start: number; end: number }): AsyncGenerator<Buffer> {
    const release = await this.pinCached(key);
    try {
      for await (const piece of this.cache.open(key, range)) yield piece as Buffer;
    } finally {
      release();
    }
  }

  async readSmall(key: string, maxBytes: number): Promise<Buffer> {
    const release = await this.pinCached(key);
    try {
      return await this.cache.readSmall(key, maxBytes);
    } finally {
      release();
    }
  }

  async send(key: string, range: { start: number; end: number } | undefined, out: Writable): Promise<number> {
    const release = await this.pinCached(key);
    try {
      return await this.cache.send(key, range, out);
    } finally {
      release();
    }
  }

  /** Removes the key from both tiers, then its state (a failure leaves the state for the next try). */
  remove(key: string): Promise<void> {
    return this.locked(key, async () => {
      await this.cache.remove(key);
      await this.archive.remove(key);
      await this.store.forget(key);
    });
  }

  /**
   * Null when `key` can be read from the cache now; else starts staging it from the archive (once)
   * and answers its progress after waiting up to `waitMs` for it to finish (null if it did).
   */
  async readiness(key: string, waitMs: number): Promise<StagingProgress | null> {
    const state = await this.store.get(key);
    if (!state || state.inCache) return null;
    const running = this.startStaging(key, state.size);
    if (waitMs > 0) {
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        running.done.then(() => true),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), waitMs))),
      ]).finally(() => clearTimeout(timer));
      if (finished) return null;
    } else {
      running.done.catch(() => undefined);
    }
    return { ...running.progress };
  }

  /** The tiers of these keys (the copies panel, `trib stat`), with any staging's progress. */
  async states(keys: readonly string[]): Promise<Map<string, CompoundState & { staging?: StagingProgress }>> {
    const found = await this.store.many(keys);
    const out = new Map<string, CompoundState & { staging?: StagingProgress }>();
    for (const [key, state] of found) {
      const staging = this.staging.get(key);
      out.set(key, staging ? { ...state, staging: { ...staging.progress } } : state);
    }
    return out;
  }

  /** Runs a background pass now (or once more after the one running); resolves when it is over. */
  kick(): Promise<void> {
    if (this.closed) return Promise.resolve();
    if (this.pass) {
      this.again = true;
      return this.pass;
    }
    this.pass = (async () => {
      do {
        this.again = false;
        await this.archivePass();
        await this.evictPass();
      } while (this.again && !this.closed);
    })()
      .catch((err: unknown) => this.log(`compound ${this.name}: background pass failed: ${reasonOf(err)}`))
      .finally(() => (this.pass = undefined));
    return this.pass;
  }

  /** Copies pending keys to the archive, verified; resolves with how many were archived. */
  async archivePass(): Promise<number> {
    let done = 0;
    for (;;) {
      const batch = await this.store.pending(ARCHIVE_BATCH);
      let progressed = 0;
      for (const state of batch) {
        if (this.closed) return done;
        try {
          if (await this.locked(state.key, () => this.archiveOne(state.key))) {
            done++;
            progressed++;
          }
        } catch (err) {
          await this.store.archiveFailed(state.key, reasonOf(err)).catch(() => undefined);
        }
      }
      if (batch.length < ARCHIVE_BATCH || progressed === 0) return done;
    }
  }

  private async archiveOne(key: string): Promise<boolean> {
    const state = await this.store.get(key);
    if (!state || state.archive !== 'pending' || !state.inCache) return false;
    const staged = await this.archive.stage(this.cache.open(key), {
      maxBytes: state.size,
      expectedBytes: state.size,
      key,
    });
    if (staged.sha256 !== state.sha256) {
      await staged.discard();
      throw new Error(`the cache's bytes of ${key} hash to ${staged.sha256}, not ${state.sha256}`);
    }
    await staged.commit(key);
    const back = await hashOf(this.archive.open(key));
    if (back !== state.sha256) {
      throw new Error(`the archive's copy of ${key} reads back as ${back}, not ${state.sha256}`);
    }
    const marked = await this.store.archived(key, state.sha256);
    if (marked) this.counts.archived++;
    return marked;
  }

  /** Evicts archived keys while the cache holds more than its limit; resolves with how many. */
  async evictPass(): Promise<number> {
    let over = (await this.store.cachedBytes()) - this.cacheMaxBytes;
    let evicted = 0;
    while (over > 0 && !this.closed) {
      const candidates = await this.store.evictable(64);
      let progressed = false;
      for (const state of candidates) {
        if (over <= 0 || this.closed) break;
        if ((this.pins.get(state.key) ?? 0) > 0) continue;
        const gone = await this.locked(state.key, () => this.evictOne(state)).catch((err: unknown) => {
          this.log(`compound ${this.name}: ${state.key} not evicted: ${reasonOf(err)}`);
          return false;
        });
        if (gone) {
          over -= state.size;
          evicted++;
          progressed = true;
        }
      }
      if (!progressed) break;
    }
    return evicted;
  }

  private async evictOne(candidate: CompoundState): Promise<boolean> {
    if ((this.pins.get(candidate.key) ?? 0) > 0) return false;
    // The archive's copy is read and hashed again now: the cache's copy is the last one otherwise.
    const archived = await hashOf(this.archive.open(candidate.key));
    if (archived !== candidate.sha256) {
      throw new Error(`its archive copy reads back as ${archived}, not ${candidate.sha256}`);
    }
    if (!(await this.store.evicted(candidate.key, candidate.sha256))) return false;
    await this.cache.remove(candidate.key);
    this.counts.evicted++;
    return true;
  }

  /** Pins `key` against eviction and makes sure the cache holds it; answers the unpin. */
  private async pinCached(key: string): Promise<() => void> {
    this.pins.set(key, (this.pins.get(key) ?? 0) + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      const n = (this.pins.get(key) ?? 1) - 1;
      if (n <= 0) this.pins.delete(key);
      else this.pins.set(key, n);
    };
    try {
      const state = await this.locked(key, () => this.store.get(key));
      if (state && !state.inCache) await this.startStaging(key, state.size).done;
      else if (state) void this.store.touched(key).catch(() => undefined);
      return release;
    } catch (err) {
      release();
      throw err;
    }
  }

  /** The staging of `key` from the archive into the cache, started once. */
  private startStaging(key: string, size = 0): { progress: StagingProgress; done: Promise<void> } {
    const running = this.staging.get(key);
    if (running) return running;
    const progress: StagingProgress = { bytesStaged: 0, bytesTotal: size };
    const done = this.locked(key, () => this.stageOne(key, progress)).finally(() => this.staging.delete(key));
    const entry = { progress, done };
    this.staging.set(key, entry);
    return entry;
  }

  private async stageOne(key: string, progress: StagingProgress): Promise<void> {
    const state = await this.store.get(key);
    if (!state) throw new StorageUnavailableError(this.name, `${key} is in neither tier`);
    progress.bytesTotal = state.size;
    if (state.inCache) {
      progress.bytesStaged = state.size;
      return;
    }
    this.log(`compound ${this.name}: staging ${key} (${state.size} bytes) from ${this.names.archive}`);
    const staged = await this.cache.stage(Readable.from(counted(this.archive.open(key), progress)), {
      maxBytes: state.size,
      expectedBytes: state.size,
    });
    if (staged.sha256 !== state.sha256) {
      await staged.discard();
      throw new StorageUnavailableError(
        this.names.archive,
        `the archive's copy of ${key} hashes to ${staged.sha256}, not ${state.sha256}`,
      );
    }
    await staged.commit(key);
    await this.store.cached(key);
    this.counts.staged++;
  }

  /** New bytes committed to the cache are recorded, then archived in the background. */
  private recorded(staged: StagedFile): StagedFile {
    return {
      size: staged.size,
      sha256: staged.sha256,
      ...(staged.key !== undefined ? { key: staged.key } : {}),
      open: () => staged.open(),
      commit: async (key) => {
        // Under the key's lock: a key written again (a version whose first attempt was cut short)
        // must not meet an eviction of its earlier bytes, which would remove the new file.
        await this.locked(key, async () => {
          await staged.commit(key);
          await this.store.written(key, staged.size, staged.sha256);
        });
        void this.kick();
      },
      discard: () => staged.discard(),
    };
  }

  /** Runs `op` alone among this key's operations in this process. */
  private locked<T>(key: string, op: () => Promise<T>): Promise<T> {
    const before = this.locks.get(key) ?? Promise.resolve();
    const run = before.then(op, op);
    const tail = run.catch(() => undefined);
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return run;
  }
}

/** Drafts kept in the cache; an adopted draft is recorded when committed. */
class CompoundDrafts extends ForwardingDrafts {
  constructor(
    inner: DraftStore,
    private readonly record: (staged: StagedFile) => StagedFile,
  ) {
    super(inner);
  }

  async adopt(id: string, measured: { size: number; sha256: string }): Promise<StagedFile> {
    return this.record(await this.inner.adopt(id, measured));
  }
}

async function* counted(source: Readable, progress: StagingProgress): AsyncGenerator<Buffer> {
  for await (const piece of source) {
    progress.bytesStaged += (piece as Buffer).length;
    yield piece as Buffer;
  }
}

/** SHA-256 (hex) of everything `source` yields. */
export async function hashOf(source: Readable): Promise<string> {
  const hash = createHash('sha256');
  for await (const piece of source) hash.update(piece as Buffer);
  return hash.digest('hex');
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
