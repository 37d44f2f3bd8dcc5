import {
  AbortMultipartUploadCommand,
  CopyObjectCommand,
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  ListMultipartUploadsCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  type GetObjectCommandOutput,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { NodeHttpHandler } from '@smithy/node-http-handler';
import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, promises as fs } from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import path from 'node:path';
import { Readable, Transform, type Writable } from 'node:stream';
import { sendStream } from './file-io';
import { LocalDrafts } from './local-fs.driver';
import type { S3Credentials, S3ResourceSettings } from './resource-config';
import {
  DraftGoneError,
  ForwardingDrafts,
  KeyMissingError,
  ObjectTooLargeError,
  StagingError,
  StorageUnavailableError,
  type ResourceHealth,
  type StagedFile,
  type StorageDriver,
} from './storage-driver';

const MiB = 1024 * 1024;
/** Small bodies of one stageAll sent at once. */
const STAGE_ALL_PUTS = 16;
/** Longest wait for the store to accept a connection. */
const CONNECT_TIMEOUT_MS = 3000;
/** Longest silence on a connection once a request is under way. */
const SOCKET_TIMEOUT_MS = 30_000;
/** A health check's whole budget. */
const CHECK_TIMEOUT_MS = 3000;

/** Storage keys: one plain name, never hidden (as the local driver's). */
const NAME = /^[A-Za-z0-9._-]+$/;

/**
 * A resource on an S3-compatible object store (SeaweedFS, Ceph RGW, AWS S3, ...). Each key is one
 * object, `<prefix><key>`, in the resource's bucket. Bytes stream both ways: uploads go up as they
 * arrive (one PUT for small ones, a multipart upload with `partsInParallel` parts in flight for
 * large ones), hashed on the way; reads are ranged GETs streamed to the receiver. An upload lands
 * directly under a fresh key (`StagedFile.key`), so committing it there costs nothing; a failed or
 * refused upload removes it, and unfinished multipart uploads are aborted on failure and at start.
 *
 * Upload sessions' drafts and the mover's partial copies need writes at any position, which an
 * object store has not: they are files in a local scratch directory (as Nextcloud's object-store
 * mode keeps its chunks), uploaded as one object when they are adopted.
 *
 * Any failure to reach the store, or a refusal of the site's credentials, is a
 * StorageUnavailableError naming the resource; a key the store does not hold, a KeyMissingError.
 */
export class S3Driver implements StorageDriver {
  private readonly client: S3Client;
  private readonly agent: http.Agent;
  readonly drafts: S3Drafts;
  readonly copies: S3Drafts;

  constructor(
    readonly name: string,
    private readonly settings: S3ResourceSettings,
    credentials: S3Credentials,
    /** A local directory for drafts (upload sessions, the mover's partial copies). */
    scratch: string,
  ) {
    // The SDK warns once per process that its releases after January 2027 need Node 22; the site's
    // requirement is documented (docs/storage.md), not repeated in every site's log.
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const secure = settings.endpoint.startsWith('https:');
    this.agent = secure
      ? new https.Agent({ keepAlive: true, maxSockets: 128 })
      : new http.Agent({ keepAlive: true, maxSockets: 128 });
    this.client = new S3Client({
      endpoint: settings.endpoint,
      region: settings.region,
      forcePathStyle: settings.forcePathStyle,
      credentials: credentials.reveal(),
      // The site hashes every byte with SHA-256 itself; the SDK's extra CRC32 on each request and
      // answer would be a second pass over the same bytes.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
      maxAttempts: 2,
      requestHandler: new NodeHttpHandler({
        connectionTimeout: CONNECT_TIMEOUT_MS,
        socketTimeout: SOCKET_TIMEOUT_MS,
        ...(secure ? { httpsAgent: this.agent as https.Agent } : { httpAgent: this.agent }),
      }),
    });
    this.drafts = new S3Drafts(this, path.join(scratch, '.uploads'));
    this.copies = new S3Drafts(this, path.join(scratch, '.copies'));
  }

  /** Where the resource is, for messages and the catalog (no secrets). */
  describe(): string {
    return `s3 ${this.settings.endpoint}/${this.settings.bucket}/${this.settings.prefix}`;
  }

