import { describe, expect, it, vi } from 'vitest';
import { AdvanceBufferPool, BufferedFile, FileClosedError } from './buffered-file';
import { MemoryBudget } from './memory-budget';
import { testBytes } from '@tributary/testkit';
import { FakeRemoteFile } from './testing/fake-remote';

const KiB = 1024;
const MiB = 1024 * KiB;

/** Reads the whole file sequentially in `block`-sized requests. */
async function readAll(file: BufferedFile, size: number, block: number): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (let offset = 0; offset < size; offset += block) {
    parts.push(Buffer.from(await file.read(offset, Math.min(block, size - offset))));
  }
  return Buffer.concat(parts);
}

async function writeAll(file: BufferedFile, data: Buffer, block: number): Promise<void> {
  for (let offset = 0; offset < data.length; offset += block) {
    await file.write(offset, data.subarray(offset, Math.min(offset + block, data.length)));
  }
}

describe('fixed buffer (the seed)', () => {
  const fixed = { mode: 'fixed' as const, bufferBytes: 256 * KiB };

  it('serves sequential small reads from one buffer-sized fetch at a time', async () => {
    const content = testBytes(1 * MiB);
    const remote = new FakeRemoteFile(content);
    const file = new BufferedFile(remote, fixed);
    expect((await readAll(file, content.length, 4 * KiB)).equals(content)).toBe(true);
    expect(remote.reads()).toEqual([0, 1, 2, 3].map((i) => ({ offset: i * 256 * KiB, length: 256 * KiB })));
  });

  it('fetches a new block from the requested offset when a read falls outside the buffer', async () => {
    const content = testBytes(1 * MiB);
    const remote = new FakeRemoteFile(content);
    const file = new BufferedFile(remote, fixed);
    await file.read(0, 4 * KiB);
    const data = await file.read(700 * KiB, 4 * KiB);
    expect(Buffer.from(data).equals(content.subarray(700 * KiB, 704 * KiB))).toBe(true);
    await file.read(704 * KiB, 4 * KiB); // inside the new buffer
    expect(remote.reads()).toEqual([
      { offset: 0, length: 256 * KiB },
      { offset: 700 * KiB, length: 256 * KiB },
    ]);
  });

  it('bypasses the buffer for a request larger than it', async () => {
    const content = testBytes(1 * MiB);
    const remote = new FakeRemoteFile(content);
    const file = new BufferedFile(remote, fixed);
    const data = await file.read(10, 512 * KiB);
    expect(Buffer.from(data).equals(content.subarray(10, 10 + 512 * KiB))).toBe(true);
    expect(remote.reads()).toEqual([{ offset: 10, length: 512 * KiB }]);
  });

  it('collects sequential writes and sends a full buffer at a time, the rest on close', async () => {
    const data = testBytes(600 * KiB);
    const remote = new FakeRemoteFile();
    const file = new BufferedFile(remote, fixed);
    await writeAll(file, data, 4 * KiB);
    expect(remote.writes()).toEqual([
      { offset: 0, length: 256 * KiB },
      { offset: 256 * KiB, length: 256 * KiB },
    ]);
    await file.close();
    expect(remote.writes()[2]).toEqual({ offset: 512 * KiB, length: 88 * KiB });
    expect(remote.durable.equals(data)).toBe(true);
    expect(remote.calls.at(-1)).toEqual({ op: 'close' });
  });

  it('sends the buffer before a write that is not contiguous, and writes large requests through', async () => {
    const remote = new FakeRemoteFile();
    const file = new BufferedFile(remote, fixed);
    await file.write(0, testBytes(8 * KiB));
    await file.write(100 * KiB, testBytes(8 * KiB, 2));
    expect(remote.writes()).toEqual([{ offset: 0, length: 8 * KiB }]);
    await file.write(108 * KiB, testBytes(300 * KiB, 3));
    expect(remote.writes()).toEqual([
      { offset: 0, length: 8 * KiB },
      { offset: 100 * KiB, length: 8 * KiB },
      { offset: 108 * KiB, length: 300 * KiB },
    ]);
  });

  it('a read while writing sends the write buffer first and sees the new bytes', async () => {
    const remote = new FakeRemoteFile(testBytes(64 * KiB));
    const file = new BufferedFile(remote, fixed);
    const fresh = testBytes(4 * KiB, 9);
    await file.write(8 * KiB, fresh);
    const read = await file.read(8 * KiB, 4 * KiB);
    expect(Buffer.from(read).equals(fresh)).toBe(true);
    expect(remote.calls.map((c) => c.op)).toEqual(['write', 'read']);
  });

  it('a write while reading resets the prefetch buffer', async () => {
    const remote = new FakeRemoteFile(testBytes(64 * KiB));
    const file = new BufferedFile(remote, fixed);
    await file.read(0, 4 * KiB);
    const fresh = testBytes(4 * KiB, 5);
    await file.write(4 * KiB, fresh);
    const read = await file.read(4 * KiB, 4 * KiB);
    expect(Buffer.from(read).equals(fresh)).toBe(true);
    expect(remote.calls.map((c) => c.op)).toEqual(['read', 'write', 'read']);
  });

  it('flush and fsync send the buffer; fsync makes it durable', async () => {
    const remote = new FakeRemoteFile();
    const file = new BufferedFile(remote, fixed);
    await file.write(0, testBytes(4 * KiB));
    await file.flush();
    expect(remote.writes()).toHaveLength(1);
    await file.write(4 * KiB, testBytes(4 * KiB, 2));
    await file.fsync();
    expect(remote.calls.map((c) => c.op)).toEqual(['write', 'write', 'sync']);
    expect(remote.durable.length).toBe(8 * KiB);
  });
});

