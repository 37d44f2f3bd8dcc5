import { Injectable } from '@nestjs/common';
import { randomUUID } from 'node:crypto';
import { ErrorCode, joinPath, normalizeName, splitPath, type EntryDto } from '@tributary/shared';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { AccessService, levelAtLeast } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { MetricsRegistry } from '../health/metrics';
import { toEntryDto } from '../namespace/namespace.mapper';
import type { CollectionRecord, ObjectRecord } from '../namespace/namespace.repository';
import { entryTarget, NamespaceService } from '../namespace/namespace.service';
import { SiteContext } from '../sites/site-context';
import { StagingError, type StagedFile } from '../storage/storage-driver';
import { baseChanged, isASymlink, stagingRefusal } from './data.errors';
import { ForwardedUpdateService } from './forwarded-update.service';
import { baseAcceptable, holdingSite } from './holding-site';
import { IngestRepository, type InsertedObject } from './ingest.repository';
import { LocalUpdateService } from './local-update.service';
import { forEachFilePart, MultipartError } from './multipart';
import { UploadStaging, type MeasuredDraft, type UploadOptions, type UploadSource } from './upload-staging';

/** Most objects one batch upload may create. */
export const MAX_BATCH_FILES = 10_000;

/**
 * Uploads: new objects, one per request or many in one, and new versions of existing ones, which
 * the site holding their bytes decides on (this one: LocalUpdateService; another:
 * ForwardedUpdateService).
 */
@Injectable()
export class IngestService {
  constructor(
    private readonly namespace: NamespaceService,
    private readonly repo: IngestRepository,
    private readonly access: AccessService,
    private readonly staging: UploadStaging,
    private readonly local: LocalUpdateService,
    private readonly forwarded: ForwardedUpdateService,
    private readonly site: SiteContext,
    private readonly metrics: MetricsRegistry,
  ) {}

  /**
   * Streams the body to staging (hashing as it goes), then in one transaction records the object
   * and renames the bytes into place. Any failure before the commit leaves no object and no file.
   */
  upload(principal: Principal, path: string, body: Readable, options: UploadOptions): Promise<EntryDto> {
    return this.ingestBytes(principal, path, { body }, options);
  }

  /**
   * The same as `upload` for bytes the site already holds in a draft (an upload session's),
   * measured as they arrived: the draft is committed in place instead of being copied.
   * `options.expectedSha256` is checked against the measured SHA-256 before anything changes; if
   * the upload is refused, the draft is left as it was.
   */
  uploadDraft(
    principal: Principal,
    path: string,
    draft: MeasuredDraft,
    options: UploadOptions,
  ): Promise<EntryDto> {
    return this.ingestBytes(principal, path, { draft }, options);
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
    const target = await this.repo.target(parent, name);
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
    const staged = await this.staging.stage(source, options);
    const bytes = {
      size: BigInt(staged.size),
      checksum: staged.sha256,
      contentType: options.contentType ?? 'application/octet-stream',
    };
    // The bytes go under a fresh key first; they are unreachable until the catalog row commits.
    // An object store's staged bytes already sit under a fresh key of their own: kept, not copied.
    const key = staged.key ?? randomUUID();
    let outcome: InsertedObject | 'name-taken' | 'parent-gone' | null = null;
    try {
      await staged.commit(key);
      outcome = await this.repo.insert(
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
      if (outcome === null || typeof outcome === 'string') await this.staging.abandon(staged, key);
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
          const part = this.staging
            .stagePart(stream, total)
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
        if (err instanceof StagingError) throw stagingRefusal(err);
        throw err;
      }
      if (parts.length === 0) {
        throw new DomainError(ErrorCode.ValidationFailed, 'the upload holds no file parts');
      }
      await Promise.all(
        parts.map((part) => {
          part.key = part.staged.key ?? randomUUID();
          return part.staged.commit(part.key);
        }),
      );
      const result = await this.repo.insertMany(
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
      await Promise.all(parts.map((p) => this.staging.abandon(p.staged, p.key ?? null)));
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
    if (holder !== this.site.siteId) return this.forwarded.send(principal, existing, holder, source, options);
    const staged = await this.staging.stage(source, options);
    const now = await this.local.replace(principal, {
      objectId: existing.id,
      path,
      staged,
      contentType: options.contentType,
      requester: this.site.siteId,
      baseVersion: base?.version,
      attributes: { mtimeNs: options.mtimeNs, mode: options.mode },
    });
    const entry = (await this.namespace.resolve(now)) as ObjectRecord;
    return toEntryDto(
      entry,
      await this.access.levelOf(principal, { path: entry.path, kind: 'object', objectId: existing.id }),
    );
  }
}
