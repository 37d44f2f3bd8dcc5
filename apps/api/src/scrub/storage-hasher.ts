import type { HashResult, ScrubHasher } from '@tributary/placement';
import { createHash } from 'node:crypto';
import type { Readable } from 'node:stream';

/** What the hasher needs of the storage: reading a key's bytes (StorageService has it). */
export interface ByteReader {
  open(key: string): Readable;
}

const isMissing = (err: unknown): boolean =>
  (err as NodeJS.ErrnoException | null)?.code === 'ENOENT' ||
  (err as NodeJS.ErrnoException | null)?.code === 'ENOTDIR';

/**
 * Hashes a copy's bytes as the storage reads them (the scrub never builds a file path itself): a
 * file that is not there is `null`, any other read failure rejects.
 */
export function storageHasher<T extends { key: string }>(storage: ByteReader): ScrubHasher<T> {
  return {
    async hash(copy, onPiece, signal): Promise<HashResult> {
      const hash = createHash('sha256');
      let bytes = 0;
      let stream: Readable | undefined;
      try {
        stream = storage.open(copy.key);
        for await (const piece of stream as AsyncIterable<Buffer>) {
          hash.update(piece);
          bytes += piece.length;
          await onPiece(piece.length);
          signal.throwIfAborted();
        }
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      } finally {
        stream?.destroy();
      }
      return { sha256: hash.digest('hex'), bytes };
    },
  };
}

/** Whether the storage holds a file under `key` now (reads at most its first piece). */
export async function fileExists(storage: ByteReader, key: string): Promise<boolean> {
  let stream: Readable | undefined;
  try {
    stream = storage.open(key);
    // Any driver's stream: its first piece (or its end, for an empty file) proves the file is there.
    for await (const _piece of stream as AsyncIterable<Buffer>) break;
    return true;
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  } finally {
    stream?.destroy();
  }
}
