import { Inject, Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { ErrorCode, joinPath, normalizeName, splitPath, type EntryDto } from '@tributary/shared';
import { PeerRequestError } from '@tributary/replication';
import type { IncomingMessage } from 'node:http';
import { Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { AccessService, levelAtLeast } from '../access/access.service';
import { relayPeerRefusal } from '../common/peer-refusal';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { MetricsRegistry } from '../health/metrics';
import { toEntryDto } from '../namespace/namespace.mapper';
import {
  NamespaceRepository,
  type CollectionRecord,
  type ObjectRecord,
} from '../namespace/namespace.repository';
import { entryTarget, NamespaceService } from '../namespace/namespace.service';
import { ReplicationService } from '../replication/replication.service';
import { SiteContext } from '../sites/site-context';
import { DataRepository, type UpdateWindowHolder, type WrittenAttributes } from './data.repository';
import { forwardedUpdatePath, type ForwardedUpdate } from './forwarded-update';
import { IngestRepository, type InsertedObject } from './ingest.repository';
import { forEachFilePart, MultipartError } from './multipart';
import { StagingError, type StagedFile } from './storage-driver';
import { StorageService } from './storage.service';

export interface UploadOptions {
  overwrite: boolean;
  contentLength?: number;
  contentType?: string;
  /** Hex SHA-256 the client expects; a mismatch rejects the upload. */
  expectedSha256?: string;
  /**
   * For a new version made from an existing one (a partial update): the version and SHA-256 (hex)
   * it was made from. If the object is at another version when the update commits, it is refused
   * (409 UPLOAD_BASE_CHANGED) and nothing changes.
   */
  expectedBase?: { version: number; sha256: string };
  /** The object's file time with these bytes; absent: now. */
  mtimeNs?: bigint;
  /** The object's permission bits with these bytes; absent: unchanged (0o644 for a new object). */
  mode?: number;
}

/** A file this site already holds inside its storage root, with its size and SHA-256 as measured. */
export interface MeasuredFile {
  path: string;
  size: number;
  sha256: string;
}

/** Where an upload's bytes come from: a request body, streamed to staging, or a file already here. */
type UploadSource = { body: Readable } | { file: MeasuredFile };

/** Most objects one batch upload may create. */
export const MAX_BATCH_FILES = 10_000;

/** Most objects, and most bytes together, one batch read may return. */
export const MAX_BATCH_READ_OBJECTS = 1000;
export const MAX_BATCH_READ_BYTES = 256 * 1024 * 1024;

/** Storage key of one version of an object's bytes at this site. */
const storageKey = (objectId: bigint, version: number): string => `${objectId}.v${version}`;

/** Where an object's bytes are read from: a key in this site's storage, or a peer site. */
export type ByteSource =
  { kind: 'local'; key: string } | { kind: 'remote'; siteId: string; objectId: bigint };

/** An object's bytes, opened and ready to be sent to one receiver. */
export interface ObjectBytes {
  /** Writes the bytes to `out`, leaving it open; resolves with the number of bytes sent. */
  sendTo(out: Writable): Promise<number>;
}

/** A peer's route to the bytes of an object it holds (see PeerDataController). */
export const PEER_OBJECT_PATH = '/api/v1/replication/peer/objects';

@Injectable()
export class DataService {
  constructor(
    private readonly namespace: NamespaceService,
    private readonly namespaceRepo: NamespaceRepository,
    private readonly repo: DataRepository,
    private readonly ingest: IngestRepository,
    private readonly storage: StorageService,
    private readonly access: AccessService,
    private readonly site: SiteContext,
    private readonly metrics: MetricsRegistry,
    private readonly replication: ReplicationService,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
  ) {
    // Update windows closed a cycle ago; rows older than an hour only take room.
    replication.afterCycle((report) => {
      void this.repo
        .pruneUpdateWindows(new Date(report.startedAt.getTime() - 3600_000))
        .catch(() => undefined);
    });
  }

  /**
   * Streams the body to staging (hashing as it goes), then in one transaction records the object
   * and renames the bytes into place. Any failure before the commit leaves no object and no file.
   */
  upload(principal: Principal, path: string, body: Readable, options: UploadOptions): Promise<EntryDto> {
    return this.ingestBytes(principal, path, { body }, options);
  }

  /**
   * The same as `upload` for bytes the site already holds in a file inside its storage root (an
   * upload session's), measured as they arrived: the file is renamed into place instead of being
   * copied. `options.expectedSha256` is checked against the measured SHA-256 before anything
   * changes; if the upload is refused, the file is left where it was.
   */
  uploadFile(
    principal: Principal,
    path: string,
    file: MeasuredFile,
    options: UploadOptions,
  ): Promise<EntryDto> {
    return this.ingestBytes(principal, path, { file }, options);
  }

  private async ingestBytes(
    principal: Principal,
    path: string,
    source: UploadSource,
    options: UploadOptions,
  ): Promise<EntryDto> {
    this.access.assertWithinToken(principal, path);
    if (path === '/') {
      throw new DomainError(
        ErrorCode.NameTaken,
        'the root is a collection; upload into it, e.g. /home/<you>/file',
      );
    }
    const { parent, name } = splitPath(path);
    const target = await this.ingest.target(parent, name);
    // What a collection holds (or whether it exists) is not revealed to someone who may not read it,
    // unless they may read the object at `path` itself (granted to them directly).
    const parentLevel = await this.access.levelOf(principal, { path: parent, kind: 'collection' });
    if (!levelAtLeast(parentLevel, 'read') && (target || !(await this.access.canSee(principal, path)))) {
      const existing = target?.existing === 'object' ? await this.namespace.resolve(path) : null;
      const held =
        existing?.kind === 'object'
          ? await this.access.levelOf(principal, { path, kind: 'object', objectId: existing.id })
          : null;
      if (!levelAtLeast(held, 'read')) throw this.access.concealed(path, 'write');
    }
    if (!target) {
      const entry = await this.namespace.resolve(parent);
      if (entry?.kind === 'object')
        throw new DomainError(ErrorCode.NotACollection, `${parent} is a data object`);
      throw notFound(`collection ${parent} (create it first: POST /api/v1/namespace/collections)`);
    }
    if (target.existing === 'collection') {
      throw new DomainError(ErrorCode.NameTaken, `${path} is a collection`);
    }
    if (target.existing === 'object') {
      if (!options.overwrite) {
        throw new DomainError(ErrorCode.NameTaken, `${path} exists; add overwrite=true to replace its bytes`);
      }
      return this.overwrite(principal, path, source, options);
    }
    if (options.expectedBase) {
      throw new DomainError(
        ErrorCode.UploadBaseChanged,
        `${path} was deleted meanwhile; there is no version to apply the changes to`,
      );
    }
    if (!levelAtLeast(parentLevel, 'write')) {
      await this.access.require(principal, { path: parent, kind: 'collection' }, 'write');
    }
    const staged = await this.stage(source, options);
    const bytes = {
      size: BigInt(staged.size),
      checksum: staged.sha256,
      contentType: options.contentType ?? 'application/octet-stream',
    };
    // The bytes go under a fresh key first; they are unreachable until the catalog row commits.
    const key = randomUUID();
    let outcome: InsertedObject | 'name-taken' | 'parent-gone' | null = null;
    try {
      await staged.commit(key);
      outcome = await this.ingest.insert(
        {
          ...bytes,
          collectionId: target.collectionId,
          name,
          ownerId: principal.userId,
          groupId: principal.activeGroupId,
          mtimeNs: options.mtimeNs,
          mode: options.mode,
        },
        { siteId: this.site.siteId, resourceId: this.site.resourceId, key },
      );
    } finally {
      if (outcome === null || typeof outcome === 'string') await this.abandon(staged, key);
    }
    if (outcome === 'parent-gone') throw notFound(`collection ${parent} (it was deleted meanwhile)`);
    if (outcome === 'name-taken') {
      throw new DomainError(ErrorCode.NameTaken, `${path} was just created by someone else`);
    }
    const inserted = outcome;
    this.metrics.bytesIn.inc(staged.size);
    const object: ObjectRecord = {
      kind: 'object',
      id: inserted.id,
      collectionId: target.collectionId,
      name,
      path,
      ownerId: principal.userId,
      owner: principal.username,
      group: principal.activeGroupName,
      ...bytes,
      version: 1,
      createdAt: inserted.createdAt,
      updatedAt: inserted.updatedAt,
      mtimeNs: inserted.mtimeNs,
      mode: inserted.mode,
      linkTarget: null,
      replicaCount: 1,
      site: this.site.siteId,
      replicas: [],
    };
    return toEntryDto(object, 'own');
  }

  /**
   * Uploads many new objects into one collection in one request (multipart/form-data, one file part
   * per object, the part's filename its name), all or nothing: each part is streamed to staging and
   * hashed, then one catalog call records them all. If any name is taken, nothing is created and
   * the answer names every clash.
   */
  async uploadBatch(principal: Principal, collectionPath: string, req: IncomingMessage): Promise<EntryDto[]> {
    this.access.assertWithinToken(principal, collectionPath);
    const found = await this.namespace.resolve(collectionPath);
    await this.access.requireAt(principal, collectionPath, found && entryTarget(found), 'write', () =>
      notFound(`collection ${collectionPath}`),
    );
    if (found!.kind !== 'collection') {
      throw new DomainError(ErrorCode.NotACollection, `${collectionPath} is a data object, not a collection`);
    }
    const collection = found as CollectionRecord;
    type Part = { name: string; staged: StagedFile; contentType: string; key?: string };
    const parts: Part[] = [];
    // Each part is read in order; its fsync and close finish in the background while the next
    // part arrives, and all of them are awaited before anything is committed.
    const staging: Promise<Part>[] = [];
    const names = new Set<string>();
    let total = 0;
    try {
      const read = forEachFilePart(
        req,
        MAX_BATCH_FILES,
        async (filename: string | undefined, stream, mimeType) => {
          if (filename === undefined) {
            throw new MultipartError('every part must be a file part whose filename is the object name');
          }
          let name: string;
          try {
            name = normalizeName(filename);
          } catch (err) {
            throw new DomainError(
              ErrorCode.InvalidPath,
              `file part "${filename}": ${(err as Error).message}`,
            );
          }
          if (names.has(name))
            throw new DomainError(ErrorCode.NameTaken, `"${name}" appears twice in this upload`);
          names.add(name);
          const ended = new Promise<void>((resolve) => stream.once('end', resolve));
          stream.on('data', (chunk: Buffer) => (total += chunk.length));
          const part = this.storage
            .stage(stream, { maxBytes: this.config.maxUploadBytes - total })
            .then((staged) => ({ name, staged, contentType: mimeType || 'application/octet-stream' }));
          staging.push(part);
          await Promise.race([ended, part]);
        },
      );
      // `staging` fills while the body is read; wait for the reading before collecting it.
      const [reading] = await Promise.allSettled([read]);
      const staged = await Promise.allSettled(staging);
      for (const result of staged) if (result.status === 'fulfilled') parts.push(result.value);
      const failure = [reading, ...staged].find((r) => r.status === 'rejected');
      if (failure) {
        const err: unknown = failure.reason;
        if (err instanceof MultipartError) throw new DomainError(ErrorCode.ValidationFailed, err.message);
        if (err instanceof StagingError) {
          throw new DomainError(
            err.reason === 'too-large' ? ErrorCode.PayloadTooLarge : ErrorCode.UploadIncomplete,
            err.message,
          );
        }
        throw err;
      }
      if (parts.length === 0) {
        throw new DomainError(ErrorCode.ValidationFailed, 'the upload holds no file parts');
      }
      await Promise.all(
        parts.map((part) => {
          part.key = randomUUID();
          return part.staged.commit(part.key);
        }),
      );
      const result = await this.ingest.insertMany(
        collection.id,
        parts.map((p) => ({
          name: p.name,
          size: BigInt(p.staged.size),
          checksum: p.staged.sha256,
          contentType: p.contentType,
          key: p.key!,
        })),
        { ownerId: principal.userId, groupId: principal.activeGroupId },
        { siteId: this.site.siteId, resourceId: this.site.resourceId },
      );
      if (result.parentGone) throw notFound(`collection ${collection.path} (it was deleted meanwhile)`);
      if (!result.inserted) {
        const taken = result.taken ?? [];
        throw new DomainError(
          ErrorCode.NameTaken,
          `${taken.length} name(s) exist already in ${collection.path}, so nothing was uploaded: ${taken.slice(0, 10).join(', ')}${taken.length > 10 ? ', ...' : ''}`,
          { names: taken },
        );
      }
      this.metrics.bytesIn.inc(total);
      const inserted = result.inserted;
      return parts.map((p) => {
        const row = inserted.get(p.name)!;
        return toEntryDto(
          {
            kind: 'object',
            id: row.id,
            collectionId: collection.id,
            name: p.name,
            path: joinPath(collection.path, p.name),
            ownerId: principal.userId,
            owner: principal.username,
            group: principal.activeGroupName,
            size: BigInt(p.staged.size),
            checksum: p.staged.sha256,
            contentType: p.contentType,
            version: 1,
            createdAt: row.createdAt,
            updatedAt: row.updatedAt,
            mtimeNs: row.mtimeNs,
            mode: row.mode,
            linkTarget: null,
            replicaCount: 1,
            site: this.site.siteId,
            replicas: [],
          },
          'own',
        );
      });
    } catch (err) {
      await Promise.all(parts.map((p) => this.abandon(p.staged, p.key ?? null)));
      throw err;
    }
  }

  /**
   * Replaces an existing object's bytes. One site decides on updates of an object's bytes, the one
   * holding them: this site when it does, otherwise the update is forwarded there (docs/conflicts.md,
   * "Data updates").
   */
  private async overwrite(
    principal: Principal,
    path: string,
    source: UploadSource,
    options: UploadOptions,
  ): Promise<EntryDto> {
    const existing = await this.namespace.resolve(path);
    if (existing?.kind !== 'object') throw notFound(path);
    await this.access.require(principal, { path, kind: 'object', objectId: existing.id }, 'write');
    if (existing.linkTarget !== null) throw isASymlink(path, existing.linkTarget);
    const base = options.expectedBase;
    const holder = holdingSite(existing, this.site.siteId);
    if (base && !baseAcceptable(existing, base, holder === this.site.siteId)) {
      throw baseChanged(path, existing.version);
    }
    if (holder !== this.site.siteId) return this.forwardUpdate(principal, existing, holder, source, options);
    const staged = await this.stage(source, options);
    return this.replaceHeldBytes(
      principal,
      existing.id,
      path,
      staged,
      options.contentType,
      this.site.siteId,
      base?.version,
      { mtimeNs: options.mtimeNs, mode: options.mode },
    );
  }

  /**
   * Sends an update of bytes another site holds to that site, as the caller, and answers what it
   * answered. The bytes are staged here first, so the holding site receives them whole, with their
   * SHA-256 signed.
   */
  private async forwardUpdate(
    principal: Principal,
    existing: ObjectRecord,
    holder: string,
    source: UploadSource,
    options: UploadOptions,
  ): Promise<EntryDto> {
    if (!this.replication.peers.peer(holder)) {
      throw new DomainError(
        ErrorCode.ReplicaUnavailable,
        `the bytes of ${existing.path} are held at ${holder}, which this site has no peer link to; update them there`,
      );
    }
    const staged = await this.stage(source, options);
    try {
      const update: ForwardedUpdate = {
        objectId: existing.id.toString(),
        userId: principal.userId.toString(),
        path: existing.path,
        size: staged.size,
        sha256: staged.sha256,
        contentType: options.contentType ?? null,
        ...(options.expectedBase ? { baseVersion: options.expectedBase.version } : {}),
        ...(options.mtimeNs !== undefined ? { mtime: options.mtimeNs.toString() } : {}),
        ...(options.mode !== undefined ? { mode: options.mode } : {}),
      };
      // At least a megabyte a second, and a minute for the holding site to commit.
      const timeoutMs = 60_000 + Math.ceil(staged.size / 1000);
      const entry = await this.replication.peers.sendBytes<EntryDto>(
        holder,
        forwardedUpdatePath(existing.id),
        update,
        staged.open(),
        timeoutMs,
      );
      this.metrics.bytesOut.inc(staged.size);
      return entry;
    } catch (err) {
      if (err instanceof PeerRequestError) throw relayRefusal(err, holder, existing.path);
      throw err;
    } finally {
      await staged.discard();
    }
  }

  /**
   * A data update another site forwarded for one of its users: checked here as if the user had
   * asked this site (rights, this site still holding the bytes, the update window).
   */
  async acceptForwardedUpdate(
    principal: Principal,
    from: string,
    update: ForwardedUpdate,
    body: Readable,
  ): Promise<EntryDto> {
    const objectId = BigInt(update.objectId);
    const path = await this.repo.objectPath(objectId);
    const existing = path ? await this.namespace.resolve(path) : null;
    if (!path || existing?.kind !== 'object') {
      throw notFound(`${update.path} (it was deleted at ${this.site.siteId}, which held its bytes)`);
    }
    await this.access.require(principal, { path, kind: 'object', objectId }, 'write');
    if (existing.linkTarget !== null) throw isASymlink(path, existing.linkTarget);
    const holder = holdingSite(existing, this.site.siteId);
    if (holder !== this.site.siteId) {
      throw new DomainError(
        ErrorCode.ReplicaUnavailable,
        `the bytes of ${update.path} are now held at ${holder}, not ${this.site.siteId}; try again after the next replication exchange`,
      );
    }
    const staged = await this.stage(
      { body },
      { overwrite: true, contentLength: update.size, expectedSha256: update.sha256 },
    );
    return this.replaceHeldBytes(
      principal,
      objectId,
      path,
      staged,
      update.contentType ?? undefined,
      from,
      update.baseVersion,
      { mtimeNs: update.mtime === undefined ? undefined : BigInt(update.mtime), mode: update.mode },
    );
  }

  /**
   * Replaces the bytes of an object this site holds with staged ones, for an update that came from
   * `requester` (this site or the peer that forwarded it): a new version, this site's replica moved
   * to the new key, the other copies stale. Refused while another site's update holds the window.
   */
  private async replaceHeldBytes(
    principal: Principal,
    objectId: bigint,
    path: string,
    staged: StagedFile,
    contentType: string | undefined,
    requester: string,
    baseVersion?: number,
    attributes: WrittenAttributes = {},
  ): Promise<EntryDto> {
    let committedKey: string | null = null;
    let replacedKey: string | null = null;
    try {
      await this.namespaceRepo.transaction(async (tx) => {
        const current = await this.repo.lockObject(tx, objectId);
        if (!current) throw notFound(`${path} (it was deleted meanwhile)`);
        if (current.linkTarget !== null) throw isASymlink(path, current.linkTarget);
        if (baseVersion !== undefined && current.version !== baseVersion) {
          throw baseChanged(path, current.version);
        }
        if (this.config.replication.peers.length > 0) {
          const holder = await this.repo.claimUpdateWindow(
            tx,
            objectId,
            requester,
            this.replication.lastCycleStartedAt,
          );
          if (holder) throw this.updateRejected(path, holder);
        }
        const key = storageKey(current.id, current.version + 1);
        await staged.commit(key);
        committedKey = key;
        replacedKey = await this.repo.replaceBytes(
          tx,
          current.id,
          {
            size: BigInt(staged.size),
            checksum: staged.sha256,
            contentType: contentType ?? current.contentType,
          },
          { siteId: this.site.siteId, resourceId: this.site.resourceId, physicalPath: key },
          principal.userId,
          attributes,
        );
      });
    } catch (err) {
      await this.abandon(staged, committedKey);
      throw err;
    }
    if (replacedKey && replacedKey !== committedKey) await this.storage.remove(replacedKey);
    this.metrics.bytesIn.inc(staged.size);
    const entry = (await this.namespace.resolve(
      (await this.repo.objectPath(objectId)) ?? path,
    )) as ObjectRecord;
    return toEntryDto(
      entry,
      await this.access.levelOf(principal, { path: entry.path, kind: 'object', objectId }),
    );
  }

  private updateRejected(path: string, holder: UpdateWindowHolder): DomainError {
    const cycleMs = this.config.replication.cycleMs;
    const nextExchange = Math.max(this.replication.lastCycleStartedAt.getTime() + cycleMs, Date.now() + 1000);
    const retryAfter = Math.ceil((nextExchange - Date.now()) / 1000) + 1;
    return new DomainError(
      ErrorCode.UpdateRejected,
      `${path} was updated from ${holder.siteId} at ${holder.acceptedAt.toISOString()}, and ${this.site.siteId}, ` +
        `which holds its bytes, accepts updates of them from one site per replication cycle. ` +
        `Try again after the next replication exchange, about ${new Date(nextExchange).toISOString()}, ` +
        `once your site has that update`,
      undefined,
      { 'retry-after': String(retryAfter) },
    );
  }

  /**
   * Streams the body into staging, or adopts a file already here, and checks its length and the
   * client's checksum (a file's before it is touched).
   */
  private async stage(source: UploadSource, options: UploadOptions): Promise<StagedFile> {
    const length = 'file' in source ? source.file.size : options.contentLength;
    if (length !== undefined && length > this.config.maxUploadBytes) {
      throw new DomainError(
        ErrorCode.PayloadTooLarge,
        `the upload exceeds the limit of ${this.config.maxUploadBytes} bytes`,
      );
    }
    if ('file' in source && options.expectedSha256 && options.expectedSha256 !== source.file.sha256) {
      throw checksumMismatch(source.file.sha256, options.expectedSha256);
    }
    let staged: StagedFile;
    try {
      staged =
        'file' in source
          ? await this.storage.adopt(source.file.path, source.file)
          : await this.storage.stage(source.body, {
              maxBytes: this.config.maxUploadBytes,
              expectedBytes: options.contentLength,
            });
    } catch (err) {
      if (err instanceof StagingError) {
        throw new DomainError(
          err.reason === 'too-large' ? ErrorCode.PayloadTooLarge : ErrorCode.UploadIncomplete,
          err.message,
        );
      }
      throw err;
    }
    if (options.expectedSha256 && options.expectedSha256 !== staged.sha256) {
      await staged.discard();
      throw checksumMismatch(staged.sha256, options.expectedSha256);
    }
    return staged;
  }

  /** Removes the bytes of an upload whose catalog transaction did not commit. */
  private async abandon(staged: StagedFile, committedKey: string | null): Promise<void> {
    await staged.discard();
    if (committedKey) await this.storage.remove(committedKey);
  }

  /**
   * Checks read access and finds where to read the object's bytes: this site's copy, or else a
   * good copy at another site (read through that site, transparently to the caller).
   */
  async openForRead(
    principal: Principal,
    path: string,
  ): Promise<{ object: ObjectRecord; source: ByteSource }> {
    this.access.assertWithinToken(principal, path);
    const entry = await this.namespace.resolve(path);
    await this.access.requireAt(principal, path, entry && entryTarget(entry), 'read', () => notFound(path));
    if (!entry || entry.kind !== 'object')
      throw new DomainError(ErrorCode.NotAnObject, `${path} is a collection; list it instead`);
    if (entry.linkTarget !== null) throw isASymlink(path, entry.linkTarget);
    return { object: entry, source: this.sourceOf(path, entry) };
  }

  /**
   * For a partial update of `path` made from version `base`: the object (read access needed) and
   * where to read the base's bytes. The site holding the bytes decides on versions. Held here, the
   * object must be at `base` exactly (version and SHA-256), and the bytes are this site's. Held at
   * another site, this site's catalog may lag behind updates forwarded there (a client that just
   * made one knows the newer version), so a newer base is accepted and the bytes are read from the
   * holding site, which checks the version again, under the object's lock, when the update arrives:
   * versions only grow there, so bytes read from it after the client saw `base` are that version's
   * whenever that check passes.
   */
  async openBase(
    principal: Principal,
    path: string,
    base: { version: number; sha256: string },
  ): Promise<{ object: ObjectRecord; source: ByteSource }> {
    const { object } = await this.openForRead(principal, path);
    const holder = holdingSite(object, this.site.siteId);
    if (!baseAcceptable(object, base, holder === this.site.siteId)) throw baseChanged(path, object.version);
    if (holder === this.site.siteId) return { object, source: this.sourceOf(path, object) };
    if (!this.replication.peers.peer(holder)) {
      throw new DomainError(
        ErrorCode.ReplicaUnavailable,
        `the bytes of ${path} are held at ${holder}, which this site has no peer link to; update them there`,
      );
    }
    return { object, source: { kind: 'remote', siteId: holder, objectId: object.id } };
  }

  /** Where an object's bytes can be read from: this site's replica, else a peer holding a good one. */
  private sourceOf(path: string, entry: ObjectRecord): ByteSource {
    const good = entry.replicas.filter((r) => r.status === 'good');
    const local = good.find((r) => r.siteId === this.site.siteId);
    if (local) return { kind: 'local', key: local.physicalPath };
    const remote = good.find((r) => this.replication.peers.peer(r.siteId));
    if (!remote) {
      throw new DomainError(
        ErrorCode.ReplicaUnavailable,
        good.length === 0
          ? `${path} has no good copy of its bytes at any site`
          : `the bytes of ${path} are held at ${good.map((r) => r.siteId).join(', ')}, which this site has no peer link to`,
      );
    }
    return { kind: 'remote', siteId: remote.siteId, objectId: entry.id };
  }

  /**
   * Opens many objects for one batch read, all or nothing: every path must be an object the caller
   * may read, and together at most MAX_BATCH_READ_BYTES. Objects are looked up per collection in
   * one round of queries; when the caller may read everything in a collection, its objects need no
   * check each. Anything unusual (a missing name, a collection, an object readable only by its own
   * grant) goes through openForRead, so the errors are the same as for a single download.
   */
  async openManyForRead(
    principal: Principal,
    paths: string[],
  ): Promise<Array<{ object: ObjectRecord; source: ByteSource }>> {
    const opened = new Array<{ object: ObjectRecord; source: ByteSource }>(paths.length);
    const byParent = new Map<string, number[]>();
    for (const [index, path] of paths.entries()) {
      this.access.assertWithinToken(principal, path);
      const parent = path === '/' ? '/' : splitPath(path).parent;
      byParent.set(parent, [...(byParent.get(parent) ?? []), index]);
    }
    const parents = [...byParent.entries()];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < parents.length) {
        const [parent, indexes] = parents[next++]!;
        const collection = await this.namespaceRepo.findCollection(parent);
        const readable =
          collection !== null && levelAtLeast(await this.access.inheritedBelow(principal, parent), 'read');
        const found =
          collection && readable
            ? await this.namespaceRepo.findObjects(
                collection,
                indexes.map((i) => splitPath(paths[i]!).name),
              )
            : new Map<string, ObjectRecord>();
        for (const index of indexes) {
          const path = paths[index]!;
          const object = path === '/' ? undefined : found.get(splitPath(path).name);
          opened[index] =
            object && object.linkTarget === null
              ? { object, source: this.sourceOf(path, object) }
              : await this.openForRead(principal, path);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(4, parents.length) }, worker));
    const total = opened.reduce((sum, o) => sum + Number(o.object.size), 0);
    if (total > MAX_BATCH_READ_BYTES) {
      throw new DomainError(
        ErrorCode.PayloadTooLarge,
        `these objects hold ${total} bytes together; one batch read returns at most ${MAX_BATCH_READ_BYTES}`,
      );
    }
    return opened;
  }

  /**
   * The bytes (or a range of them) from where `openForRead` found them, for sending. A peer is
   * asked before this resolves, so an unreachable holding site is an error before any answer.
   */
  async openBytes(source: ByteSource, range?: { start: number; end: number }): Promise<ObjectBytes> {
    if (source.kind === 'local') return { sendTo: (out) => this.storage.send(source.key, range, out) };
    const stream = await this.read(source, range);
    return {
      sendTo: async (out) => {
        let sent = 0;
        stream.on('data', (chunk: Buffer) => (sent += chunk.length));
        await pipeline(stream, out, { end: false });
        return sent;
      },
    };
  }

  /** The bytes (or a range of them) from where `openForRead` found them. */
  async read(source: ByteSource, range?: { start: number; end: number }): Promise<Readable> {
    if (source.kind === 'local') return this.storage.open(source.key, range);
    const path = `${PEER_OBJECT_PATH}/${source.objectId}`;
    const res = await this.replication.peers
      .stream(source.siteId, path, range ? { range: `bytes=${range.start}-${range.end}` } : {})
      .catch((err: unknown) => {
        throw new DomainError(
          ErrorCode.ReplicaUnavailable,
          `the bytes are held at ${source.siteId}, which cannot be reached now: ${err instanceof Error ? err.message : String(err)}`,
        );
      });
    if (!res.ok || !res.body || (range && res.status !== 206)) {
      await res.body?.cancel();
      throw new DomainError(
        ErrorCode.ReplicaUnavailable,
        `the bytes are held at ${source.siteId}, which answered ${res.status}; try again later`,
      );
    }
    return Readable.fromWeb(res.body as import('node:stream/web').ReadableStream<Uint8Array>);
  }

  /** For a peer's request: this site's own copy of an object's bytes, by object id. */
  async openLocalCopy(objectId: bigint): Promise<{ size: number; checksum: string; key: string }> {
    const entry = await this.repo.localReplica(objectId, this.site.siteId);
    if (!entry) throw new DomainError(ErrorCode.NotFound, `object ${objectId} has no good copy at this site`);
    return entry;
  }

  countSent(bytes: number): void {
    this.metrics.bytesOut.inc(bytes);
  }
}