describe('adaptive buffer', () => {
  const adaptive = { bufferBytes: 1 * MiB, minBufferBytes: 64 * KiB, readAheadWindows: 3 };

  it('grows windows while reading sequentially and keeps several in flight', async () => {
    const content = testBytes(8 * MiB);
    const remote = new FakeRemoteFile(content, 2);
    const file = new BufferedFile(remote, adaptive);
    expect((await readAll(file, content.length, 4 * KiB)).equals(content)).toBe(true);
    const lengths = remote.reads().map((r) => r.length);
    expect(lengths[0]).toBe(64 * KiB);
    expect(Math.max(...lengths)).toBe(1 * MiB);
    // Windows never shrink during a sequential read, and they tile the file without gaps.
    for (let i = 1; i < lengths.length; i++) expect(lengths[i]).toBeGreaterThanOrEqual(lengths[i - 1]!);
    const reads = remote.reads();
    for (let i = 1; i < reads.length; i++)
      expect(reads[i]!.offset).toBe(reads[i - 1]!.offset + reads[i - 1]!.length);
    expect(remote.maxInFlight).toBeGreaterThan(1);
    // Never a burst: the window being read and at most readAheadWindows beyond it.
    expect(remote.maxInFlight).toBeLessThanOrEqual(adaptive.readAheadWindows + 1);
    expect(reads.length).toBeLessThan(20); // unbuffered: 2048 requests
  });

  it('serves reads that arrive out of order (FUSE keeps two in flight) from the same windows', async () => {
    const content = testBytes(4 * MiB);
    const remote = new FakeRemoteFile(content, 1);
    const file = new BufferedFile(remote, adaptive);
    const block = 128 * KiB;
    const results: Promise<Uint8Array>[] = [];
    for (let offset = 0; offset < content.length; offset += 2 * block) {
      // The second request of each pair is issued first.
      results.push(file.read(offset + block, block), file.read(offset, block));
    }
    const parts = await Promise.all(results);
    for (let i = 0; i < parts.length; i += 2) {
      const offset = i * block;
      expect(Buffer.from(parts[i + 1]!).equals(content.subarray(offset, offset + block))).toBe(true);
      expect(Buffer.from(parts[i]!).equals(content.subarray(offset + block, offset + 2 * block))).toBe(true);
    }
    expect(remote.reads().length).toBeLessThan(16);
  });

  it('fetches just the request on random access, as unbuffered would, and shrinks', async () => {
    const content = testBytes(4 * MiB);
    const remote = new FakeRemoteFile(content);
    const file = new BufferedFile(remote, adaptive);
    await readAll(file, 1 * MiB, 64 * KiB); // grow first
    expect(file.state.windowBytes).toBeGreaterThan(64 * KiB);
    const before = remote.reads().length;
    const offsets = [100, 3 * MiB + 5, 1.5 * MiB, 2 * MiB + 77, 3.5 * MiB];
    for (const offset of offsets) {
      const data = await file.read(offset, 4 * KiB);
      expect(Buffer.from(data).equals(content.subarray(offset, offset + 4 * KiB))).toBe(true);
    }
    expect(remote.reads().slice(before)).toEqual(offsets.map((offset) => ({ offset, length: 4 * KiB })));
    expect(file.state.windowBytes).toBe(64 * KiB);
  });

  it('returns short reads at the end of the file and nothing past it', async () => {
    const content = testBytes(100 * KiB);
    const remote = new FakeRemoteFile(content);
    const file = new BufferedFile(remote, adaptive);
    expect((await readAll(file, 100 * KiB, 48 * KiB)).equals(content)).toBe(true);
    expect((await file.read(96 * KiB, 8 * KiB)).length).toBe(4 * KiB);
    expect((await file.read(100 * KiB, 8 * KiB)).length).toBe(0);
  });

  it('bypasses the buffer for requests larger than the largest window', async () => {
    const content = testBytes(4 * MiB);
    const remote = new FakeRemoteFile(content);
    const file = new BufferedFile(remote, adaptive);
    await file.read(0, 2 * MiB);
    await file.write(0, testBytes(4 * KiB));
    await file.write(4 * KiB, testBytes(2 * MiB));
    expect(remote.calls).toEqual([
      { op: 'read', offset: 0, length: 2 * MiB },
      { op: 'write', offset: 0, length: 4 * KiB },
      { op: 'write', offset: 4 * KiB, length: 2 * MiB },
    ]);
  });

  it('write-behind acknowledges at once, grows its parts and is on the server when fsync returns', async () => {
    const data = testBytes(6 * MiB);
    const remote = new FakeRemoteFile(Buffer.alloc(0), 5);
    const file = new BufferedFile(remote, adaptive);
    const started = Date.now();
    await file.write(0, data.subarray(0, 4 * KiB));
    expect(remote.writes()).toHaveLength(0);
    for (let offset = 4 * KiB; offset < data.length; offset += 4 * KiB) {
      await file.write(offset, data.subarray(offset, offset + 4 * KiB));
    }
    await file.fsync();
    expect(remote.durable.equals(data)).toBe(true);
    const lengths = remote.writes().map((w) => w.length);
    expect(lengths[0]).toBe(64 * KiB);
    expect(Math.max(...lengths)).toBe(1 * MiB);
    expect(lengths.length).toBeLessThan(15);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(file.state.heldBytes).toBe(0);
  });

  it('keeps up to writesInFlight parts on the way, issued in order', async () => {
    const data = testBytes(4 * MiB);
    const remote = new FakeRemoteFile(Buffer.alloc(0), 5);
    const file = new BufferedFile(remote, { ...adaptive, minBufferBytes: 1 * MiB, writesInFlight: 2 });
    await writeAll(file, data, 64 * KiB);
    await file.close();
    expect(remote.maxInFlight).toBe(2);
    expect(remote.writes().map((w) => w.offset)).toEqual([0, 1, 2, 3].map((i) => i * MiB));
    expect(remote.durable.equals(data)).toBe(true);
  });

  it('refills an acknowledged full-size part while others are in flight, within its memory bound', async () => {
    const data = testBytes(8 * MiB);
    const buffers: ArrayBufferLike[] = [];
    const remote = new FakeRemoteFile(Buffer.alloc(0), 3);
    const send = remote.write.bind(remote);
    remote.write = (offset, bytes) => {
      if (bytes.length === 512 * KiB) buffers.push(bytes.buffer);
      return send(offset, bytes);
    };
    const memory = new MemoryBudget(64 * MiB);
    const options = { ...adaptive, bufferBytes: 512 * KiB, minBufferBytes: 512 * KiB, writesInFlight: 2 };
    const file = new BufferedFile(remote, options, memory);
    let peak = 0;
    for (let offset = 0; offset < data.length; offset += 4 * KiB) {
      await file.write(offset, data.subarray(offset, offset + 4 * KiB));
      peak = Math.max(peak, file.state.heldBytes);
    }
    await file.fsync();
    expect(remote.durable.equals(data)).toBe(true);
    expect(buffers).toHaveLength(16);
    // 16 parts in at most writesInFlight + 2 buffers: the part being filled, those in flight, one spare.
    expect(new Set(buffers).size).toBeLessThanOrEqual(4);
    expect(peak).toBeLessThanOrEqual(3 * 512 * KiB);
    // Nothing in flight: the spare is let go.
    expect(file.state.heldBytes).toBe(0);
    expect(memory.used).toBe(0);
    await file.close();
  });

  it('never returns stale bytes: a write drops read-ahead in flight, a read waits for write-behind', async () => {
    const content = testBytes(4 * MiB);
    const remote = new FakeRemoteFile(content, 3);
    const file = new BufferedFile(remote, adaptive);
    await readAll(file, 512 * KiB, 64 * KiB); // windows ahead are in flight now
    expect(file.state.windows).toBeGreaterThan(0);
    const fresh = testBytes(64 * KiB, 42);
    await file.write(600 * KiB, fresh);
    expect(file.state.windows).toBe(0);
    const read = await file.read(600 * KiB, 64 * KiB);
    expect(Buffer.from(read).equals(fresh)).toBe(true);
    // Sequential reading after the write sees the written bytes too.
    const again = await file.read(560 * KiB, 128 * KiB);
    expect(
      Buffer.from(again)
        .subarray(40 * KiB, 104 * KiB)
        .equals(fresh),
    ).toBe(true);
  });

  it('mixed reading and writing alternates modes and keeps the content exact', async () => {
    const content = testBytes(2 * MiB);
    const expected = Buffer.from(content);
    const remote = new FakeRemoteFile(content, 1);
    const file = new BufferedFile(remote, adaptive);
    let seed = 7;
    for (let i = 0; i < 40; i++) {
      const offset = (i * 37 * KiB) % (2 * MiB - 16 * KiB);
      if (i % 3 === 0) {
        const data = testBytes(16 * KiB, seed++);
        data.copy(expected, offset);
        await file.write(offset, data);
      } else {
        const read = await file.read(offset, 16 * KiB);
        expect(Buffer.from(read).equals(expected.subarray(offset, offset + 16 * KiB))).toBe(true);
      }
    }
    await file.close();
    expect(remote.durable.equals(expected)).toBe(true);
  });

  it('reports a failed background write at the next flush, once, and refuses writes until then', async () => {
    const remote = new FakeRemoteFile();
    remote.failWhen((c) => (c.op === 'write' && c.offset === 0 ? new Error('server said no') : undefined));
    const file = new BufferedFile(remote, adaptive);
    await writeAll(file, testBytes(64 * KiB), 4 * KiB); // a full part goes out
    await new Promise((r) => setTimeout(r, 5));
    await expect(file.write(256 * KiB, testBytes(4 * KiB))).rejects.toThrow('server said no');
    await expect(file.read(0, 4 * KiB)).rejects.toThrow('server said no');
    await expect(file.flush()).rejects.toThrow('server said no');
    await file.flush(); // reported once
  });

  it('close after a failed write aborts the remote file instead of committing, and says so', async () => {
    const remote = new FakeRemoteFile();
    remote.failWhen((c) => (c.op === 'write' ? new Error('disk full') : undefined));
    const file = new BufferedFile(remote, adaptive);
    await file.write(0, testBytes(4 * KiB));
    await expect(file.close()).rejects.toThrow('disk full');
    expect(remote.aborted).toBe(true);
    expect(remote.closed).toBe(false);
    await expect(file.read(0, 1)).rejects.toBeInstanceOf(FileClosedError);
    await file.close(); // nothing more happens
    expect(remote.calls.filter((c) => c.op === 'abort' || c.op === 'close')).toEqual([{ op: 'abort' }]);
  });

  it('a failed window fails the read that needs it; the next read fetches again', async () => {
    const content = testBytes(1 * MiB);
    const remote = new FakeRemoteFile(content);
    let failures = 1;
    remote.failWhen((c) => (c.op === 'read' && failures-- > 0 ? new Error('connection reset') : undefined));
    const file = new BufferedFile(remote, adaptive);
    await expect(file.read(0, 4 * KiB)).rejects.toThrow('connection reset');
    expect((await readAll(file, content.length, 4 * KiB)).equals(content)).toBe(true);
  });

  it('fsync fails when the remote cannot make the bytes durable, and the bytes stay dirty', async () => {
    const remote = new FakeRemoteFile();
    let failures = 1;
    remote.failWhen((c) => (c.op === 'sync' && failures-- > 0 ? new Error('sync failed') : undefined));
    const file = new BufferedFile(remote, adaptive);
    await file.write(0, testBytes(4 * KiB));
    await expect(file.fsync()).rejects.toThrow('sync failed');
    await file.fsync();
    expect(remote.calls.filter((c) => c.op === 'sync')).toHaveLength(2);
    expect(remote.durable.length).toBe(4 * KiB);
  });
});

