import type { Readable, Writable } from 'node:stream';

/** Bytes written to a resource's staging area, hashed on the way in, not yet visible under a key. */
export interface StagedFile {
  size: number;
  /** Lower-case hex SHA-256 of the bytes. */
  sha256: string;
  /** Reads the staged bytes (to forward them elsewhere) before they are committed or discarded. */
  open(): Readable;
  /** Moves the bytes under `key` atomically (a rename). */
  commit(key: string): Promise<void>;
  /** Removes the staged bytes; safe to call after a failed or successful commit. */
  discard(): Promise<void>;
  /**
   * The key under which `commit` costs nothing more (an object store's bytes already sit under
   * it); committing under another key copies them there. Absent: any key is as cheap.
   */
  readonly key?: string;
}

/**
 * The store behind a resource does not answer, or refuses the site's credentials: the request can
 * be tried again later and nothing was recorded. The API answers 503 STORAGE_UNAVAILABLE naming
 * `resource`.
 */
export class StorageUnavailableError extends Error {
  constructor(
    readonly resource: string,
    readonly reason: string,
  ) {
    super(`storage resource "${resource}" is unavailable: ${reason}`);
    this.name = 'StorageUnavailableError';
  }
}

/** A key with no bytes in the resource (the local file system's ENOENT, an object store's 404). */
export class KeyMissingError extends Error {
  readonly code = 'ENOENT';
  constructor(readonly key: string) {
    super(`${key} is not in the storage resource`);
    this.name = 'KeyMissingError';
  }
}

/** What a resource's health check found. */
export interface ResourceHealth {
  status: 'ok' | 'failing';
  /** Why it fails, for administrators (never secrets). */
  error?: string;
}

export class StagingError extends Error {
  constructor(
    readonly reason: 'too-large' | 'incomplete',
    message: string,
  ) {
    super(message);
  }
}

/** readSmall found more bytes than the caller takes at once. */
export class ObjectTooLargeError extends Error {
  constructor(
    readonly key: string,
    readonly size: number,
  ) {
    super(`${key} holds ${size} bytes, more than a small read takes`);
    this.name = 'ObjectTooLargeError';
  }
}

/** A draft that does not exist (never made, removed, or lost when the site stopped). */
export class DraftGoneError extends Error {
  constructor(readonly id: string) {
    super(`draft ${id} is gone`);
    this.name = 'DraftGoneError';
  }
}

/** One draft opened for writes at any position, until `close`. */
export interface DraftWriter {
  write(bytes: Uint8Array, offset: number, length: number, position: number): Promise<void>;
  truncate(size: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Files the site builds piece by piece before they become objects (an upload session's bytes),
 * named by ids the caller chooses (letters, digits, `.`, `_`, `-`). The driver keeps them, so a
 * finished draft becomes an object without a copy where it can (`adopt`). Every method but
 * `remove` rejects with DraftGoneError for a draft that is not there.
 */
export interface DraftStore {
  /** The ids of every draft held (to remove what a crash left behind). */
  list(): Promise<string[]>;
  /** Makes an empty draft. */
  create(id: string): Promise<void>;
  exists(id: string): Promise<boolean>;
  /**
   * Writes what `source` yields into the draft from `start` on, without holding it whole in memory;
   * `inspect` sees every piece before it is written (hashing, limits) and stops the write by
   * throwing. Resolves with the bytes written; on a failure what was written stays, for the
   * caller to cut back.
   */
  write(
    id: string,
    source: AsyncIterable<Buffer>,
    options: { start: number; inspect?(piece: Buffer): void },
  ): Promise<number>;
  /** Opens the draft for writes at any position (composing it from several sources). */
  open(id: string): Promise<DraftWriter>;
  /** Reads `[start, end]` (inclusive) or the whole draft. */
  read(id: string, range?: { start: number; end: number }): Readable;
  /** Cuts the draft to `size` bytes. */
  truncate(id: string, size: number): Promise<void>;
  remove(id: string): Promise<void>;
  /**
   * The draft, whose size and SHA-256 the caller measured as its bytes arrived, as staged bytes:
   * made durable, and committed in place where the driver can. Until the commit it stays a draft;
   * `discard` after a commit makes it a draft again, so a commit the catalog refused leaves the
   * draft as it was.
   */
  adopt(id: string, measured: { size: number; sha256: string }): Promise<StagedFile>;
}

/**
 * A DraftStore that keeps its drafts in another one (`inner`) and changes only how a draft becomes
 * staged bytes (`adopt`): an object store's drafts are local files uploaded when adopted; a guarded
 * store turns the store's failures into 503s.
 */
export abstract class ForwardingDrafts implements DraftStore {
  constructor(protected readonly inner: DraftStore) {}

  list(): Promise<string[]> {
    return this.inner.list();
  }
  create(id: string): Promise<void> {
    return this.inner.create(id);
  }
  exists(id: string): Promise<boolean> {
    return this.inner.exists(id);
  }
  write(
    id: string,
    source: AsyncIterable<Buffer>,
    options: { start: number; inspect?(piece: Buffer): void },
  ): Promise<number> {
    return this.inner.write(id, source, options);
  }
  open(id: string): Promise<DraftWriter> {
    return this.inner.open(id);
  }
  read(id: string, range?: { start: number; end: number }): Readable {
    return this.inner.read(id, range);
  }
  truncate(id: string, size: number): Promise<void> {
    return this.inner.truncate(id, size);
  }
  remove(id: string): Promise<void> {
    return this.inner.remove(id);
  }
  abstract adopt(id: string, measured: { size: number; sha256: string }): Promise<StagedFile>;
}

/**
 * Where a storage resource keeps object bytes. Keys are chosen by the catalog (never by users);
 * drivers still confine every key to their own root.
 */
export interface StorageDriver {
  /** Prepares the resource and drops what an interrupted upload left in staging. */
  init(): Promise<void>;
  /**
   * Streams `source` into staging, never holding it whole in memory. `key`: the key the caller
   * will commit under when it knows it already (an object store uploads there directly, so an
   * attempt made again after a crash replaces the first instead of leaving it behind).
   */
  stage(
    source: Readable,
    limits: { maxBytes: number; expectedBytes?: number; key?: string },
  ): Promise<StagedFile>;
  /**
   * Small bodies already in memory into staging, hashed, all durable before it resolves (together,
   * which costs far less than one at a time). All or nothing: on a failure none stays.
   */
  stageAll(bodies: readonly Buffer[]): Promise<StagedFile[]>;
  /** Reads `[start, end]` (inclusive) or the whole object. */
  open(key: string, range?: { start: number; end: number }): Readable;
  /**
   * A small object's bytes at once (cheaper than a stream when there are many); rejects with
   * ObjectTooLargeError when it holds more than `maxBytes`.
   */
  readSmall(key: string, maxBytes: number): Promise<Buffer>;
  /**
   * Writes `[start, end]` (inclusive) or the whole object to `out`, leaving it open; resolves with
   * the bytes sent. For downloads: cheaper than `open` piped to `out` (no buffer per piece).
   */
  send(key: string, range: { start: number; end: number } | undefined, out: Writable): Promise<number>;
  remove(key: string): Promise<void>;
  /** Whether the store answers and accepts the site's credentials (cheap: one request at most). */
  check(): Promise<ResourceHealth>;
  /** Lets go of connections and timers (the site stops). */
  close(): Promise<void>;
  readonly drafts: DraftStore;
  /**
   * Copies arriving from other sites (the mover's), apart from upload drafts: a partial copy stays
   * across restarts to be resumed, and the uploads' sweep of orphan drafts never sees it.
   */
  readonly copies: DraftStore;
}
