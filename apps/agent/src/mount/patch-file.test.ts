import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AdvanceBufferPool, ApiConnection } from '@tributary/buffer';
import { ByteRangeSet } from '@tributary/shared';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PATCH_PART_BYTES, PatchFile, removeStaleSpills } from './patch-file';

const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
/** Byte-for-byte equality (toEqual walks large arrays element by element, slowly). */
const expectBytes = (actual: Uint8Array, expected: Uint8Array): void =>
  expect(
    Buffer.from(actual).equals(Buffer.from(expected)),
    `${actual.length} vs ${expected.length} bytes`,
  ).toBe(true);
const quick = { retries: 2, baseDelayMs: 1, maxDelayMs: 2 };

function bytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

/**
 * A fake site for one object: ranged GETs of the base, and partial-update sessions composed as the
 * API composes them (base where no part was sent, zeros past its end, cut to size).
 */
function fakeSite(initial: Uint8Array, options: { loseFirstAnswer?: boolean } = {}) {
  let object = initial;
  let version = 1;
  const parts: { offset: number; length: number; sha256: string | null }[] = [];
  const sessions: { size: number; base: { version: number; sha256: string } }[] = [];
  let written = new Map<number, Uint8Array>();
  let ranges = new ByteRangeSet();
  let lost = false;
  const entry = () => ({ path: '/f', size: object.length, version, checksum: `sha256:${sha(object)}` });
  // eslint-disable-next-line @typescript-eslint/require-await -- throws inside become rejections, as fetch's do
  const fetchImpl = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : input);
    const headers = new Headers(init?.headers);
    const method = init?.method ?? 'GET';
    if (method === 'GET' && url.pathname === '/api/v1/data') {
      const [, a, b] = /bytes=(\d+)-(\d+)/.exec(headers.get('range') ?? '')!;
      return new Response(object.slice(Number(a), Number(b) + 1), { status: 206 });
    }
    if (method === 'POST' && url.pathname === '/api/v1/uploads') {
      const body = JSON.parse(init?.body as string) as (typeof sessions)[number];
      sessions.push(body);
      written = new Map();
      ranges = new ByteRangeSet();
      return Response.json({ id: 's1', ranges: [] }, { status: 201 });
    }
    if (method === 'PUT') {
      const offset = Number(url.searchParams.get('offset'));
      const body = new Uint8Array(init?.body as Uint8Array);
      if (ranges.overlaps(offset, offset + body.length))
        return Response.json(
          { error: { code: 'UPLOAD_RANGE_OVERLAP', message: 'overlap' } },
          { status: 409 },
        );
      parts.push({ offset, length: body.length, sha256: headers.get('x-chunk-sha256') });
      written.set(offset, body);
      ranges.add(offset, offset + body.length);
      if (options.loseFirstAnswer && !lost) {
        lost = true;
        throw new TypeError('fetch failed');
      }
      return Response.json({ id: 's1', ranges: ranges.ranges });
    }
    if (method === 'GET' && url.pathname === '/api/v1/uploads/s1')
      return Response.json({ id: 's1', ranges: ranges.ranges });
    if (method === 'POST' && url.pathname === '/api/v1/uploads/s1/complete') {
      const session = sessions.at(-1)!;
      if (session.base.version !== version)
        return Response.json({ error: { code: 'UPLOAD_BASE_CHANGED', message: 'x' } }, { status: 409 });
      const next = new Uint8Array(session.size);
      next.set(object.subarray(0, Math.min(object.length, session.size)));
      for (const [offset, b] of written) next.set(b, offset);
      object = next;
      version++;
      return Response.json(entry());
    }
    return Response.json(
      { error: { code: 'NOT_FOUND', message: `${method} ${url.pathname}` } },
      { status: 404 },
    );
  };
  return {
    api: new ApiConnection({ baseUrl: 'http://site.test', token: 't', fetch: fetchImpl }),
    parts,
    sessions,
    object: () => object,
    entry,
    bumpVersion: () => version++,
  };
}