describe('streamed read-ahead', () => {
  const adaptive = { bufferBytes: 1 * MiB, minBufferBytes: 64 * KiB, readAheadWindows: 3 };
  /** Whether `promise` settles within a few turns of the event loop. */
  const settlesSoon = async (promise: Promise<unknown>): Promise<boolean> => {
    let settled = false;
    promise.then(
      () => (settled = true),
      () => (settled = true),
    );
    for (let i = 0; i < 20 && !settled; i++) await new Promise((r) => setImmediate(r));
    return settled;
  };

  it('serves a read as soon as the bytes it needs have arrived, before its window is whole', async () => {
    const content = testBytes(1 * MiB);
    const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 16 * KiB });
    remote.holdAfter(32 * KiB);
    const file = new BufferedFile(remote, adaptive);
    const first = await file.read(0, 4 * KiB);
    expect(Buffer.from(first).equals(content.subarray(0, 4 * KiB))).toBe(true);
    // The first window (64 KiB) is still arriving: 32 KiB of it are here.
    const second = await file.read(4 * KiB, 28 * KiB);
    expect(Buffer.from(second).equals(content.subarray(4 * KiB, 32 * KiB))).toBe(true);
    expect(remote.reads()[0]).toEqual({ offset: 0, length: 64 * KiB });
    expect(remote.streamedBytes).toBeLessThan(64 * KiB * 2);
    // A read that needs bytes that have not arrived waits for them, and no more.
    const third = file.read(32 * KiB, 4 * KiB);
    expect(await settlesSoon(third)).toBe(false);
    remote.release();
    expect(Buffer.from(await third).equals(content.subarray(32 * KiB, 36 * KiB))).toBe(true);
    expect((await readAll(file, content.length, 4 * KiB)).equals(content)).toBe(true);
  });

  it("the seed's fixed buffer still serves only once its block has arrived whole", async () => {
    const content = testBytes(512 * KiB);
    const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 16 * KiB });
    remote.holdAfter(32 * KiB);
    const file = new BufferedFile(remote, { mode: 'fixed', bufferBytes: 256 * KiB });
    const read = file.read(0, 4 * KiB);
    expect(await settlesSoon(read)).toBe(false);
    remote.release();
    expect(Buffer.from(await read).equals(content.subarray(0, 4 * KiB))).toBe(true);
  });

  it('a window that breaks off mid-stream fails the read that needs the missing bytes, not those before', async () => {
    const content = testBytes(1 * MiB);
    const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 16 * KiB });
    let breaks = 1;
    remote.breakStreamWhen((call, filled) =>
      call.offset === 0 && filled >= 32 * KiB && breaks-- > 0 ? new Error('connection reset') : undefined,
    );
    remote.holdAfter(16 * KiB);
    const file = new BufferedFile(remote, adaptive);
    expect(Buffer.from(await file.read(0, 8 * KiB)).equals(content.subarray(0, 8 * KiB))).toBe(true);
    const needsMore = file.read(8 * KiB, 48 * KiB);
    remote.release();
    await expect(needsMore).rejects.toThrow('connection reset');
    expect(file.state.windows).toBe(0);
    expect(file.state.heldBytes).toBe(0);
    // The next read fetches again, and the whole file reads back exactly.
    expect((await readAll(file, content.length, 4 * KiB)).equals(content)).toBe(true);
  });

  it('a failure in a window ahead surfaces only when a read reaches it', async () => {
    const content = testBytes(2 * MiB);
    const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 32 * KiB });
    let breaks = 1;
    remote.breakStreamWhen((call, filled) =>
      call.offset > 0 && filled >= 32 * KiB && breaks-- > 0 ? new Error('reset ahead') : undefined,
    );
    const file = new BufferedFile(remote, adaptive);
    const failedAt: number[] = [];
    const parts: Buffer[] = [];
    for (let offset = 0; offset < content.length; offset += 16 * KiB) {
      try {
        parts.push(Buffer.from(await file.read(offset, 16 * KiB)));
      } catch (err) {
        expect((err as Error).message).toBe('reset ahead');
        failedAt.push(offset);
        parts.push(Buffer.from(await file.read(offset, 16 * KiB))); // the caller retries
      }
    }
    expect(failedAt).toHaveLength(1);
    expect(failedAt[0]).toBeGreaterThanOrEqual(64 * KiB); // past the first window
    expect(Buffer.concat(parts).equals(content)).toBe(true);
  });

  it('reads that span the pieces a window arrived in come back whole (views or copies)', async () => {
    const content = testBytes(2 * MiB + 777);
    for (const block of [4 * KiB, 5000, 100 * KiB]) {
      const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 3001 });
      const file = new BufferedFile(remote, adaptive);
      expect((await readAll(file, content.length, block)).equals(content)).toBe(true);
    }
    // A swapped pair inside windows already fetched: the second lies before the first.
    const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 3001 });
    const file = new BufferedFile(remote, adaptive);
    await readAll(file, 256 * KiB, 64 * KiB);
    const later = file.read(300 * KiB, 16 * KiB);
    const earlier = file.read(284 * KiB, 16 * KiB);
    expect(Buffer.from(await later).equals(content.subarray(300 * KiB, 316 * KiB))).toBe(true);
    expect(Buffer.from(await earlier).equals(content.subarray(284 * KiB, 300 * KiB))).toBe(true);
  });

  it('serves a read behind the position from a window still held, without a request', async () => {
    const content = testBytes(2 * MiB);
    const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 16 * KiB });
    const file = new BufferedFile(remote, { ...adaptive, minBufferBytes: 1 * MiB, readAheadWindows: 1 });
    await readAll(file, 512 * KiB, 4 * KiB);
    const before = remote.reads().length;
    const behind = await file.read(64 * KiB, 4 * KiB);
    expect(Buffer.from(behind).equals(content.subarray(64 * KiB, 68 * KiB))).toBe(true);
    expect(remote.reads().length).toBe(before);
  });

  it('reuses the buffers of windows read past: a long sequential read allocates a few, not one per window', async () => {
    const content = testBytes(16 * MiB + 3);
    const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 64 * KiB });
    const file = new BufferedFile(remote, {
      ...adaptive,
      bufferBytes: 1 * MiB,
      minBufferBytes: 1 * MiB,
      readAheadWindows: 2,
    });
    const allocations = vi.spyOn(Buffer, 'allocUnsafeSlow');
    try {
      expect((await readAll(file, content.length, 64 * KiB)).equals(content)).toBe(true);
      const windowBuffers = allocations.mock.calls.filter(([size]) => size === 1 * MiB).length;
      // 17 windows: the one being read, two ahead and a spare or so, then reuse.
      expect(windowBuffers).toBeGreaterThan(0);
      expect(windowBuffers).toBeLessThanOrEqual(5);
    } finally {
      allocations.mockRestore();
    }
    await file.close();
    expect(file.state.heldBytes).toBe(0);
  });

  it('reads into a caller buffer (readInto), also across windows and at the end of the file', async () => {
    const content = testBytes(3 * MiB + 123);
    const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 5000 });
    const file = new BufferedFile(remote, { ...adaptive, bufferBytes: 1 * MiB, minBufferBytes: 256 * KiB });
    const target = Buffer.alloc(100 * KiB);
    let position = 0;
    const out: Buffer[] = [];
    for (;;) {
      const n = await file.readInto(position, target);
      if (n === 0) break;
      out.push(Buffer.from(target.subarray(0, n)));
      position += n;
    }
    expect(Buffer.concat(out).equals(content)).toBe(true);
    await file.close();
  });

  it('works the same over a remote that can only return whole ranges', async () => {
    const content = testBytes(3 * MiB + 5);
    const remote = new FakeRemoteFile(content, 1, false, { streaming: false });
    expect(remote.readInto).toBeUndefined();
    const file = new BufferedFile(remote, adaptive);
    expect((await readAll(file, content.length, 4 * KiB)).equals(content)).toBe(true);
    expect(remote.reads().length).toBeLessThan(12);
    expect(remote.maxInFlight).toBeGreaterThan(1);
  });
});

