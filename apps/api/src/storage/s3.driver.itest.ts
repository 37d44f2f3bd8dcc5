import { S3Client, ListMultipartUploadsCommand, CreateMultipartUploadCommand } from '@aws-sdk/client-s3';
import { startS3Server, testBucket, type S3Server } from '@tributary/testkit';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable, Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { S3Credentials, type S3ResourceSettings } from './resource-config';
import { S3Driver } from './s3.driver';
import { KeyMissingError, StagingError, StorageUnavailableError } from './storage-driver';

const MiB = 1024 * 1024;
const sha = (b: Buffer): string => createHash('sha256').update(b).digest('hex');

async function collect(stream: Readable): Promise<Buffer> {
  const pieces: Buffer[] = [];
  for await (const p of stream) pieces.push(p as Buffer);
  return Buffer.concat(pieces);
}

/** A Writable that keeps a copy of what it is sent (the sender reuses its buffers). */
function sink(): { out: Writable; bytes(): Buffer } {
  const pieces: Buffer[] = [];
  const out = new Writable({
    write(chunk: Buffer, _e, done) {
      pieces.push(Buffer.from(chunk));
      done();
    },
  });
  return { out, bytes: () => Buffer.concat(pieces) };
}

describe('S3Driver against SeaweedFS', () => {
  let server: S3Server;
  let scratch: string;
  let driver: S3Driver;
  let settings: S3ResourceSettings;

  const make = (overrides: Partial<S3ResourceSettings> = {}, credentials?: S3Credentials): S3Driver =>
    new S3Driver(
      'archive',
      { ...settings, ...overrides },
      credentials ?? new S3Credentials(server.accessKeyId, server.secretAccessKey),
      scratch,
    );

  beforeAll(async () => {
    server = await startS3Server();
    scratch = await mkdtemp(path.join(os.tmpdir(), 'tributary-s3-scratch-'));
    settings = {
      endpoint: server.endpoint,
      bucket: testBucket('driver'),
      region: server.region,
      prefix: 'lsu/',
      forcePathStyle: true,
      createBucket: true,
      partSizeMiB: 5,
      partsInParallel: 4,
    };
    driver = make();
    await driver.init();
  }, 90_000);

  afterAll(async () => {
    await driver?.close();
    await server?.close();
    await rm(scratch, { recursive: true, force: true });
  });

  it('stages a small body in one PUT under its own key, hashed, and reads it back whole and by range', async () => {
    const body = randomBytes(100_000);
    const staged = await driver.stage(Readable.from([body]), { maxBytes: MiB, expectedBytes: body.length });
    expect(staged.size).toBe(body.length);
    expect(staged.sha256).toBe(sha(body));
    expect(staged.key).toMatch(/^[0-9a-f-]{36}$/);
    await staged.commit(staged.key!);
    expect((await collect(driver.open(staged.key!))).equals(body)).toBe(true);
    expect(
      (await collect(driver.open(staged.key!, { start: 10, end: 19 }))).equals(body.subarray(10, 20)),
    ).toBe(true);
    expect((await driver.readSmall(staged.key!, MiB)).equals(body)).toBe(true);
    const s = sink();
    expect(await driver.send(staged.key!, { start: 5, end: 99_999 }, s.out)).toBe(99_995);
    expect(s.bytes().equals(body.subarray(5))).toBe(true);
  });

  it('streams a large body up as a multipart upload with parts in parallel, and down again', async () => {
    const size = 23 * MiB + 17;
    const body = randomBytes(size);
    // Sent in small pieces, as a socket would.
    const pieces = Array.from({ length: Math.ceil(size / 65536) }, (_, i) =>
      body.subarray(i * 65536, (i + 1) * 65536),
    );
    const staged = await driver.stage(Readable.from(pieces), { maxBytes: size });
    expect(staged.sha256).toBe(sha(body));
    const s = sink();
    expect(await driver.send(staged.key!, undefined, s.out)).toBe(size);
    expect(sha(s.bytes())).toBe(sha(body));
    const tail = await collect(driver.open(staged.key!, { start: size - 1000, end: size - 1 }));
    expect(tail.equals(body.subarray(size - 1000))).toBe(true);
  });

  it('commits under another key by moving the object, and discards what was not committed', async () => {
    const body = randomBytes(5000);
    const staged = await driver.stage(Readable.from([body]), { maxBytes: MiB });
    await staged.commit('42.v2');
    expect((await driver.readSmall('42.v2', MiB)).equals(body)).toBe(true);
    await expect(driver.readSmall(staged.key!, MiB)).rejects.toBeInstanceOf(KeyMissingError);
    const other = await driver.stage(Readable.from([body]), { maxBytes: MiB });
    await other.discard();
    await expect(driver.readSmall(other.key!, MiB)).rejects.toBeInstanceOf(KeyMissingError);
  });

  it('refuses a body over the limit or shorter than announced, leaving nothing behind', async () => {
    await expect(driver.stage(Readable.from([randomBytes(2000)]), { maxBytes: 1000 })).rejects.toMatchObject({
      reason: 'too-large',
    });
    await expect(
      driver.stage(Readable.from([randomBytes(2000)]), { maxBytes: MiB, expectedBytes: 3000 }),
    ).rejects.toMatchObject({ reason: 'incomplete' });
    // A sender that breaks off mid-way (a socket reset) is an incomplete upload, not a store failure.
    const broken = new PassThrough();
    broken.write(randomBytes(6 * MiB));
    setTimeout(() => broken.destroy(new Error('socket hang up')), 50);
    await expect(driver.stage(broken, { maxBytes: 100 * MiB })).rejects.toBeInstanceOf(StagingError);
  });

  it('stages many small bodies at once, all or nothing', async () => {
    const bodies = Array.from({ length: 40 }, () => randomBytes(10_000));
    const staged = await driver.stageAll(bodies);
    expect(staged.map((s) => s.sha256)).toEqual(bodies.map(sha));
    for (const [i, s] of staged.entries())
      expect((await driver.readSmall(s.key!, MiB)).equals(bodies[i]!)).toBe(true);
    await Promise.all(staged.map((s) => s.discard()));
    await expect(driver.readSmall(staged[0]!.key!, MiB)).rejects.toBeInstanceOf(KeyMissingError);
  });

  it('keeps drafts locally and uploads one when adopted; a discard after the commit leaves the draft', async () => {
    const body = randomBytes(7 * MiB);
    await driver.drafts.create('session-1');
    await driver.drafts.write('session-1', Readable.from([body.subarray(0, 3 * MiB)]), { start: 0 });
    await driver.drafts.write('session-1', Readable.from([body.subarray(3 * MiB)]), { start: 3 * MiB });
    const staged = await driver.drafts.adopt('session-1', { size: body.length, sha256: sha(body) });
    await staged.commit(staged.key!);
    expect(sha(await collect(driver.open(staged.key!)))).toBe(sha(body));
    await staged.discard();
    await expect(driver.readSmall(staged.key!, 100 * MiB)).rejects.toBeInstanceOf(KeyMissingError);
    expect(await driver.drafts.exists('session-1')).toBe(true);
    await driver.drafts.remove('session-1');
  });

  it('aborts unfinished multipart uploads at start', async () => {
    const client = new S3Client({
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
      credentials: { accessKeyId: server.accessKeyId, secretAccessKey: server.secretAccessKey },
    });
    await client.send(new CreateMultipartUploadCommand({ Bucket: settings.bucket, Key: 'lsu/left-behind' }));
    const before = await client.send(
      new ListMultipartUploadsCommand({ Bucket: settings.bucket, Prefix: 'lsu/' }),
    );
    expect(before.Uploads?.length ?? 0).toBeGreaterThan(0);
    const again = make();
    await again.init();
    await again.close();
    const after = await client.send(
      new ListMultipartUploadsCommand({ Bucket: settings.bucket, Prefix: 'lsu/' }),
    );
    expect(after.Uploads ?? []).toEqual([]);
    client.destroy();
  });

  it('reports refused credentials and an unanswering store as unavailable, naming the resource', async () => {
    const wrong = make({}, new S3Credentials(server.accessKeyId, 'not-the-secret'));
    const health = await wrong.check();
    expect(health).toMatchObject({ status: 'failing', error: "the store refused the site's credentials" });
    await expect(wrong.stage(Readable.from([Buffer.from('x')]), { maxBytes: 10 })).rejects.toMatchObject({
      name: 'StorageUnavailableError',
      resource: 'archive',
    });
    await wrong.close();

    const body = randomBytes(1000);
    const staged = await driver.stage(Readable.from([body]), { maxBytes: MiB });
    expect(await driver.check()).toEqual({ status: 'ok' });
    await server.kill();
    try {
      expect((await driver.check()).status).toBe('failing');
      await expect(driver.readSmall(staged.key!, MiB)).rejects.toBeInstanceOf(StorageUnavailableError);
      await expect(driver.prepareSend(staged.key!, undefined)).rejects.toBeInstanceOf(
        StorageUnavailableError,
      );
    } finally {
      await server.start();
    }
    expect((await driver.readSmall(staged.key!, MiB)).equals(body)).toBe(true);
  }, 60_000);
});
