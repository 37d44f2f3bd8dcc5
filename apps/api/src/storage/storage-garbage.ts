import { Injectable, Logger, OnApplicationBootstrap, BeforeApplicationShutdown } from '@nestjs/common';
import { ReplicationService } from '../replication/replication.service';
import { SiteContext } from '../sites/site-context';
import { StorageGarbageRepository } from './storage-garbage.repository';
import { StorageService } from './storage.service';

/** Keys taken per transaction. */
const BATCH = 500;
/** Files removed at once. */
const PARALLEL = 8;

/**
 * Removes this site's files whose copy rows are gone (docs/placement.md, "Updates, deletes and fewer
 * copies"): a purge made here removes its files itself, but one arriving from a peer deletes this
 * site's rows by cascade, and the trigger of prisma/functions/110_storage_garbage.sql leaves their
 * keys in storage_garbage. Swept at start (what a crash left) and after every replication cycle (when
 * peers' changes have been applied); a key a copy row uses again is kept.
 */
@Injectable()
export class StorageGarbageSweeper implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('StorageGarbage');
  private running: Promise<number> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly repo: StorageGarbageRepository,
    private readonly storage: StorageService,
    private readonly site: SiteContext,
    replication: ReplicationService,
  ) {
    replication.afterCycle(() => void this.sweep().catch(() => undefined));
  }

  onApplicationBootstrap(): void {
    void this.sweep().catch(() => undefined);
  }

  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    await this.running?.catch(() => undefined);
  }

  /**
   * Sweeps until nothing is left; resolves with the files' keys handled. A call while a sweep runs
   * makes that sweep go round once more (and waits for it).
   */
  sweep(): Promise<number> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = this.run().finally(() => (this.running = undefined));
    return this.running;
  }

  private async run(): Promise<number> {
    let total = 0;
    do {
      this.again = false;
      // The bootstrap may not have found this site's resources yet.
      if (this.site.resourceId === 0n) return total;
      for (const resourceId of this.storage.resourceIds()) {
        for (;;) {
          if (this.stopped) return total;
          let taken: number;
          try {
            taken = await this.repo.sweep(this.site.siteId, resourceId, BATCH, (keys) =>
              this.removeFiles(resourceId, keys),
            );
          } catch (err) {
            this.logger.warn(
              `sweeping removed copies' files failed: ${err instanceof Error ? err.message : String(err)}`,
            );
            return total;
          }
          total += taken;
          if (taken < BATCH) break;
        }
      }
    } while (this.again);
    return total;
  }

  /** Removes the files; answers the keys whose files are gone (a failure is kept for the next sweep). */
  private async removeFiles(resourceId: bigint, keys: string[]): Promise<string[]> {
    const removed: string[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < keys.length) {
        const key = keys[next++]!;
        try {
          await this.storage.removeFrom(resourceId, key);
          removed.push(key);
        } catch (err) {
          this.logger.warn(`could not remove ${key}: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, keys.length) }, worker));
    if (removed.length > 0) this.logger.log(`removed ${removed.length} file(s) of copies deleted here`);
    return removed;
  }
}
