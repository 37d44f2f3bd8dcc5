/**
 * The peer batch answer's framing: for each object a header line (JSON, ending in `\n`) followed
 * by `size` raw bytes when the header has a size, none when it has an error. Many small objects
 * travel in one answer without base64 or multipart boundaries to scan for.
 */
export type FrameHeader = { id: string; size: number; checksum: string } | { id: string; error: string };

/** Longest header line accepted (a header is an id, a size and a checksum, or a short error). */
export const MAX_FRAME_HEADER = 4096;

export function encodeFrameHeader(header: FrameHeader): Buffer {
  return Buffer.from(JSON.stringify(header) + '\n');
}

export class FrameError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FrameError';
  }
}

/**
 * Reads frames from a byte stream; each object's bytes are gathered whole (batched objects are
 * small). `maxBytes` bounds one object. Throws FrameError on a malformed or cut-short answer.
 */
export async function* readFrames(
  source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>,
  maxBytes: number,
): AsyncGenerator<{ header: FrameHeader; bytes: Buffer }> {
  let pending = Buffer.alloc(0);
  let header: FrameHeader | undefined;
  let body: Buffer[] = [];
  let bodyLength = 0;
  const drain = function* (): Generator<{ header: FrameHeader; bytes: Buffer }> {
    for (;;) {
      if (!header) {
        const nl = pending.indexOf(10);
        if (nl < 0) {
          if (pending.length > MAX_FRAME_HEADER) throw new FrameError('a frame header is too long');
          return;
        }
        header = parseHeader(pending.subarray(0, nl), maxBytes);
        pending = pending.subarray(nl + 1);
        body = [];
        bodyLength = 0;
      }
      const size = 'size' in header ? header.size : 0;
      const take = Math.min(size - bodyLength, pending.length);
      if (take > 0) {
        body.push(pending.subarray(0, take));
        bodyLength += take;
        pending = pending.subarray(take);
      }
      if (bodyLength < size) return;
      yield { header, bytes: Buffer.concat(body, bodyLength) };
      header = undefined;
    }
  };
  for await (const chunk of source) {
    pending = pending.length ? Buffer.concat([pending, chunk]) : Buffer.from(chunk);
    yield* drain();
  }
  if (header || pending.length) throw new FrameError('the answer was cut short');
}

function parseHeader(line: Buffer, maxBytes: number): FrameHeader {
  let value: unknown;
  try {
    value = JSON.parse(line.toString('utf8'));
  } catch {
    throw new FrameError('a frame header is not JSON');
  }
  const h = value as Record<string, unknown>;
  if (typeof h !== 'object' || h === null || typeof h.id !== 'string')
    throw new FrameError('a frame header has no id');
  if (typeof h.error === 'string') return { id: h.id, error: h.error };
  if (
    typeof h.size !== 'number' ||
    !Number.isSafeInteger(h.size) ||
    h.size < 0 ||
    h.size > maxBytes ||
    typeof h.checksum !== 'string'
  )
    throw new FrameError(`the frame of ${h.id} has no valid size and checksum`);
  return { id: h.id, size: h.size, checksum: h.checksum };
}
