import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileShortError, receiveFile, SEND_CHUNK_BYTES, sendFile } from './file-io';

/**
 * A receiver like a socket: it takes a copy of each piece when the write completes. With
 * `delayMs`, completion waits; the piece must not change meanwhile (the sender may not reuse it).
 */
function receiver(options: { delayMs?: number; failAfter?: number } = {}): Writable & { received(): Buffer } {
  const pieces: Buffer[] = [];
  let total = 0;
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const before = Buffer.from(chunk);
      const finish = (): void => {
        if (!before.equals(chunk)) {
          done(new Error('a piece changed before its write completed'));
          return;
        }
        pieces.push(before);
        total += chunk.length;
        if (options.failAfter !== undefined && total > options.failAfter) sink.destroy();
        done();
      };
      if (options.delayMs) setTimeout(finish, options.delayMs);
      else finish();
    },
  });
  return Object.assign(sink, { received: () => Buffer.concat(pieces) });
}

describe('sendFile', () => {
  let dir: string;
  let file: string;
  let content: Buffer;

  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-send-'));
    file = path.join(dir, 'object');
    // Several buffers' worth plus a tail, so both buffers are reused more than once.
    content = randomBytes(5 * SEND_CHUNK_BYTES + 12345);
    await fs.writeFile(file, content);
  });

  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('sends the whole file and leaves the receiver open', async () => {
    const out = receiver();
    await expect(sendFile(file, undefined, out)).resolves.toBe(content.length);
    expect(out.received().equals(content)).toBe(true);
    expect(out.writable).toBe(true);
  });

  it('sends an inclusive range, across buffer boundaries', async () => {
    const out = receiver();
    const range = { start: SEND_CHUNK_BYTES - 7, end: 3 * SEND_CHUNK_BYTES + 100 };
    await expect(sendFile(file, range, out)).resolves.toBe(range.end - range.start + 1);
    expect(out.received().equals(content.subarray(range.start, range.end + 1))).toBe(true);
  });

  it('never reuses a buffer the receiver still holds (slow receiver)', async () => {
    const out = receiver({ delayMs: 5 });
    await sendFile(file, undefined, out);
    expect(out.received().equals(content)).toBe(true);
  });

  it('back to back downloads reuse buffers and still send the right bytes', async () => {
    for (let i = 0; i < 3; i++) {
      const out = receiver();
      const range = { start: i * 1000, end: content.length - 1 - i * 1000 };
      await sendFile(file, range, out);
      expect(out.received().equals(content.subarray(range.start, range.end + 1))).toBe(true);
    }
  });

  it('rejects when the file is shorter than the range', async () => {
    const out = receiver();
    const range = { start: content.length - 10, end: content.length + 10 };
    await expect(sendFile(file, range, out)).rejects.toBeInstanceOf(FileShortError);
  });

  it('rejects (and does not hang) when the receiver goes away', async () => {
    const out = receiver({ delayMs: 1, failAfter: SEND_CHUNK_BYTES });
    await expect(sendFile(file, undefined, out)).rejects.toThrow();
  });

  it('rejects a missing file before sending anything', async () => {
    const out = receiver();
    await expect(sendFile(path.join(dir, 'missing'), undefined, out)).rejects.toMatchObject({
      code: 'ENOENT',
    });
    expect(out.received().length).toBe(0);
  });
});

/** `data` in pieces of the given sizes (cycled), as a socket would hand them over. */
async function* pieces(data: Buffer, sizes: number[], failAt?: number): AsyncGenerator<Buffer> {
  let at = 0;
  for (let i = 0; at < data.length; i++) {
    if (failAt !== undefined && at >= failAt) throw new Error('connection reset');
    const n = sizes[i % sizes.length]!;
    yield Buffer.from(data.subarray(at, at + n));
    at += n;
    await Promise.resolve();
  }
}

describe('receiveFile', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'tributary-receive-'));
  });
  afterAll(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('creates a file from pieces of any size, across buffer boundaries, and syncs it', async () => {
    const data = randomBytes(3 * SEND_CHUNK_BYTES + 999);
    const file = path.join(dir, 'new');
    const seen: number[] = [];
    const n = await receiveFile(pieces(data, [65536, 1, 300000, 7]), file, {
      start: 0,
      flags: 'w',
      sync: true,
      inspect: (piece) => seen.push(piece.length),
    });
    expect(n).toBe(data.length);
    expect(seen.reduce((a, b) => a + b, 0)).toBe(data.length);
    expect((await fs.readFile(file)).equals(data)).toBe(true);
  });

  it('writes in place from an offset, leaving the bytes before and after as they were', async () => {
    const file = path.join(dir, 'existing');
    const before = randomBytes(2 * SEND_CHUNK_BYTES);
    await fs.writeFile(file, before);
    const patch = randomBytes(SEND_CHUNK_BYTES + 5);
    const start = 1000;
    await receiveFile(pieces(patch, [4096]), file, { start, flags: 'r+' });
    const expected = Buffer.from(before);
    patch.copy(expected, start);
    expect((await fs.readFile(file)).equals(expected)).toBe(true);
  });

  it('stops at the first piece inspect refuses, with its error, and writes nothing of it', async () => {
    const file = path.join(dir, 'refused');
    const data = randomBytes(10_000);
    let total = 0;
    await expect(
      receiveFile(pieces(data, [4000]), file, {
        start: 0,
        flags: 'w',
        inspect: (piece) => {
          total += piece.length;
          if (total > 6000) throw new RangeError('too large');
        },
      }),
    ).rejects.toBeInstanceOf(RangeError);
    // At most the accepted first piece can have reached the file (the caller cuts it back anyway).
    const written = await fs.readFile(file);
    expect(written.length).toBeLessThanOrEqual(4000);
    expect(written.equals(data.subarray(0, written.length))).toBe(true);
  });

  it('loses nothing of a stream that already flows (someone listens to its data events)', async () => {
    const data = randomBytes(500_000);
    const stream = Readable.from(pieces(data, [10_000]), { objectMode: false });
    let counted = 0;
    stream.on('data', (piece: Buffer) => (counted += piece.length));
    const file = path.join(dir, 'flowing');
    await expect(receiveFile(stream, file, { start: 0, flags: 'w' })).resolves.toBe(data.length);
    expect((await fs.readFile(file)).equals(data)).toBe(true);
    expect(counted).toBe(data.length);
  });

  it('rejects when the source breaks off', async () => {
    const file = path.join(dir, 'broken');
    const data = randomBytes(2 * SEND_CHUNK_BYTES);
    await expect(
      receiveFile(pieces(data, [65536], SEND_CHUNK_BYTES + 65536), file, { start: 0, flags: 'w' }),
    ).rejects.toThrow('connection reset');
  });

  it('rejects r+ on a missing file (ENOENT), creating nothing', async () => {
    const file = path.join(dir, 'missing');
    await expect(
      receiveFile(pieces(Buffer.alloc(10), [10]), file, { start: 0, flags: 'r+' }),
    ).rejects.toMatchObject({ code: 'ENOENT' });
    await expect(fs.stat(file)).rejects.toMatchObject({ code: 'ENOENT' });
  });
});
