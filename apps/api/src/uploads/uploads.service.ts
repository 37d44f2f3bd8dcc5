import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import { createHash, randomUUID, type Hash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import type { Readable } from 'node:stream';
import {
  ByteRangeSet,
  ErrorCode,
  splitPath,
  type CompleteUpload,
  type CreateUploadRequest,
  type EntryDto,
  type UploadSessionDto,
} from '@tributary/shared';
import { AccessService, levelAtLeast } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { IngestService } from '../data/ingest.service';
import { ReadService, type ByteSource } from '../data/read.service';
import { NamespaceService } from '../namespace/namespace.service';
import { DraftGoneError } from '../storage/storage-driver';
import { StorageService } from '../storage/storage.service';
import { UploadsRepository, type UploadSessionRecord } from './uploads.repository';

/** How long a session may sit between chunks before it is swept. */
export const UPLOAD_SESSION_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a chunk that arrived ahead of its predecessor waits for it. */
const CHUNK_WAIT_MS = 10_000;

export interface ChunkOptions {
  offset: number;
  contentLength?: number;
  /** Lower-case hex SHA-256 of the chunk, from `X-Chunk-Sha256`. */
  sha256?: string;
  /** Lower-case hex SHA-256 of the session's bytes through this chunk, from `X-Prefix-Sha256`. */
  prefixSha256?: string;
}

class ChunkTooLarge extends Error {}
class PartOverlaps extends Error {}

/** Written past a partial update's base (1 MiB at a time). */
const ZEROS = new Uint8Array(1024 * 1024);
const PREFIX_SHA256 = 'x-prefix-sha256';

function rangeInvalid(start: number, end: number, size: number): DomainError {
  return new DomainError(
    ErrorCode.UploadRangeInvalid,
    `the part [${start}, ${end}) goes past the new size of ${size} bytes declared for this update`,
    { offset: [String(start)] },
  );
}

function rangeOverlap(start: number, end: number, session: UploadSessionRecord): DomainError {
  return new DomainError(
    ErrorCode.UploadRangeOverlap,
    `the part [${start}, ${end}) overlaps bytes this session already received; each range is sent once (see ranges)`,
    { ranges: (session.ranges ?? []).map(([s, e]) => `${s}-${e}`) },
  );
}

/**
 * Resumable uploads: a session collects an object's bytes in order, chunk by chunk, in a draft of
 * its own in storage (named by the session's id), hashing them as they arrive; `complete` hands
 * that draft to the ordinary upload path (`IngestService.uploadDraft`), which checks the expected
 * SHA-256 and commits object and bytes together, in place rather than copied.
 * Sessions belong to the user who opened them; another user sees 404.
 */
@Injectable()
export class UploadsService implements OnModuleInit {
  /** Sessions with a chunk or a completion in progress in this process. */
  private readonly busy = new Set<string>();
  /** Emits a session's id whenever a request on it ends. */
  private readonly progress = new EventEmitter().setMaxListeners(0);
  /**
   * SHA-256 of each session's bytes so far, for sessions whose every byte this process received
   * (after a restart, or if another process served a chunk, completing hashes the draft instead).
   */
  private readonly hashes = new Map<string, { received: bigint; hash: Hash }>();

  constructor(
    private readonly repo: UploadsRepository,
    private readonly ingest: IngestService,
    private readonly reads: ReadService,
    private readonly storage: StorageService,
    private readonly namespace: NamespaceService,
    private readonly access: AccessService,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {}

  async onModuleInit(): Promise<void> {
    // Drafts without a session row are leftovers of a crash between creating one and the other.
    const drafts = await this.storage.drafts.list();
    const live = await this.repo.existing(drafts);
    for (const id of drafts) if (!live.has(id)) await this.storage.drafts.remove(id);
  }

  async create(principal: Principal, request: CreateUploadRequest): Promise<UploadSessionDto> {
    const target = request.path;
    const overwrite = request.overwrite ?? false;
    this.access.assertWithinToken(principal, target);
    if (request.size !== undefined && request.size > this.config.maxUploadBytes) {
      throw new DomainError(
        ErrorCode.PayloadTooLarge,
        `the upload exceeds the limit of ${this.config.maxUploadBytes} bytes`,
      );
    }
    const base = request.base;
    if (base && request.size === undefined) {
      throw new DomainError(ErrorCode.ValidationFailed, 'a partial update needs the new size', {
        size: ['is required with base'],
      });
    }
    await this.checkCanUpload(principal, target, overwrite || base !== undefined);
    const object = base ? (await this.reads.openBase(principal, target, base)).object : undefined;
    await this.sweep();
    const id = randomUUID();
    await this.storage.drafts.create(id);
    try {
      const session = await this.repo.create({
        id,
        userId: principal.userId,
        path: target,
        size: request.size === undefined ? null : BigInt(request.size),
        sha256: request.sha256 ?? null,
        overwrite: overwrite || base !== undefined,
        contentType: request.contentType ?? object?.contentType ?? 'application/octet-stream',
        baseVersion: base?.version ?? null,
        baseChecksum: base?.sha256 ?? null,
        ranges: base ? [] : null,
        expiresAt: new Date(Date.now() + UPLOAD_SESSION_TTL_MS),
      });
      return toDto(session);
    } catch (err) {
      await this.storage.drafts.remove(id);
      throw err;
    }
  }

  async get(principal: Principal, id: string): Promise<UploadSessionDto> {
    return toDto(await this.load(principal, id));
  }

  /**
   * Appends one chunk at `offset`, which must be what the session has received so far. The chunk is
   * written straight after the bytes already held; if it is incomplete or its checksum differs, the
   * draft is cut back and the session stays where it was.
   */
  async appendChunk(
    principal: Principal,
    id: string,
    body: Readable,
    options: ChunkOptions,
  ): Promise<UploadSessionDto> {
    const first = await this.load(principal, id);
    if (first.ranges !== null) return this.writePart(principal, first, body, options);
    const session = await this.waitForTurn(principal, id, options.offset);
    const received = Number(session.received);
    if (options.offset !== received) {
      throw new DomainError(
        ErrorCode.UploadOffsetMismatch,
        `the session holds ${received} bytes; send the chunk that starts there`,
        { received: [String(received)] },
      );
    }
    const limit = session.size !== null ? Number(session.size) : this.config.maxUploadBytes;
    if (options.contentLength !== undefined && received + options.contentLength > limit) {
      throw this.tooLarge(session);
    }
    return this.exclusive(id, session, async () => {
      await this.cutBack(id, received);
      // The chunk's own hash only when it is asked for: each pass over the bytes costs CPU.
      const hash = options.sha256 !== undefined ? createHash('sha256') : undefined;
      // The whole object's hash goes on from the bytes before this chunk (a copy: the chunk may be
      // refused). Unknown after a restart: then a prefix checksum needs the bytes held hashed again.
      const running = this.hashes.get(id);
      const whole =
        running?.received === session.received
          ? running.hash.copy()
          : received === 0
            ? createHash('sha256')
            : options.prefixSha256 !== undefined
              ? await this.hashOfDraft(id, session.received)
              : undefined;
      let bytes = 0;
      try {
        await this.storage.drafts.write(id, body, {
          start: received,
          inspect: (piece) => {
            bytes += piece.length;
            if (received + bytes > limit) throw new ChunkTooLarge();
            hash?.update(piece);
            whole?.update(piece);
          },
        });
      } catch (err) {
        await this.storage.drafts.truncate(id, received);
        if (err instanceof ChunkTooLarge) throw this.tooLarge(session);
        throw new DomainError(
          ErrorCode.UploadIncomplete,
          'the chunk was interrupted before all bytes arrived',
        );
      }
      const failure =
        options.contentLength !== undefined && bytes !== options.contentLength
          ? new DomainError(
              ErrorCode.UploadIncomplete,
              `received ${bytes} bytes, but Content-Length said ${options.contentLength}`,
            )
          : hash && hash.digest('hex') !== options.sha256
            ? new DomainError(
                ErrorCode.ChecksumMismatch,
                `the chunk at offset ${received} does not hash to the X-Chunk-Sha256 sent; send it again`,
                { received: [String(received)] },
              )
            : options.prefixSha256 !== undefined && whole?.copy().digest('hex') !== options.prefixSha256
              ? new DomainError(
                  ErrorCode.ChecksumMismatch,
                  `the bytes through the chunk at offset ${received} do not hash to the X-Prefix-Sha256 sent; send it again`,
                  { received: [String(received)] },
                )
              : undefined;
      if (failure) {
        await this.storage.drafts.truncate(id, received);
        throw failure;
      }
      const now = session.received + BigInt(bytes);
      if (!(await this.repo.advance(id, session.received, now))) {
        this.hashes.delete(id);
        throw notFound(`upload session ${id}`);
      }
      if (whole) this.hashes.set(id, { received: now, hash: whole });
      else this.hashes.delete(id);
      return toDto({ ...session, received: now });
    });
  }

  /**
   * Commits the session's bytes as the object through the ordinary upload path, in place: the
   * SHA-256 measured as the chunks arrived is checked against the one the client declared (here
   * or at creation), then the session's draft is committed in place as the catalog records the
   * object. The session ends when the commit succeeds or when the bytes are found wrong (then
   * nothing is created); other failures (a name taken meanwhile, access lost) leave the session
   * and its bytes for another try.
   */
  async complete(principal: Principal, id: string, request: CompleteUpload): Promise<EntryDto> {
    const session = await this.load(principal, id);
    if (request.sha256 && session.sha256 && request.sha256 !== session.sha256) {
      throw new DomainError(
        ErrorCode.ChecksumMismatch,
        'the sha256 sent differs from the one given when the session was created',
      );
    }
    if (session.ranges !== null) return this.completePartial(principal, session, request);
    if (session.size !== null && session.received !== session.size) {
      throw new DomainError(
        ErrorCode.UploadIncomplete,
        `the session holds ${session.received} of ${session.size} bytes`,
        { received: [String(session.received)] },
      );
    }
    return this.exclusive(id, session, async () => {
      let entry: EntryDto;
      try {
        await this.cutBack(id, Number(session.received));
        const sha256 = await this.sha256Of(id, session.received);
        entry = await this.ingest.uploadDraft(
          principal,
          session.path,
          { id, size: Number(session.received), sha256 },
          {
            overwrite: session.overwrite,
            contentType: session.contentType,
            expectedSha256: request.sha256 ?? session.sha256 ?? undefined,
            mtimeNs: request.mtime,
            mode: request.mode,
          },
        );
      } catch (err) {
        if (err instanceof DomainError && err.code === ErrorCode.ChecksumMismatch) await this.end(id);
        throw err;
      }
      await this.end(id);
      return entry;
    });
  }

  /**
   * One part of a partial update: written into the session's draft at its offset, then recorded as
   * received. Parts may come in any order but must not overlap a range already received (409
   * UPLOAD_RANGE_OVERLAP; a client whose answer was lost finds its range in the session's
   * `ranges`). A part that fails (cut short, wrong checksum, past the size) is not recorded: the
   * bytes it left in the draft are never used, as completing takes only recorded ranges from it.
   */
  private async writePart(
    principal: Principal,
    session: UploadSessionRecord,
    body: Readable,
    options: ChunkOptions,
  ): Promise<UploadSessionDto> {
    const { id } = session;
    const size = Number(session.size);
    const offset = options.offset;
    if (options.prefixSha256 !== undefined) {
      throw new DomainError(
        ErrorCode.ValidationFailed,
        'X-Prefix-Sha256 is for uploads sent in order; send X-Chunk-Sha256 with a partial update',
        { [PREFIX_SHA256]: ['not accepted in a partial update'] },
      );
    }
    const declaredEnd = offset + (options.contentLength ?? 0);
    if (offset > size || declaredEnd > size) {
      throw rangeInvalid(offset, declaredEnd, size);
    }
    const held = new ByteRangeSet(session.ranges ?? []);
    if (options.contentLength !== undefined && held.overlaps(offset, declaredEnd)) {
      throw rangeOverlap(offset, declaredEnd, session);
    }
    return this.exclusive(id, session, async () => {
      const hash = options.sha256 !== undefined ? createHash('sha256') : undefined;
      let bytes = 0;
      try {
        await this.storage.drafts.write(id, body, {
          start: offset,
          inspect: (piece) => {
            const from = offset + bytes;
            bytes += piece.length;
            if (offset + bytes > size) throw new ChunkTooLarge();
            // Without a Content-Length the overlap shows only now, before a byte of it is written.
            if (held.overlaps(from, offset + bytes)) throw new PartOverlaps();
            hash?.update(piece);
          },
        });
      } catch (err) {
        if (err instanceof DraftGoneError) await this.cutBack(id, 0);
        if (err instanceof ChunkTooLarge) throw rangeInvalid(offset, offset + bytes, size);
        if (err instanceof PartOverlaps) throw rangeOverlap(offset, offset + bytes, session);
        throw new DomainError(
          ErrorCode.UploadIncomplete,
          'the part was interrupted before all bytes arrived; send it again',
        );
      }
      if (options.contentLength !== undefined && bytes !== options.contentLength) {
        throw new DomainError(
          ErrorCode.UploadIncomplete,
          `received ${bytes} bytes, but Content-Length said ${options.contentLength}`,
        );
      }
      if (hash && hash.digest('hex') !== options.sha256) {
        throw new DomainError(
          ErrorCode.ChecksumMismatch,
          `the part at offset ${offset} does not hash to the X-Chunk-Sha256 sent; send it again`,
        );
      }
      if (bytes === 0) return toDto(session);
      const recorded = await this.repo.recordRange(id, offset, offset + bytes);
      if (recorded === null) throw notFound(`upload session ${id}`);
      if (recorded === 'overlap') throw rangeOverlap(offset, offset + bytes, session);
      return toDto(recorded);
    });
  }

  /**
   * Completes a partial update: the base version's bytes fill what no part covered (zeros past the
   * base's end), the draft is cut to the new size, hashed, and committed through the ordinary
   * upload path as the object's next version, refused (409 UPLOAD_BASE_CHANGED, the session ends)
   * if the object moved past the base meanwhile. Nothing changes unless the commit succeeds.
   */
  private async completePartial(
    principal: Principal,
    session: UploadSessionRecord,
    request: CompleteUpload,
  ): Promise<EntryDto> {
    const { id } = session;
    const size = Number(session.size);
    const base = { version: session.baseVersion!, sha256: session.baseChecksum! };
    return this.exclusive(id, session, async () => {
      let entry: EntryDto;
      try {
        const { source } = await this.reads.openBase(principal, session.path, base);
        await this.ensureDraft(id);
        await this.compose(id, size, new ByteRangeSet(session.ranges ?? []), source);
        const sha256 = (await this.hashOfDraft(id, BigInt(size))).digest('hex');
        entry = await this.ingest.uploadDraft(
          principal,
          session.path,
          { id, size, sha256 },
          {
            overwrite: true,
            contentType: session.contentType,
            expectedSha256: request.sha256 ?? session.sha256 ?? undefined,
            expectedBase: base,
            mtimeNs: request.mtime,
            mode: request.mode,
          },
        );
      } catch (err) {
        if (
          err instanceof DomainError &&
          (err.code === ErrorCode.ChecksumMismatch || err.code === ErrorCode.UploadBaseChanged)
        )
          await this.end(id);
        throw err;
      }
      await this.end(id);
      return entry;
    });
  }

  /**
   * Fills the ranges of the session's draft no part covered with the base's bytes, read once in
   * order (from here or from the site holding them: its size is known only once read), and zeros
   * past the base's end (written out: a part that failed may have left bytes there); then cuts the
   * draft to `size`.
   */
  private async compose(id: string, size: number, received: ByteRangeSet, source: ByteSource): Promise<void> {
    const gaps = received.gaps(0, size);
    const handle = await this.storage.drafts.open(id);
    try {
      let baseSize = 0;
      if (gaps.length > 0) {
        const stream = await this.reads.read(source);
        let next = 0;
        for await (const piece of stream as AsyncIterable<Buffer>) {
          const start = baseSize;
          const end = start + piece.length;
          baseSize = end;
          while (next < gaps.length && gaps[next]![1] <= start) next++;
          for (let g = next; g < gaps.length && gaps[g]![0] < end; g++) {
            const from = Math.max(start, gaps[g]![0]);
            const to = Math.min(end, gaps[g]![1]);
            await handle.write(piece, from - start, to - from, from);
          }
          // Nothing past the new size is needed.
          if (end >= size) break;
        }
      }
      for (const [start, end] of gaps) {
        for (let at = Math.max(start, baseSize); at < end; at += ZEROS.length) {
          await handle.write(ZEROS, 0, Math.min(ZEROS.length, end - at), at);
        }
      }
      await handle.truncate(size);
    } finally {
      await handle.close();
    }
  }

  /** A session whose draft is gone (the site stopped half way through committing it) ends: 410. */
  private async ensureDraft(id: string): Promise<void> {
    if (!(await this.storage.drafts.exists(id))) await this.cutBack(id, 0);
  }

  /**
   * Cuts the session's draft back to what it has received (bytes past that are leftovers of an
   * interrupted chunk). A session whose draft is gone (the site stopped half way through
   * committing it) ends: 410, start again.
   */
  private async cutBack(id: string, received: number): Promise<void> {
    try {
      await this.storage.drafts.truncate(id, received);
    } catch (err) {
      if (!(err instanceof DraftGoneError)) throw err;
      await this.end(id);
      throw new DomainError(
        ErrorCode.UploadExpired,
        `the bytes of upload session ${id} are gone; start a new upload`,
      );
    }
  }

  /** The SHA-256 of the session's bytes: measured as they arrived, or else read from its draft. */
  private async sha256Of(id: string, received: bigint): Promise<string> {
    const running = this.hashes.get(id);
    // A copy: the hash must survive a commit that fails and is tried again.
    if (running?.received === received) return running.hash.copy().digest('hex');
    return (await this.hashOfDraft(id, received)).digest('hex');
  }

  /** A running SHA-256 of the first `received` bytes of the session's draft, read back from storage. */
  private async hashOfDraft(id: string, received: bigint): Promise<Hash> {
    const hash = createHash('sha256');
    if (received > 0n) {
      for await (const chunk of this.storage.drafts.read(id, { start: 0, end: Number(received) - 1 }))
        hash.update(chunk as Buffer);
    }
    return hash;
  }

  async abort(principal: Principal, id: string): Promise<void> {
    const session = await this.load(principal, id);
    if (this.busy.has(id)) throw this.busyError(session);
    await this.end(id);
  }

  /** The caller's live session, or 404 (also for someone else's); an expired one is removed (410). */
  private async load(principal: Principal, id: string): Promise<UploadSessionRecord> {
    const session = await this.repo.find(id);
    if (!session || session.userId !== principal.userId) throw notFound(`upload session ${id}`);
    if (session.expiresAt.getTime() <= Date.now()) {
      if (!this.busy.has(id)) await this.end(id);
      throw new DomainError(ErrorCode.UploadExpired, `upload session ${id} has expired; start a new one`);
    }
    this.access.assertWithinToken(principal, session.path);
    return session;
  }

  /** The same checks as an upload makes, early, so a session is not filled in vain. */
  private async checkCanUpload(principal: Principal, target: string, overwrite: boolean): Promise<void> {
    if (target === '/') {
      throw new DomainError(
        ErrorCode.NameTaken,
        'the root is a collection; upload into it, e.g. /home/<you>/file',
      );
    }
    const { parent } = splitPath(target);
    const parentEntry = await this.namespace.resolve(parent);
    const existing = parentEntry?.kind === 'collection' ? await this.namespace.resolve(target) : null;
    const parentLevel = await this.access.levelOf(principal, { path: parent, kind: 'collection' });
    // What a collection holds (or whether it exists) is not revealed to someone who may not read it,
    // unless they may read the object at `target` itself (granted to them directly).
    if (
      !levelAtLeast(parentLevel, 'read') &&
      (parentEntry?.kind === 'collection' || !(await this.access.canSee(principal, target)))
    ) {
      const held =
        existing?.kind === 'object'
          ? await this.access.levelOf(principal, { path: target, kind: 'object', objectId: existing.id })
          : null;
      if (!levelAtLeast(held, 'read')) throw this.access.concealed(target, 'write');
    }
    if (!parentEntry)
      throw notFound(`collection ${parent} (create it first: POST /api/v1/namespace/collections)`);
    if (parentEntry.kind !== 'collection')
      throw new DomainError(ErrorCode.NotACollection, `${parent} is a data object`);
    if (existing?.kind === 'collection')
      throw new DomainError(ErrorCode.NameTaken, `${target} is a collection`);
    if (existing?.kind === 'object') {
      if (!overwrite) {
        throw new DomainError(
          ErrorCode.NameTaken,
          `${target} exists; add "overwrite": true to replace its bytes`,
        );
      }
      await this.access.require(principal, { path: target, kind: 'object', objectId: existing.id }, 'write');
      if (existing.linkTarget !== null) {
        throw new DomainError(
          ErrorCode.IsASymlink,
          `${target} is a symbolic link: it has no bytes to replace; remove the link first to upload there`,
        );
      }
      return;
    }
    await this.access.require(principal, { path: parent, kind: 'collection' }, 'write');
  }

  /**
   * The session once a chunk at `offset` may be written: a client may send the next chunk before
   * the previous one is acknowledged (to hide the round trip), so a chunk that starts past what
   * the session holds waits up to CHUNK_WAIT_MS for the earlier ones, then answers 409.
   */
  private async waitForTurn(principal: Principal, id: string, offset: number): Promise<UploadSessionRecord> {
    const deadline = Date.now() + CHUNK_WAIT_MS;
    for (;;) {
      const session = await this.load(principal, id);
      const received = Number(session.received);
      const waiting = offset > received || (offset === received && this.busy.has(id));
      if (!waiting || Date.now() >= deadline) return session;
      await new Promise<void>((resolve) => {
        const done = (): void => {
          clearTimeout(timer);
          this.progress.off(id, done);
          resolve();
        };
        // Woken by the end of a request on this session; the timer re-checks the catalog
        // (another process may serve the session).
        const timer = setTimeout(done, Math.max(1, Math.min(250, deadline - Date.now())));
        this.progress.on(id, done);
      });
    }
  }

  /** Runs `op` as the only writer of the session in this process; wakes chunks waiting their turn. */
  private async exclusive<T>(id: string, session: UploadSessionRecord, op: () => Promise<T>): Promise<T> {
    if (this.busy.has(id)) throw this.busyError(session);
    this.busy.add(id);
    try {
      return await op();
    } finally {
      this.busy.delete(id);
      this.progress.emit(id);
    }
  }

  private busyError(session: UploadSessionRecord): DomainError {
    return new DomainError(
      ErrorCode.UploadOffsetMismatch,
      'another request is writing to this upload session; wait for it, then ask for the session',
      { received: [String(session.received)] },
    );
  }

  private tooLarge(session: UploadSessionRecord): DomainError {
    return new DomainError(
      ErrorCode.PayloadTooLarge,
      session.size !== null
        ? `the chunk goes past the ${session.size} bytes declared for this upload`
        : `the upload exceeds the limit of ${this.config.maxUploadBytes} bytes`,
    );
  }

  private async end(id: string): Promise<void> {
    this.hashes.delete(id);
    await this.repo.delete(id);
    await this.storage.drafts.remove(id);
  }

  private async sweep(): Promise<void> {
    for (const id of await this.repo.deleteExpired(new Date())) {
      this.hashes.delete(id);
      if (!this.busy.has(id)) await this.storage.drafts.remove(id);
    }
  }
}

function toDto(session: UploadSessionRecord): UploadSessionDto {
  return {
    id: session.id,
    path: session.path,
    size: session.size === null ? null : Number(session.size),
    received: Number(session.received),
    sha256: session.sha256,
    overwrite: session.overwrite,
    contentType: session.contentType,
    base:
      session.baseVersion !== null && session.baseChecksum !== null
        ? { version: session.baseVersion, sha256: session.baseChecksum }
        : null,
    ranges: session.ranges?.map(([s, e]) => [s, e]) ?? null,
    expiresAt: session.expiresAt.toISOString(),
    createdAt: session.createdAt.toISOString(),
  };
}
