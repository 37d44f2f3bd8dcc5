import type { HashResult, ScrubHasher } from '@tributary/placement';
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';

/** What the hasher needs of the storage: a key's bytes written to a stream (StorageService has it). */
export interface ByteSender {
  send(key: string, range: undefined, out: Writable): Promise<number>;
}

const isMissing = (err: unknown): boolean => {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  return code === 'ENOENT' || code === 'ENOTDIR';
};

/**
 * Hashes a copy's bytes as the storage sends them (the scrub never builds a file path itself):
 * `send` reads through two reused 1 MiB buffers, where a read stream allocates a buffer per piece
 * and opens, reads and closes a small file in more round trips (storage/file-io.ts). Each piece is
 * hashed and paced before the storage reads the next one into its buffer. A file that is not there
 * is `null`; any other read failure rejects.
 */
export function storageHasher<T extends { key: string }>(storage: ByteSender): ScrubHasher<T> {
  return {
    async hash(copy, onPiece, signal): Promise<HashResult> {
      const hash = createHash('sha256');
      let bytes = 0;
      const sink = new Writable({
        write(piece: Buffer, _encoding, done): void {
          if (signal.aborted) return done(signal.reason as Error);
          // Hashed before the callback: the storage reuses the buffer once it is called.
          hash.update(piece);
          bytes += piece.length;
          onPiece(piece.length).then(() => done(), done);
        },
      });
      // A piece refused (the scrub stopped, the pacer failed) fails `send` with that error; the
      // sink's own 'error' event would otherwise be an uncaught exception.
      sink.on('error', () => undefined);
      try {
        await storage.send(copy.key, undefined, sink);
      } catch (err) {
        if (isMissing(err)) return null;
        throw err;
      } finally {
        sink.destroy();
      }
      return { sha256: hash.digest('hex'), bytes };
    },
  };
}

/** Whether the storage holds a file under `key` now (reads it: used only for a file found missing). */
export async function fileExists(storage: ByteSender, key: string): Promise<boolean> {
  const sink = new Writable({ write: (_piece, _encoding, done) => done() });
  try {
    await storage.send(key, undefined, sink);
    return true;
  } catch (err) {
    if (isMissing(err)) return false;
    throw err;
  } finally {
    sink.destroy();
  }
}
