import { BeforeApplicationShutdown, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import {
  ErrorCode,
  type CreateStorageMove,
  type StorageMoveDto,
  type StorageMoveListDto,
} from '@tributary/shared';
import { AccessService } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { NamespaceService } from '../namespace/namespace.service';
import { SiteContext } from '../sites/site-context';
import { StorageGarbageSweeper } from '../storage/storage-garbage';
import { StagingError } from '../storage/storage-driver';
import { StorageService } from '../storage/storage.service';
import { StorageMovesRepository, type CopyToMove, type MoveRow } from './storage-moves.repository';

/** Copies taken from the catalog at a time. */
const BATCH = 50;
/** Wait before trying again after the store failed (the move stays running). */
const RETRY_MS = 2000;
/** How often running moves are looked for (a restart resumes them). */
const POLL_MS = 1000;
/** How often copies that placement rules want on another resource are looked for. */
const RULES_POLL_MS = 3000;
/** Copies moved for rules per round. */
const RULES_BATCH = 50;

/** A copy's bytes did not hash to their checksum: the move stops and says so. */
class MoveMismatch extends Error {}

/**
 * Moves the copies this site holds under a collection to another of its resources (docs/storage.md,
 * "Moving between resources"), one at a time: read from the old resource, written to the new one
 * and hashed on the way, compared with the copy's checksum, then the copy row switched under the
 * object's lock with the old bytes handed to the garbage sweep in the same transaction. The work is
 * what the catalog still has elsewhere, so a site killed mid-move resumes where it was, and the old
 * bytes go only once the new ones are recorded.
 */
@Injectable()
export class StorageMovesService implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('StorageMoves');
  private timer: NodeJS.Timeout | undefined;
  private rulesTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private placing: Promise<number> | undefined;
  private stopped = false;
  /** Whether a move may be running (at start, after a create, while one runs): else no query. */
  private mayRun = true;
  /** Counts creates, so a round that found nothing does not hide a move made meanwhile. */
  private created = 0;

  constructor(
    private readonly repo: StorageMovesRepository,
    private readonly storage: StorageService,
    private readonly namespace: NamespaceService,
    private readonly access: AccessService,
    private readonly site: SiteContext,
    private readonly garbage: StorageGarbageSweeper,
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.kick(), POLL_MS);
    this.timer.unref();
    this.rulesTimer = setInterval(() => void this.placeByRules(), RULES_POLL_MS);
    this.rulesTimer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.rulesTimer) clearInterval(this.rulesTimer);
    await this.running?.catch(() => undefined);
    await this.placing?.catch(() => undefined);
  }

  /**
   * Moves this site's copies that placement rules want on another of its resources there
   * (docs/storage.md, "Rules naming resources"), one at a time as a move does (verified, switched
   * under the object's lock, the old bytes swept); resolves with the copies moved this round. Copies
   * the mover makes land on the default resource and are moved on here.
   */
  placeByRules(): Promise<number> {
    if (this.stopped || this.site.siteId === '') return Promise.resolve(0);
    this.placing ??= (async () => {
      let moved = 0;
      for (const copy of await this.repo.misplaced(this.site.siteId, RULES_BATCH)) {
        if (this.stopped) break;
        if (!this.storage.resourceById(copy.targetId)) continue;
        try {
          await this.moveCopy(copy.targetId, copy, null);
          moved++;
        } catch (err) {
          this.logger.warn(
            `rule ${copy.ruleId}: ${copy.key} not moved: ${err instanceof Error ? err.message : String(err)}`,
          );
        }
      }
      if (moved > 0) {
        this.logger.log(
          `moved ${moved} cop${moved === 1 ? 'y' : 'ies'} to the resources placement rules name`,
        );
        void this.garbage.sweep().catch(() => undefined);
      }
      return moved;
    })()
      .catch((err: unknown) => {
        this.logger.warn(`placing copies by rules paused: ${(err as Error).message}`);
        return 0;
      })
      .finally(() => (this.placing = undefined));
    return this.placing;
  }

  async create(principal: Principal, input: CreateStorageMove): Promise<StorageMoveDto> {
    this.access.assertAdmin(principal);
    const resourceId = this.site.resources.get(input.resource);
    if (resourceId === undefined) {
      throw new DomainError(ErrorCode.ValidationFailed, `no storage resource "${input.resource}" here`, {
        resource: [`must be one of this site's resources: ${[...this.site.resources.keys()].join(', ')}`],
      });
    }
    const compound = this.storage.partOf(input.resource);
    if (compound !== undefined) {
      throw new DomainError(
        ErrorCode.ValidationFailed,
        `"${input.resource}" is a part of the compound resource "${compound}"`,
        { resource: [`move to "${compound}" instead: its parts are reached only through it`] },
      );
    }
    const entry = await this.namespace.resolve(input.path);
    if (!entry) throw notFound(`collection ${input.path}`);
    if (entry.kind !== 'collection')
      throw new DomainError(ErrorCode.NotACollection, `${input.path} is a data object; move its collection`);
    const move = await this.repo.create(entry.id, input.path, this.site.siteId, resourceId, principal.userId);
    this.created++;
    this.mayRun = true;
    this.logger.log(`move ${move.id}: ${move.objectsTotal} copies under ${input.path} to ${input.resource}`);
    void this.kick();
    return toDto(move);
  }

  async get(principal: Principal, id: string): Promise<StorageMoveDto> {
    this.access.assertAdmin(principal);
    // Anything that is not an id a move can have (a bigint) is simply not found.
    const valid = /^\d{1,19}$/.test(id) && BigInt(id) <= 9223372036854775807n;
    const move = valid ? await this.repo.get(BigInt(id)) : null;
    if (!move) throw notFound(`storage move ${id}`);
    return toDto(move);
  }

  async list(principal: Principal): Promise<StorageMoveListDto> {
    this.access.assertAdmin(principal);
    return { items: (await this.repo.list(100)).map(toDto) };
  }

  /** Runs the running moves unless they already run; resolves when this round is over. */
  kick(): Promise<void> {
    if (this.stopped || this.site.siteId === '' || !this.mayRun) return Promise.resolve();
    this.running ??= this.work()
      .catch((err: unknown) => this.logger.warn(`moves paused: ${(err as Error).message}`))
      .finally(() => (this.running = undefined));
    return this.running;
  }

  private async work(): Promise<void> {
    const before = this.created;
    const running = await this.repo.running();
    if (running.length === 0 && before === this.created) this.mayRun = false;
    for (const move of running) {
      if (this.stopped) return;
      await this.runMove(move);
    }
  }

  private async runMove(move: MoveRow): Promise<void> {
    if (!this.storage.resourceById(move.resourceId)) {
      await this.repo.finish(
        move.id,
        'failed',
        `the resource ${move.resource} is not configured at this site`,
      );
      return;
    }
    for (;;) {
      if (this.stopped) return;
      const batch = await this.repo.pending(move, this.site.siteId, BATCH);
      if (batch.length === 0) {
        await this.repo.finish(move.id, 'done', null);
        this.logger.log(`move ${move.id} to ${move.resource} is done`);
        void this.garbage.sweep().catch(() => undefined);
        return;
      }
      for (const copy of batch) {
        if (this.stopped) return;
        try {
          await this.moveCopy(move.resourceId, copy, move.id);
        } catch (err) {
          if (err instanceof MoveMismatch) {
            await this.repo.finish(move.id, 'failed', err.message);
            this.logger.warn(`move ${move.id} failed: ${err.message}`);
            return;
          }
          // The store does not answer (or a copy vanished meanwhile): recorded, tried again later.
          const why = err instanceof Error ? err.message : String(err);
          await this.repo.noteError(move.id, why).catch(() => undefined);
          await new Promise((r) => setTimeout(r, RETRY_MS));
          return;
        }
      }
      void this.garbage.sweep().catch(() => undefined);
    }
  }

  /**
   * One copy to the resource `target`: written there, verified, switched; nothing changes when
   * anything fails. `moveId`: the move whose progress it counts (none for a rule's).
   */
  private async moveCopy(target: bigint, copy: CopyToMove, moveId: bigint | null): Promise<void> {
    // The key may be garbage on the target still (the copy was moved away from it before): taken
    // back first, so the sweep cannot remove the bytes written there now (it waits for a sweep
    // that holds the key, which removes the old file before these are written).
    await this.repo.reclaim(target, copy.key);
    let switched = false;
    try {
      let staged;
      try {
        staged = await this.storage.stageIn(target, this.storage.openIn(copy.resourceId, copy.key), {
          maxBytes: copy.size,
          expectedBytes: copy.size,
          // The copy keeps its key on the new resource: an attempt cut short by a crash is replaced
          // by the next one, never left behind under a key of its own.
          key: copy.key,
        });
      } catch (err) {
        if (!(err instanceof StagingError)) throw err;
        // A new version or a purge took the bytes meanwhile: the next round moves what is there now.
        if (!(await this.repo.stillCurrent(copy))) return;
        throw new MoveMismatch(
          `${copy.key} on the old resource does not hold ${copy.size} bytes: ${err.message}`,
        );
      }
      if (staged.sha256 !== copy.checksum) {
        await staged.discard();
        if (!(await this.repo.stillCurrent(copy))) return;
        throw new MoveMismatch(
          `${copy.key} hashes to ${staged.sha256}, not ${copy.checksum}: left where it is`,
        );
      }
      try {
        await staged.commit(copy.key);
        switched = await this.repo.switchCopy(moveId, copy, target, copy.key);
      } finally {
        if (!switched) await staged.discard().catch(() => undefined);
      }
    } finally {
      // Bytes written under the key on the target and not recorded there are the sweep's (unless
      // another move of the same copy to the same resource recorded them).
      if (!switched && !(await this.repo.names(this.site.siteId, target, copy.key).catch(() => true)))
        await this.repo.garbage(target, copy.key, copy.objectId).catch(() => undefined);
    }
    this.storage.forget(copy.key);
  }
}

function toDto(m: MoveRow): StorageMoveDto {
  return {
    id: m.id.toString(),
    path: m.path,
    resource: m.resource,
    status: m.status,
    objectsTotal: m.objectsTotal,
    objectsMoved: m.objectsMoved,
    bytesTotal: m.bytesTotal,
    bytesMoved: m.bytesMoved,
    error: m.error,
    createdAt: m.createdAt.toISOString(),
    finishedAt: m.finishedAt?.toISOString() ?? null,
  };
}