/**
 * Whether a partial update's base may still be the object's version: exactly, where the bytes are
 * held; elsewhere this site's catalog may lag (not newer than the base, and the same SHA-256 if the
 * same version), and the holding site decides.
 */
function baseAcceptable(
  object: ObjectRecord,
  base: { version: number; sha256: string },
  heldHere: boolean,
): boolean {
  if (object.version === base.version) return object.checksum === base.sha256;
  return !heldHere && object.version < base.version;
}

function baseChanged(path: string, version: number): DomainError {
  return new DomainError(
    ErrorCode.UploadBaseChanged,
    `${path} changed meanwhile (it is at version ${version}); read it again and redo the changes`,
    { version: [String(version)] },
  );
}

/** A data route asked about a symbolic link: it has no bytes, and the site never follows it. */
function isASymlink(path: string, target: string): DomainError {
  return new DomainError(
    ErrorCode.IsASymlink,
    `${path} is a symbolic link (to ${JSON.stringify(target)}): it has no bytes to read or replace, and the site ` +
      'does not follow links; read or write its target, or remove the link first',
  );
}

function checksumMismatch(actual: string, expected: string): DomainError {
  return new DomainError(
    ErrorCode.ChecksumMismatch,
    `the bytes received hash to sha256:${actual}, not the sha256:${expected} you sent; retry the upload`,
  );
}

/**
 * The site whose copy of an object's bytes decides on updates of them: of the sites with a good
 * copy, the first by id (every site computes the same); this site when none has one.
 */
export function holdingSite(object: ObjectRecord, localSite: string): string {
  const good = object.replicas.filter((r) => r.status === 'good').map((r) => r.siteId);
  return good.length === 0 ? localSite : good.sort()[0]!;
}

/** Refusals of the holding site the user can act on, passed on as they are; anything else is "unavailable". */
const RELAYED_CODES = new Set<string>([
  ErrorCode.UpdateRejected,
  ErrorCode.IsASymlink,
  ErrorCode.UploadBaseChanged,
  ErrorCode.PermissionDenied,
  ErrorCode.NotFound,
  ErrorCode.ChecksumMismatch,
  ErrorCode.PayloadTooLarge,
  ErrorCode.AccountDisabled,
]);

function relayRefusal(err: PeerRequestError, holder: string, path: string): DomainError {
  return relayPeerRefusal(
    err,
    RELAYED_CODES,
    (why) =>
      `the update of ${path} was not applied: its bytes are held at ${holder}, which ${why}; try again later`,
  );
}