  async init(): Promise<void> {
    await fs.mkdir(this.drafts.dir, { recursive: true });
    await fs.mkdir(this.copies.dir, { recursive: true });
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.settings.bucket }));
    } catch (err) {
      if (!(this.settings.createBucket && statusOf(err) === 404)) throw this.failure(err);
      await this.client
        .send(new CreateBucketCommand({ Bucket: this.settings.bucket }))
        .catch((e: unknown) => {
          // Another site sharing the bucket may have made it meanwhile.
          const made = e instanceof S3ServiceException && /^BucketAlready(OwnedByYou|Exists)$/.test(e.name);
          if (!made) throw this.failure(e);
        });
    }
    await this.abortUnfinished();
  }

  /**
   * Aborts every multipart upload under the prefix that a crash or a failure left unfinished: all at
   * start, and those begun before `before` when the store answers again after failing (their
   * uploads broke off with it; ones begun since are running).
   */
  async abortUnfinished(before?: Date): Promise<number> {
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    for (;;) {
      const page = await this.client
        .send(
          new ListMultipartUploadsCommand({
            Bucket: this.settings.bucket,
            Prefix: this.settings.prefix || undefined,
            KeyMarker: keyMarker,
            UploadIdMarker: uploadIdMarker,
          }),
        )
        .catch((err: unknown) => {
          throw this.failure(err);
        });
      for (const u of page.Uploads ?? []) {
        if (!u.Key || !u.UploadId) continue;
        if (before && (!u.Initiated || u.Initiated >= before)) continue;
        await this.client
          .send(
            new AbortMultipartUploadCommand({
              Bucket: this.settings.bucket,
              Key: u.Key,
              UploadId: u.UploadId,
            }),
          )
          .then(() => aborted++)
          .catch(() => undefined);
      }
      if (!page.IsTruncated) return aborted;
      keyMarker = page.NextKeyMarker;
      uploadIdMarker = page.NextUploadIdMarker;
      if (!keyMarker && !uploadIdMarker) return aborted;
    }
  }

  objectName(key: string): string {
    if (!NAME.test(key) || key.startsWith('.')) throw new Error(`invalid storage key "${key}"`);
    return this.settings.prefix + key;
  }

  async stage(
    source: Readable,
    limits: { maxBytes: number; expectedBytes?: number; key?: string },
  ): Promise<StagedFile> {
    const key = limits.key ?? randomUUID();
    const hash = createHash('sha256');
    let size = 0;
    let refused: StagingError | undefined;
    let sourceFailed = false;
    const inspect = new Transform({
      highWaterMark: MiB,
      transform(piece: Buffer, _encoding, done) {
        size += piece.length;
        if (size > limits.maxBytes) {
          refused = new StagingError('too-large', `the upload exceeds the limit of ${limits.maxBytes} bytes`);
          done(refused);
          return;
        }
        hash.update(piece);
        done(null, piece);
      },
    });
    // The sender breaking off (an error, or a close before the end) is an incomplete upload; the
    // store failing is not the sender's doing (the rest of the body is then left unread).
    const senderFailed = (): void => {
      if (refused || sourceFailed) return;
      sourceFailed = true;
      inspect.destroy(new StagingError('incomplete', 'the upload was interrupted before all bytes arrived'));
    };
    source.once('error', senderFailed);
    source.once('close', () => {
      if (!source.readableEnded) senderFailed();
    });
    source.pipe(inspect);
    try {
      await this.upload(key, inspect);
    } catch (err) {
      await this.removeQuietly(key);
      if (refused) throw refused;
      if (sourceFailed)
        throw new StagingError('incomplete', 'the upload was interrupted before all bytes arrived');
      throw this.failure(err);
    }
    if (limits.expectedBytes !== undefined && size !== limits.expectedBytes) {
      await this.removeQuietly(key);
      throw new StagingError(
        'incomplete',
        `received ${size} bytes, but Content-Length said ${limits.expectedBytes}`,
      );
    }
    return this.staged(key, size, hash.digest('hex'), () => this.open(key));
  }

  /**
   * Sends `body` as the object `key`: one PUT when it fits in a part, else a multipart upload with
   * parts in parallel (aborted, parts and all, if anything fails).
   */
  async upload(key: string, body: Readable): Promise<void> {
    const partSize = this.settings.partSizeMiB * MiB;
    const upload = new Upload({
      client: this.client,
      params: {
        Bucket: this.settings.bucket,
        Key: this.objectName(key),
        // No ContentLength from what a client announced: a body that falls short would leave the
        // store waiting for the rest. Bodies smaller than a part are gathered and sent with theirs.
        Body: body,
      },
      partSize,
      queueSize: this.settings.partsInParallel,
      leavePartsOnError: false,
    });
    await upload.done();
  }

  async stageAll(bodies: readonly Buffer[]): Promise<StagedFile[]> {
    const keys = bodies.map(() => randomUUID());
    const written: string[] = [];
    try {
      for (let at = 0; at < bodies.length; at += STAGE_ALL_PUTS) {
        await Promise.all(
          bodies.slice(at, at + STAGE_ALL_PUTS).map(async (body, i) => {
            const key = keys[at + i]!;
            written.push(key);
            await this.client.send(
              new PutObjectCommand({
                Bucket: this.settings.bucket,
                Key: this.objectName(key),
                Body: body,
                ContentLength: body.length,
              }),
            );
          }),
        );
      }
    } catch (err) {
      await Promise.all(written.map((k) => this.removeQuietly(k)));
      throw this.failure(err);
    }
    return bodies.map((body, i) =>
      this.staged(keys[i]!, body.length, createHash('sha256').update(body).digest('hex'), () =>
        Readable.from([body]),
      ),
    );
  }

  /** Bytes already under `stagedKey` in the store, as a StagedFile. */
  private staged(stagedKey: string, size: number, sha256: string, open: () => Readable): StagedFile {
    let committed: string | undefined;
    return {
      size,
      sha256,
      key: stagedKey,
      open,
      commit: async (key) => {
        if (key !== stagedKey) await this.moveObject(stagedKey, key);
        committed = key;
      },
      discard: async () => {
        if (committed === undefined) await this.removeQuietly(stagedKey);
      },
    };
  }

  /** Puts the bytes of `from` under `to` (a copy in the store) and removes `from`. */
  async moveObject(from: string, to: string): Promise<void> {
    await this.copyObject(from, to);
    await this.removeQuietly(from);
  }

  private async copyObject(from: string, to: string): Promise<void> {
    try {
      await this.client.send(
        new CopyObjectCommand({
          Bucket: this.settings.bucket,
          Key: this.objectName(to),
          CopySource: `${this.settings.bucket}/${encodeURIComponent(this.objectName(from))}`,
        }),
      );
    } catch (err) {
      throw this.failure(err, from);
    }
  }

  /** The GET of `[start, end]` (inclusive) or the whole object, its answer's headers received. */
  private async get(key: string, range?: { start: number; end: number }): Promise<GetObjectCommandOutput> {
    try {
      return await this.client.send(
        new GetObjectCommand({
          Bucket: this.settings.bucket,
          Key: this.objectName(key),
          Range: range ? `bytes=${range.start}-${range.end}` : undefined,
        }),
      );
    } catch (err) {
      throw this.failure(err, key);
    }
  }

  open(key: string, range?: { start: number; end: number }): Readable {
    return Readable.from(this.bytesOf(key, range), { objectMode: false, highWaterMark: MiB });
  }

  private async *bytesOf(key: string, range?: { start: number; end: number }): AsyncGenerator<Buffer> {
    const answer = await this.get(key, range);
    try {
      for await (const piece of answer.Body as Readable) yield piece as Buffer;
    } catch (err) {
      throw this.failure(err, key);
    }
  }

  async readSmall(key: string, maxBytes: number): Promise<Buffer> {
    const answer = await this.get(key);
    const body = answer.Body as Readable;
    const size = answer.ContentLength ?? 0;
    if (size > maxBytes) {
      body.destroy();
      throw new ObjectTooLargeError(key, size);
    }
    const pieces: Buffer[] = [];
    try {
      for await (const piece of body) pieces.push(piece as Buffer);
    } catch (err) {
      throw this.failure(err, key);
    }
    return Buffer.concat(pieces);
  }

  async send(key: string, range: { start: number; end: number } | undefined, out: Writable): Promise<number> {
    return (await this.prepareSend(key, range)).sendTo(out);
  }

  /**
   * Asks the store for the bytes and resolves once its answer's headers are in, so an unreachable
   * store is an error before anything is sent to the receiver; `sendTo` then streams them.
   */
  async prepareSend(
    key: string,
    range: { start: number; end: number } | undefined,
  ): Promise<{ sendTo(out: Writable): Promise<number> }> {
    const answer = await this.get(key, range);
    const body = answer.Body as Readable;
    return { sendTo: (out) => this.pump(body, out, key) };
  }

  /** Writes `body` to `out` (left open) in 1 MiB writes; resolves with the bytes sent. */
  private async pump(body: Readable, out: Writable, key: string): Promise<number> {
    // A receiver that goes away stops the store's answer at once.
    let gone = false;
    const stop = (): void => {
      gone = true;
      body.destroy();
    };
    out.once('close', stop);
    try {
      return await sendStream(body as AsyncIterable<Buffer>, out);
    } catch (err) {
      body.destroy();
      // The receiver's leaving is not the store's failure.
      if (gone || (err instanceof Error && err.message === 'the receiver went away'))
        throw new Error('the receiver went away');
      throw this.failure(err, key);
    } finally {
      out.off('close', stop);
    }
  }

  async remove(key: string): Promise<void> {
    try {
      await this.client.send(
        new DeleteObjectCommand({ Bucket: this.settings.bucket, Key: this.objectName(key) }),
      );
    } catch (err) {
      if (statusOf(err) === 404) return;
      throw this.failure(err, key);
    }
  }

  private async removeQuietly(key: string): Promise<void> {
    await this.remove(key).catch(() => undefined);
  }

  async check(): Promise<ResourceHealth> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.settings.bucket }), {
        abortSignal: AbortSignal.timeout(CHECK_TIMEOUT_MS),
      });
      return { status: 'ok' };
    } catch (err) {
      const failure = this.failure(err);
      return {
        status: 'failing',
        error: failure instanceof StorageUnavailableError ? failure.reason : failure.message,
      };
    }
  }

  close(): Promise<void> {
    this.client.destroy();
    this.agent.destroy();
    return Promise.resolve();
  }

  /** Any failure of the store as the error the site acts on. */
  failure(err: unknown, key?: string): Error {
    if (err instanceof StorageUnavailableError || err instanceof KeyMissingError) return err;
    if (err instanceof StagingError || err instanceof ObjectTooLargeError) return err;
    const status = statusOf(err);
    const name = err instanceof Error ? err.name : '';
    if (key !== undefined && (status === 404 || name === 'NoSuchKey')) return new KeyMissingError(key);
    return new StorageUnavailableError(this.name, reasonOf(err, status, name));
  }
}

