import { createHash } from 'node:crypto';

/** A site as placement sees it: its id and the range of catalog ids it hands out. */
export interface PlacementSite {
  id: string;
  /** First id of the site's range (inclusive). */
  idRangeStart: bigint;
  /** Last id of the site's range (inclusive). */
  idRangeEnd: bigint;
}

/** What of a rule decides where copies go. */
export interface PlacementRuleChoice {
  copies: number;
  /** The sites to choose from; null: any site. */
  sites: readonly string[] | null;
}

/** The site whose id range holds `objectId`: where the object was created (undefined: none). */
export function homeSite(objectId: bigint, sites: readonly PlacementSite[]): string | undefined {
  return sites.find((s) => s.idRangeStart <= objectId && objectId <= s.idRangeEnd)?.id;
}

/**
 * The rendezvous key of an object at a site: `md5(objectId || ':' || siteId)` in hex, as SQL's
 * `md5(o.id::text || ':' || s.id)` computes it (compared byte-wise, `COLLATE "C"`).
 */
export function rendezvousKey(objectId: bigint | string, siteId: string): string {
  return createHash('md5').update(`${objectId}:${siteId}`).digest('hex');
}

/**
 * Candidate sites in the order placement takes them: the home site first (when it is a
 * candidate), then by rendezvous key ascending. Every site ranks the same from the same catalog.
 */
export function rankSites(
  objectId: bigint,
  candidates: readonly string[],
  home: string | undefined,
): string[] {
  const unique = [...new Set(candidates)];
  const keyed = unique.map((id) => ({ id, key: rendezvousKey(objectId, id) }));
  keyed.sort((a, b) => {
    if (a.id === home) return -1;
    if (b.id === home) return 1;
    return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
  });
  return keyed.map((k) => k.id);
}

/**
 * An object's wanted sites (docs/placement.md, "Placement rules"): over the live rules that cover
 * it, each rule's first `copies` candidate sites (its `sites` that exist, or every site) ranked by
 * `rankSites`; the union, in rank order. Empty when no rule covers the object (it is not managed).
 */
export function wantedSites(
  objectId: bigint,
  rules: readonly PlacementRuleChoice[],
  sites: readonly PlacementSite[],
): string[] {
  const known = new Set(sites.map((s) => s.id));
  const home = homeSite(objectId, sites);
  const wanted = new Set<string>();
  for (const rule of rules) {
    const candidates = rule.sites ? rule.sites.filter((s) => known.has(s)) : [...known];
    for (const id of rankSites(objectId, candidates, home).slice(0, Math.max(0, rule.copies))) wanted.add(id);
  }
  return rankSites(objectId, [...wanted], home);
}