describe('many files', () => {
  it('interleaved files are independent: each keeps its own windows and parts', async () => {
    const pool = new AdvanceBufferPool({ bufferBytes: 512 * KiB, minBufferBytes: 64 * KiB });
    const a = new FakeRemoteFile(testBytes(2 * MiB, 1), 1);
    const b = new FakeRemoteFile(Buffer.alloc(0), 1);
    const reader = pool.open(a);
    const writer = pool.open(b);
    const written = testBytes(2 * MiB, 2);
    const read: Buffer[] = [];
    for (let offset = 0; offset < 2 * MiB; offset += 16 * KiB) {
      read.push(Buffer.from(await reader.read(offset, 16 * KiB)));
      await writer.write(offset, written.subarray(offset, offset + 16 * KiB));
    }
    await Promise.all([reader.close(), writer.close()]);
    expect(Buffer.concat(read).equals(a.content)).toBe(true);
    expect(b.durable.equals(written)).toBe(true);
    expect(a.writes()).toHaveLength(0);
    expect(b.reads()).toHaveLength(0);
    expect(a.reads().length).toBeLessThan(12);
    expect(b.writes().length).toBeLessThan(12);
    expect(pool.memory.used).toBe(0);
  });

  it('many open files stay within the shared memory limit, and still finish', async () => {
    const limit = 1 * MiB;
    const pool = new AdvanceBufferPool({
      bufferBytes: 512 * KiB,
      minBufferBytes: 64 * KiB,
      memoryLimitBytes: limit,
    });
    let peak = 0;
    const original = pool.memory.tryAcquire.bind(pool.memory);
    // What is resident: buffers lent out and idle ones kept for reuse.
    pool.memory.tryAcquire = (bytes: number) => {
      const ok = original(bytes);
      peak = Math.max(peak, pool.memory.used + pool.memory.idle);
      return ok;
    };
    const files = Array.from({ length: 6 }, (_, i) => ({
      reader: new FakeRemoteFile(testBytes(1 * MiB, i + 1), 2),
      writer: new FakeRemoteFile(Buffer.alloc(0), 2),
      data: testBytes(1 * MiB, i + 100),
    }));
    await Promise.all(
      files.map(async ({ reader, writer, data }) => {
        const r = pool.open(reader);
        const w = pool.open(writer);
        const got = await readAll(r, 1 * MiB, 8 * KiB);
        expect(got.equals(reader.content)).toBe(true);
        await writeAll(w, data, 8 * KiB);
        await Promise.all([r.close(), w.close()]);
        expect(writer.durable.equals(data)).toBe(true);
      }),
    );
    expect(peak).toBeLessThanOrEqual(limit);
    expect(pool.memory.used).toBe(0);
  });

  it('a file opened after another reuses the buffers the first gave back, reading and writing', async () => {
    const pool = new AdvanceBufferPool({ bufferBytes: 1 * MiB, minBufferBytes: 64 * KiB });
    const content = testBytes(8 * MiB);
    const allocations = vi.spyOn(Buffer, 'allocUnsafeSlow');
    try {
      const first = pool.open(new FakeRemoteFile(content, 0, false, { pieceBytes: 64 * KiB }));
      expect((await readAll(first, content.length, 16 * KiB)).equals(content)).toBe(true);
      await first.close();
      const firstAllocations = allocations.mock.calls.length;
      expect(firstAllocations).toBeGreaterThan(0);
      expect(pool.memory.used).toBe(0);
      expect(pool.memory.idle).toBeGreaterThan(0);
      const second = pool.open(new FakeRemoteFile(content, 0, false, { pieceBytes: 64 * KiB }));
      expect((await readAll(second, content.length, 16 * KiB)).equals(content)).toBe(true);
      await second.close();
      expect(allocations.mock.calls.length).toBe(firstAllocations);

      const written = testBytes(6 * MiB, 9);
      const writers = [new FakeRemoteFile(Buffer.alloc(0), 1), new FakeRemoteFile(Buffer.alloc(0), 1)];
      const firstWriter = pool.open(writers[0]!);
      await writeAll(firstWriter, written, 16 * KiB);
      await firstWriter.close();
      const afterFirstWrite = allocations.mock.calls.length;
      const again = pool.open(writers[1]!);
      await writeAll(again, written, 16 * KiB);
      await again.close();
      expect(writers[1]!.durable.equals(written)).toBe(true);
      expect(allocations.mock.calls.length).toBe(afterFirstWrite);
    } finally {
      allocations.mockRestore();
    }
    expect(pool.memory.used).toBe(0);
  });

  it('never gives back the buffer of a window that had not arrived whole when it was dropped', async () => {
    const pool = new AdvanceBufferPool({
      bufferBytes: 1 * MiB,
      minBufferBytes: 1 * MiB,
      readAheadWindows: 1,
    });
    const content = testBytes(4 * MiB);
    const remote = new FakeRemoteFile(content, 0, false, { pieceBytes: 64 * KiB });
    const file = pool.open(remote);
    remote.holdAfter(256 * KiB);
    // The first window's first 256 KiB arrive; the rest (and the window ahead) are held.
    expect(Buffer.from(await file.read(0, 64 * KiB)).equals(content.subarray(0, 64 * KiB))).toBe(true);
    expect(pool.memory.used).toBeGreaterThan(0);
    const given: number[] = [];
    const give = pool.memory.give.bind(pool.memory);
    pool.memory.give = (buf: Buffer) => {
      given.push(buf.length);
      give(buf);
    };
    // A write drops every window (aborting those in flight): their memory comes back, their
    // buffers do not (the transfer into them might not have stopped yet).
    await file.write(0, testBytes(4 * KiB, 3));
    expect(given).toEqual([]);
    remote.release();
    await file.close();
    expect(pool.memory.used).toBe(0);
  });

  it('one file holds at most maxWriteBehindBytes of unsent writes', async () => {
    const memory = new MemoryBudget(64 * MiB);
    const remote = new FakeRemoteFile(Buffer.alloc(0), 3);
    const file = new BufferedFile(
      remote,
      { bufferBytes: 256 * KiB, minBufferBytes: 256 * KiB, maxWriteBehindBytes: 512 * KiB },
      memory,
    );
    let peak = 0;
    for (let offset = 0; offset < 4 * MiB; offset += 64 * KiB) {
      await file.write(offset, testBytes(64 * KiB, offset));
      peak = Math.max(peak, file.state.heldBytes);
    }
    await file.close();
    expect(peak).toBeLessThanOrEqual(512 * KiB);
    expect(memory.used).toBe(0);
  });
});