function statusOf(err: unknown): number | undefined {
  const meta = (err as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata;
  return meta?.httpStatusCode;
}

const CREDENTIAL_REFUSALS = new Set([
  'InvalidAccessKeyId',
  'SignatureDoesNotMatch',
  'AccessDenied',
  'InvalidToken',
  'ExpiredToken',
]);

/** Why the store failed, in words (no endpoint, no keys). */
function reasonOf(err: unknown, status: number | undefined, name: string): string {
  if (CREDENTIAL_REFUSALS.has(name) || status === 403 || status === 401)
    return "the store refused the site's credentials";
  const code = (err as { code?: string } | null)?.code;
  if (code === 'ECONNREFUSED' || code === 'ECONNRESET' || code === 'EHOSTUNREACH' || code === 'ENOTFOUND')
    return `the store does not answer (${code})`;
  if (name === 'TimeoutError' || name === 'AbortError' || code === 'ETIMEDOUT')
    return 'the store did not answer in time';
  if (status !== undefined) return `the store answered ${status}${name ? ` (${name})` : ''}`;
  return `the store could not be reached (${name || (err instanceof Error ? err.message : String(err))})`;
}

/**
 * Drafts as local files (writes at any position need a file), uploaded to the store as one object
 * when adopted. The draft stays until its owner removes it, so a commit the catalog refuses
 * (`discard` after `commit`) leaves it as it was.
 */
export class S3Drafts extends ForwardingDrafts {
  constructor(
    private readonly driver: S3Driver,
    readonly dir: string,
  ) {
    super(new LocalDrafts(dir, () => Promise.reject(new Error('an s3 draft is never renamed into place'))));
  }

  async adopt(id: string, measured: { size: number; sha256: string }): Promise<StagedFile> {
    if (!(await this.inner.exists(id))) throw new DraftGoneError(id);
    const file = path.join(this.dir, id);
    const { size } = await fs.stat(file);
    if (size !== measured.size)
      throw new StagingError('incomplete', `the file holds ${size} bytes, not the ${measured.size} expected`);
    const key = randomUUID();
    try {
      await this.driver.upload(key, createReadStream(file, { highWaterMark: MiB }));
    } catch (err) {
      await this.driver.remove(key).catch(() => undefined);
      throw this.driver.failure(err);
    }
    let committed: string | undefined;
    return {
      size: measured.size,
      sha256: measured.sha256,
      key,
      open: () => createReadStream(file),
      commit: async (target) => {
        if (target !== key) await this.driver.moveObject(key, target);
        committed = target;
      },
      discard: async () => {
        await this.driver.remove(committed ?? key).catch(() => undefined);
        committed = undefined;
      },
    };
  }
}
