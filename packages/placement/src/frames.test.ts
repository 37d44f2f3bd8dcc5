import { describe, expect, it } from 'vitest';
import { encodeFrameHeader, readFrames } from './frames';

async function collect(chunks: Buffer[], max = 1000) {
  const out: Array<{ id: string; text: string; error?: string }> = [];
  for await (const f of readFrames(chunks, max))
    out.push({
      id: f.header.id,
      text: f.bytes.toString(),
      ...('error' in f.header ? { error: f.header.error } : {}),
    });
  return out;
}

describe('batch frames', () => {
  const whole = Buffer.concat([
    encodeFrameHeader({ id: '1', size: 5, checksum: 'sha256:a' }),
    Buffer.from('hello'),
    encodeFrameHeader({ id: '2', error: 'no good copy here' }),
    encodeFrameHeader({ id: '3', size: 0, checksum: 'sha256:b' }),
    encodeFrameHeader({ id: '4', size: 3, checksum: 'sha256:c' }),
    Buffer.from('abc'),
  ]);
  const expected = [
    { id: '1', text: 'hello' },
    { id: '2', text: '', error: 'no good copy here' },
    { id: '3', text: '' },
    { id: '4', text: 'abc' },
  ];

  it('reads objects and errors, however the stream is cut into chunks', async () => {
    expect(await collect([whole])).toEqual(expected);
    const bytes = [...whole].map((b) => Buffer.from([b]));
    expect(await collect(bytes)).toEqual(expected);
    expect(await collect([whole.subarray(0, 7), whole.subarray(7, 40), whole.subarray(40)])).toEqual(
      expected,
    );
  });

  it('refuses a cut-short answer, a bad header and an object over the limit', async () => {
    await expect(collect([whole.subarray(0, whole.length - 1)])).rejects.toThrow(/cut short/);
    await expect(collect([Buffer.from('nope\n')])).rejects.toThrow(/not JSON/);
    await expect(collect([whole], 4)).rejects.toThrow(/valid size/);
  });
});
