import { promises as fs } from 'node:fs';
import type { Writable } from 'node:stream';

const MiB = 1024 * 1024;

/**
 * Object bytes between files and sockets through reused buffers, two per transfer (one filled
 * while the other is written). Streams that allocate a buffer per piece (fs.createReadStream, and
 * a socket's pieces queued in fs.createWriteStream) make the garbage collector run full
 * collections over and over while a site moves large objects: the pieces wait in a queue long
 * enough to be promoted, and V8 reclaims them only by marking the whole heap. Measured: a site's
 * CPU per GiB served went from about 1.3 s to 2.5-4.9 s once a slow reader kept the queue full,
 * and an upload of 1 GiB in 32 MiB chunks ran 20 to 27 full collections.
 */

/** The size of each transfer buffer. */
export const SEND_CHUNK_BYTES = MiB;
/** Idle buffers kept for the next transfers. */
const POOL_LIMIT = 16;

const idle: Buffer[] = [];

function takeBuffer(): Buffer {
  return idle.pop() ?? Buffer.allocUnsafeSlow(SEND_CHUNK_BYTES);
}

function giveBack(buffer: Buffer): void {
  if (idle.length < POOL_LIMIT) idle.push(buffer);
}

export class FileShortError extends Error {
  constructor(file: string, at: number) {
    super(`${file} ended at byte ${at}, before the bytes the catalog records`);
    this.name = 'FileShortError';
  }
}

/** Resolves when `out` has handed `chunk` to the operating system (then the bytes may change). */
function write(out: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const closed = (): void => {
      if (settled) return;
      settled = true;
      reject(new Error('the receiver went away'));
    };
    out.once('close', closed);
    out.write(chunk, (err) => {
      out.off('close', closed);
      if (settled) return;
      settled = true;
      if (err) reject(err);
      else resolve();
    });
  });
}

/**
 * Writes `[start, end]` (inclusive; the whole file without a range) of `file` to `out` and leaves
 * `out` open. Reads into two reused buffers: the next piece is read while the previous one is
 * being sent, and a buffer is read into again only after `out` has let go of it. Resolves with the
 * number of bytes sent; rejects if the file is shorter than the range or `out` fails or closes.
 */
export async function sendFile(
  file: string,
  range: { start: number; end: number } | undefined,
  out: Writable,
): Promise<number> {
  const handle = await fs.open(file, 'r');
  const buffers = [takeBuffer(), takeBuffer()];
  let sending: Promise<void> | undefined;
  let sent = 0;
  let clean = false;
  try {
    let position = range?.start ?? 0;
    const end = range ? range.end + 1 : (await handle.stat()).size;
    for (let turn = 0; position < end; turn++) {
      const buffer = buffers[turn % 2]!;
      const { bytesRead } = await handle.read(buffer, 0, Math.min(buffer.length, end - position), position);
      if (bytesRead === 0) throw new FileShortError(file, position);
      // The other buffer is still being sent: wait for it before it is read into next turn.
      await sending;
      sending = write(out, buffer.subarray(0, bytesRead));
      // Handled here too: it may fail while the next read runs, before anything awaits it.
      sending.catch(() => undefined);
      position += bytesRead;
      sent += bytesRead;
    }
    await sending;
    clean = true;
    return sent;
  } finally {
    // After a failure a write may still hold a buffer: those are dropped, not reused.
    if (clean) buffers.forEach(giveBack);
    else await sending?.catch(() => undefined);
    await handle.close();
  }
}

/**
 * Writes what `source` yields to `out` (left open) through two reused buffers, as `sendFile` does
 * for files: pieces (an object store's answer arrives in socket-sized pieces of about 64 KiB) are
 * gathered into 1 MiB writes, one buffer filling while the other is written. Resolves with the
 * bytes sent; rejects if `source` fails or `out` fails or closes.
 */
