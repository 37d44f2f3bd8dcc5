import { Inject, Injectable } from '@nestjs/common';
import { ErrorCode } from '@tributary/shared';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import { MetricsRegistry } from '../health/metrics';
import { NamespaceRepository } from '../namespace/namespace.repository';
import { ReplicationService } from '../replication/replication.service';
import { SiteContext } from '../sites/site-context';
import type { StagedFile } from '../storage/storage-driver';
import { StorageService } from '../storage/storage.service';
import { DataRepository, type UpdateWindowHolder, type WrittenAttributes } from './data.repository';
import { baseChanged, isASymlink } from './data.errors';

/** Storage key of one version of an object's bytes at this site. */
const storageKey = (objectId: bigint, version: number): string => `${objectId}.v${version}`;

/** A new version of the bytes of an object this site holds, as a user here or at a peer asked. */
export interface HeldUpdate {
  objectId: bigint;
  /** The object's path as the caller knew it (for messages, and if it is gone afterwards). */
  path: string;
  staged: StagedFile;
  /** Absent: the object's type stays. */
  contentType: string | undefined;
  /** The site the update came from: this one, or the peer that forwarded it. */
  requester: string;
  /** A partial update's base: refused unless the object is still at this version. */
  baseVersion?: number;
  attributes?: WrittenAttributes;
}

/**
 * Updates of the bytes this site holds (docs/conflicts.md, "Data updates"): a new version under the
 * object's lock, this site's replica moved to the new key and the other copies stale. Updates of
 * one object are accepted from one site per replication cycle (the update window), so every peer
 * has been offered one before another site's can follow.
 */
@Injectable()
export class LocalUpdateService {
  constructor(
    private readonly namespaceRepo: NamespaceRepository,
    private readonly repo: DataRepository,
    private readonly storage: StorageService,
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
   * Replaces the object's bytes with the staged ones, or discards them and throws (refused while
   * another site's update holds the window). Resolves with the object's path now.
   */
  async replace(principal: Principal, update: HeldUpdate): Promise<string> {
    const { objectId, path, staged } = update;
    let committedKey: string | null = null;
    let replacedKey: string | null = null;
    try {
      await this.namespaceRepo.transaction(async (tx) => {
        const current = await this.repo.lockObject(tx, objectId);
        if (!current) throw notFound(`${path} (it was deleted meanwhile)`);
        if (current.linkTarget !== null) throw isASymlink(path, current.linkTarget);
        if (update.baseVersion !== undefined && current.version !== update.baseVersion) {
          throw baseChanged(path, current.version);
        }
        if (this.config.replication.peers.length > 0) {
          const holder = await this.repo.claimUpdateWindow(
            tx,
            objectId,
            update.requester,
            this.replication.lastCycleStartedAt,
          );
          if (holder) throw this.updateRejected(path, holder);
        }
        // An object store's staged bytes keep the fresh key they already sit under (no copy).
        const key = staged.key ?? storageKey(current.id, current.version + 1);
        await staged.commit(key);
        committedKey = key;
        replacedKey = await this.repo.replaceBytes(
          tx,
          current.id,
          {
            size: BigInt(staged.size),
            checksum: staged.sha256,
            contentType: update.contentType ?? current.contentType,
          },
          { siteId: this.site.siteId, resourceId: this.site.resourceId, physicalPath: key },
          principal.userId,
          update.attributes,
        );
      });
    } catch (err) {
      // The catalog did not record the new version: its bytes go.
      await staged.discard();
      if (committedKey) await this.storage.remove(committedKey);
      throw err;
    }
    if (replacedKey && replacedKey !== committedKey) await this.storage.remove(replacedKey);
    this.metrics.bytesIn.inc(staged.size);
    return (await this.repo.objectPath(objectId)) ?? path;
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
}
