import { Injectable } from '@nestjs/common';
import { ErrorCode, type EntryDto } from '@tributary/shared';
import { PeerRequestError } from '@tributary/replication';
import type { Readable } from 'node:stream';
import { AccessService } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import { relayPeerRefusal } from '../common/peer-refusal';
import type { Principal } from '../common/principal';
import { MetricsRegistry } from '../health/metrics';
import { toEntryDto } from '../namespace/namespace.mapper';
import type { ObjectRecord } from '../namespace/namespace.repository';
import { NamespaceService } from '../namespace/namespace.service';
import { ReplicationService } from '../replication/replication.service';
import { SiteContext } from '../sites/site-context';
import { DataRepository } from './data.repository';
import { isASymlink, noPeerLinkToHolder } from './data.errors';
import { forwardedUpdatePath, type ForwardedUpdate } from './forwarded-update';
import { holdingSite } from './holding-site';
import { LocalUpdateService } from './local-update.service';
import { UploadStaging, type UploadOptions, type UploadSource } from './upload-staging';

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

/**
 * Updates of bytes another site holds: one site decides on updates of an object's bytes, the one
 * holding them (docs/conflicts.md, "Data updates"). This site sends its users' updates there, and
 * accepts the updates peers send for the bytes it holds.
 */
@Injectable()
export class ForwardedUpdateService {
  constructor(
    private readonly namespace: NamespaceService,
    private readonly repo: DataRepository,
    private readonly access: AccessService,
    private readonly staging: UploadStaging,
    private readonly local: LocalUpdateService,
    private readonly site: SiteContext,
    private readonly metrics: MetricsRegistry,
    private readonly replication: ReplicationService,
  ) {}

  /**
   * Sends an update of bytes `holder` holds to that site, as the caller, and answers what it
   * answered. The bytes are staged here first, so the holding site receives them whole, with their
   * SHA-256 signed.
   */
  async send(
    principal: Principal,
    existing: ObjectRecord,
    holder: string,
    source: UploadSource,
    options: UploadOptions,
  ): Promise<EntryDto> {
    if (!this.replication.peers.peer(holder)) throw noPeerLinkToHolder(existing.path, holder);
    const staged = await this.staging.stage(source, options);
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
      // This site's copy of the old bytes, if any, is no longer served (docs/placement.md, "Updates").
      await this.repo.staleLocalCopy(existing.id, this.site.siteId, staged.sha256, principal.userId);
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
  async accept(
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
    const staged = await this.staging.stage(
      { body },
      { overwrite: true, contentLength: update.size, expectedSha256: update.sha256 },
    );
    const now = await this.local.replace(principal, {
      objectId,
      path,
      staged,
      contentType: update.contentType ?? undefined,
      requester: from,
      baseVersion: update.baseVersion,
      attributes: {
        mtimeNs: update.mtime === undefined ? undefined : BigInt(update.mtime),
        mode: update.mode,
      },
    });
    const entry = (await this.namespace.resolve(now)) as ObjectRecord;
    return toEntryDto(
      entry,
      await this.access.levelOf(principal, { path: entry.path, kind: 'object', objectId }),
    );
  }
}

function relayRefusal(err: PeerRequestError, holder: string, path: string): DomainError {
  return relayPeerRefusal(
    err,
    RELAYED_CODES,
    (why) =>
      `the update of ${path} was not applied: its bytes are held at ${holder}, which ${why}; try again later`,
  );
}