export async function sendStream(source: AsyncIterable<Buffer>, out: Writable): Promise<number> {
  const buffers = [takeBuffer(), takeBuffer()];
  let turn = 0;
  let filled = 0;
  let sent = 0;
  let sending: Promise<void> | undefined;
  let clean = false;
  const flush = async (): Promise<void> => {
    if (filled === 0) return;
    const buffer = buffers[turn % 2]!;
    const length = filled;
    // The other buffer's write must end before it is filled next.
    await sending;
    sending = write(out, buffer.subarray(0, length));
    sending.catch(() => undefined);
    sent += length;
    filled = 0;
    turn++;
  };
  try {
    for await (const piece of source) {
      for (let at = 0; at < piece.length;) {
        const buffer = buffers[turn % 2]!;
        const n = Math.min(buffer.length - filled, piece.length - at);
        piece.copy(buffer, filled, at, at + n);
        filled += n;
        at += n;
        if (filled === buffer.length) await flush();
      }
    }
    await flush();
    await sending;
    clean = true;
    return sent;
  } finally {
    if (clean) buffers.forEach(giveBack);
    else await sending?.catch(() => undefined);
  }
}

export interface ReceiveOptions {
  /** Where the bytes start in the file. */
  start: number;
  /** `r+`: an existing file, written in place; `w`: created (or emptied) first. */
  flags: 'r+' | 'w';
  /** Sees every piece before it is written (hashing, limits); throwing stops the transfer. */
  inspect?(piece: Buffer): void;
  /** fsync before resolving. */
  sync?: boolean;
}

/**
 * Writes what `source` yields to `file` from `options.start` on; resolves with the number of bytes
 * written. Pieces are copied into two reused buffers and let go at once: one buffer fills while
 * the other is written. Rejects (after the writes under way have ended) when `source` fails or
 * `inspect` throws; what was written by then stays in the file, for the caller to cut back.
 */
export async function receiveFile(
  source: AsyncIterable<Buffer>,
  file: string,
  options: ReceiveOptions,
): Promise<number> {
  const iterator = source[Symbol.asyncIterator]();
  // Reading starts before anything is awaited: a stream someone already reads with a 'data'
  // listener flows, and would hand its first pieces to nobody while the file opens.
  let next = iterator.next();
  next.catch(() => undefined);
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(file, options.flags, 0o600);
  } catch (err) {
    await iterator.return?.();
    throw err;
  }
  const buffers = [takeBuffer(), takeBuffer()];
  let turn = 0;
  let filled = 0;
  let position = options.start;
  let total = 0;
  let writing: Promise<void> | undefined;
  let finished = false;
  let clean = false;
  const writeOut = async (): Promise<void> => {
    if (filled === 0) return;
    const buffer = buffers[turn % 2]!;
    const length = filled;
    const at = position;
    // The other buffer's write must end before it is filled next.
    await writing;
    writing = writeAll(handle, buffer, length, at);
    writing.catch(() => undefined);
    position += length;
    filled = 0;
    turn++;
  };
  try {
    for (let result = await next; !result.done; result = await (next = iterator.next())) {
      const piece = result.value;
      options.inspect?.(piece);
      for (let at = 0; at < piece.length;) {
        const buffer = buffers[turn % 2]!;
        const n = Math.min(buffer.length - filled, piece.length - at);
        piece.copy(buffer, filled, at, at + n);
        filled += n;
        at += n;
        total += n;
        if (filled === buffer.length) await writeOut();
      }
    }
    finished = true;
    await writeOut();
    await writing;
    if (options.sync) await handle.sync();
    clean = true;
    return total;
  } finally {
    // Stopped early (inspect refused, a write failed): the source is let go, as a for-await would.
    if (!finished) await iterator.return?.().catch(() => undefined);
    if (clean) buffers.forEach(giveBack);
    else await writing?.catch(() => undefined);
    await handle.close();
  }
}

async function writeAll(
  handle: fs.FileHandle,
  buffer: Buffer,
  length: number,
  position: number,
): Promise<void> {
  for (let done = 0; done < length;) {
    const { bytesWritten } = await handle.write(buffer, done, length - done, position + done);
    done += bytesWritten;
  }
}