describe('PatchFile', () => {
  let spillDir: string;
  const pool = new AdvanceBufferPool({ bufferBytes: 1024 * 1024, memoryLimitBytes: 16 * 1024 * 1024 });
  beforeEach(async () => {
    spillDir = await mkdtemp(path.join(os.tmpdir(), 'patch-file-test-'));
  });
  afterEach(async () => {
    await rm(spillDir, { recursive: true, force: true });
  });

  const open = (site: ReturnType<typeof fakeSite>) => {
    const e = site.entry();
    return new PatchFile({
      api: site.api,
      path: '/f',
      base: { version: e.version, sha256: e.checksum, size: e.size },
      pool,
      retry: quick,
      spillDir,
    });
  };

  it('reads its own writes over the base, sends only the written ranges, and goes on from the new version', async () => {
    const base = bytes(100_000, 1);
    const site = fakeSite(base);
    const file = open(site);
    const expected = Uint8Array.from(base);
    await file.write(10, Uint8Array.of(1, 2, 3));
    await file.write(50_000, bytes(5000, 7));
    await file.write(12, Uint8Array.of(9, 9)); // overlaps and extends the first write
    expected.set([1, 2, 3], 10);
    expected.set(bytes(5000, 7), 50_000);
    expected.set([9, 9], 12);
    expectBytes(await file.read(0, 100_000), expected);
    expectBytes(await file.read(99_990, 100), expected.subarray(99_990));
    const entry = await file.commit();
    expect(site.parts.map((p) => [p.offset, p.length])).toEqual([
      [10, 4],
      [50_000, 5000],
    ]);
    expect(site.parts[1]!.sha256).toBe(sha(bytes(5000, 7)));
    expect(site.sessions[0]).toMatchObject({ size: 100_000, base: { version: 1, sha256: sha(base) } });
    expect(entry).toMatchObject({ version: 2 });
    expectBytes(site.object(), expected);
    expect(file.changed).toBe(false);
    expect(await file.commit()).toBeUndefined();
    // The next change starts from version 2.
    await file.write(0, Uint8Array.of(42));
    await file.commit();
    expect(site.sessions[1]).toMatchObject({ base: { version: 2, sha256: sha(expected) } });
    expected[0] = 42;
    expectBytes(site.object(), expected);
    await file.close();
    expect(await readdir(spillDir)).toEqual([]);
  });

  it('appends, shrinks and grows: zeros where the base was cut off, sent explicitly', async () => {
    const base = bytes(1000, 3);
    const site = fakeSite(base);
    const file = open(site);
    await file.resize(100);
    await file.resize(300); // bytes 100..300 are zeros now, not the base's
    await file.write(300, Uint8Array.of(7, 7));
    expect(file.size).toBe(302);
    const expected = new Uint8Array(302);
    expected.set(base.subarray(0, 100));
    expected.set([7, 7], 300);
    expectBytes(await file.read(0, 1000), expected);
    await file.commit();
    // The zeros and the write next to them go as one part.
    expect(site.parts.map((p) => [p.offset, p.length])).toEqual([[100, 202]]);
    expectBytes(site.object(), expected);
    await file.close();
  });

  it('cuts large ranges into parts of at most PATCH_PART_BYTES', async () => {
    const site = fakeSite(bytes(10, 1));
    const file = open(site);
    const big = bytes(PATCH_PART_BYTES + 5, 2);
    await file.write(0, big);
    await file.commit();
    expect(site.parts.map((p) => [p.offset, p.length])).toEqual([
      [0, PATCH_PART_BYTES],
      [PATCH_PART_BYTES, 5],
    ]);
    expect(Buffer.from(site.object()).equals(Buffer.from(big))).toBe(true);
    await file.close();
  }, 30_000);

  it('a write that arrives while a commit is sending parts is kept for the next commit', async () => {
    const site = fakeSite(bytes(100, 1));
    const file = open(site);
    await file.write(0, Uint8Array.of(1));
    const committing = file.commit();
    const writing = file.write(50, Uint8Array.of(2));
    await Promise.all([committing, writing]);
    expect(site.object()[50]).not.toBe(2);
    expect(file.changed).toBe(true);
    await file.commit();
    expect([site.object()[0], site.object()[50]]).toEqual([1, 2]);
    await file.close();
  });

  it('a part whose answer was lost is not an error when the site holds its range', async () => {
    const site = fakeSite(bytes(100, 1), { loseFirstAnswer: true });
    const file = open(site);
    await file.write(5, Uint8Array.of(1));
    await file.commit();
    expect(site.object()[5]).toBe(1);
    await file.close();
  });

  it('a commit refused because the object changed keeps the changes for another try', async () => {
    const site = fakeSite(bytes(100, 1));
    const file = open(site);
    await file.write(5, Uint8Array.of(1));
    site.bumpVersion();
    await expect(file.commit()).rejects.toMatchObject({ code: 'UPLOAD_BASE_CHANGED' });
    expect(file.changed).toBe(true);
    expect((await file.read(5, 1))[0]).toBe(1);
    await file.close();
  });
});

describe('removeStaleSpills', () => {
  it('removes the dirty-bytes directories of processes that are gone and keeps the others', async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spills-test-'));
    try {
      // Beyond any pid_max: no such process.
      const dead = path.join(dir, 'tributary-dirty-999999999-abc123');
      const alive = path.join(dir, `tributary-dirty-${process.pid}-def456`);
      const other = path.join(dir, 'unrelated');
      for (const d of [dead, alive, other]) await mkdir(path.join(d, 'sub'), { recursive: true });
      expect(await removeStaleSpills(dir)).toBe(1);
      expect((await readdir(dir)).sort()).toEqual([path.basename(alive), 'unrelated'].sort());
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('names its own directory after the process, so a later mount can tell', async () => {
    const site = fakeSite(bytes(10, 1));
    const e = site.entry();
    const dir = await mkdtemp(path.join(os.tmpdir(), 'spills-own-'));
    const pool = new AdvanceBufferPool({ bufferBytes: 1024 * 1024, memoryLimitBytes: 16 * 1024 * 1024 });
    const file = new PatchFile({
      api: site.api,
      path: '/f',
      base: { version: e.version, sha256: e.checksum, size: e.size },
      pool,
      retry: quick,
      spillDir: dir,
    });
    try {
      await file.write(2, Uint8Array.of(7));
      expect(await readdir(dir)).toEqual([
        expect.stringMatching(new RegExp(`^tributary-dirty-${process.pid}-`)),
      ]);
      expect(await removeStaleSpills(dir)).toBe(0);
      await file.close();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
