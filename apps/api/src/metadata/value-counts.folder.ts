import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { MetadataQueryRepository } from './metadata-query.repository';

/** How often the value counts' deltas are folded (a facet reads the deltas not folded yet too). */
export const FOLD_INTERVAL_MS = 30_000;

/**
 * Folds the deltas that writes of triples append (`metadata_value_deltas`) into one count per value
 * (`metadata_value_counts`), so a whole-catalog facet reads about one row per value whatever was
 * written since. Writers never update a count row themselves: concurrent bulk writes would otherwise
 * queue behind each other on the counts of common values. Each run also merges the terms index's
 * pending list, which conjunctions would otherwise read in full.
 */
@Injectable()
export class ValueCountsFolder implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly log = new Logger(ValueCountsFolder.name);
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly queries: MetadataQueryRepository) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.fold(), FOLD_INTERVAL_MS);
    this.timer.unref();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One fold; a failure is logged and the deltas wait for the next one (nothing is lost). */
  fold(): Promise<void> {
    this.running ??= this.queries
      .foldCounts()
      .then(() => this.queries.mergePendingTerms())
      .then(() => undefined)
      .catch((err: unknown) =>
        this.log.warn(
          `folding metadata value counts failed: ${err instanceof Error ? err.message : String(err)}`,
        ),
      )
      .finally(() => (this.running = undefined));
    return this.running;
  }
}
