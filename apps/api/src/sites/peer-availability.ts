import { Inject, Injectable } from '@nestjs/common';
import { SITE_CONFIG, type SiteConfig } from '../config/config';

/**
 * This site's memory of peers that did not answer (docs/placement.md, "Reads"): a site marked down
 * is tried after every other for `peerReads.downMs`, so a read does not wait for its timeout again
 * and again; it is still tried (last), so a site that came back is found even before the memory
 * expires. Shared by reads and the mover (choosing a source). In memory only: a restart forgets.
 */
@Injectable()
export class PeerAvailability {
  private readonly downUntil = new Map<string, number>();
  private readonly downMs: number;
  /** The clock (tests replace it). */
  now: () => number = Date.now;

  constructor(@Inject(SITE_CONFIG) config: Pick<SiteConfig, 'peerReads'>) {
    this.downMs = config.peerReads.downMs;
  }

  /** Whether `site` failed to answer within the last `downMs`. */
  isDown(site: string): boolean {
    const until = this.downUntil.get(site);
    if (until === undefined) return false;
    if (until > this.now()) return true;
    this.downUntil.delete(site);
    return false;
  }

  /** `site` did not answer (no connection, or no answer's headers in time). */
  markDown(site: string): void {
    if (this.downMs > 0) this.downUntil.set(site, this.now() + this.downMs);
  }

  /** `site` answered: it is no longer tried last. */
  markUp(site: string): void {
    this.downUntil.delete(site);
  }

  /** The sites in the order to try them: those not down first, then those down; each group in the order given. */
  order(sites: readonly string[]): string[] {
    const up = sites.filter((s) => !this.isDown(s));
    return [...up, ...sites.filter((s) => !up.includes(s))];
  }

  /** The sites marked down now (for status pages and tests). */
  down(): string[] {
    return [...this.downUntil.keys()].filter((s) => this.isDown(s)).sort();
  }
}
