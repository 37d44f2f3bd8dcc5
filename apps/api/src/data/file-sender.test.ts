import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FileShortError, SEND_CHUNK_BYTES, sendFile } from './file-sender';

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
