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
}

export class StagingError extends Error {
  constructor(
    readonly reason: 'too-large' | 'incomplete',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Where a storage resource keeps object bytes. Keys are chosen by the catalog (never by users);
 * drivers still confine every key to their own root.
 */
export interface StorageDriver {
  /** Streams `source` into staging, never holding it whole in memory. */
  stage(source: Readable, limits: { maxBytes: number; expectedBytes?: number }): Promise<StagedFile>;
  /**
   * A file the site already wrote and measured (an upload session's bytes) as staged bytes,
   * committed in place where the driver can (a local file system renames it).
   */
  adopt(file: string, measured: { size: number; sha256: string }): Promise<StagedFile>;
  /** Reads `[start, end]` (inclusive) or the whole object. */
  open(key: string, range?: { start: number; end: number }): Readable;
  /**
   * Writes `[start, end]` (inclusive) or the whole object to `out`, leaving it open; resolves with
   * the bytes sent. For downloads: cheaper than `open` piped to `out` (no buffer per piece).
   */
  send(key: string, range: { start: number; end: number } | undefined, out: Writable): Promise<number>;
  remove(key: string): Promise<void>;
}
