import { createHash } from 'node:crypto';
import { homeSite, rankSites, type PlacementSite } from './wanted';

/** What of an erasure rule decides where its shards go. */
export interface ErasureRuleChoice {
  k: number;
  m: number;
  /** site: each shard at another site; resource: at another storage resource (sites first). */
  domain: 'site' | 'resource';
  /** The sites to choose from; null: any site. */
  sites: readonly string[] | null;
}

/** A storage resource as shard placement sees it. */
export interface PlacementResource {
  id: string;
  siteId: string;
}

/** Where shard `index` of an object is wanted: a site, and for the resource domain a resource. */
export interface ShardTarget {
  index: number;
  site: string;
  /** The resource (catalog id) for the resource domain; null: the site's default resource. */
  resourceId: string | null;
}

/**
 * Where each of an object's k + m shards is wanted (docs/erasure.md): the rule's candidate sites
 * ranked as copies are (home site first, then rendezvous hash), shard i at the i-th. For the
 * resource domain every candidate site's resources are ranked by `md5(object:site:resource)` and
 * taken round by round (each site's first resource, then each site's second, ...), so shards spread
 * over sites before two share one. Null when there are fewer domains than shards (the rule is
 * refused when made, but sites may go from the catalog later). Every site computes the same.
 */
export function shardTargets(
  objectId: bigint,
  rule: ErasureRuleChoice,
  sites: readonly PlacementSite[],
  resources: readonly PlacementResource[] = [],
): ShardTarget[] | null {
  const n = rule.k + rule.m;
  const known = new Set(sites.map((s) => s.id));
  const candidates = rule.sites ? rule.sites.filter((s) => known.has(s)) : [...known];
  const ranked = rankSites(objectId, candidates, homeSite(objectId, sites));
  if (rule.domain === 'site') {
    if (ranked.length < n) return null;
    return ranked.slice(0, n).map((site, index) => ({ index, site, resourceId: null }));
  }
  const perSite = ranked.map((site) =>
    resources
      .filter((r) => r.siteId === site)
      .map((r) => ({ r, key: createHash('md5').update(`${objectId}:${site}:${r.id}`).digest('hex') }))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
      .map((x) => x.r),
  );
  const out: ShardTarget[] = [];
  for (let round = 0; out.length < n; round += 1) {
    let any = false;
    for (const list of perSite) {
      const r = list[round];
      if (!r) continue;
      any = true;
      if (out.length < n) out.push({ index: out.length, site: r.siteId, resourceId: r.id });
    }
    if (!any) return null;
  }
  return out;
}

/** How many failure domains a rule has to place shards in (to refuse a rule that cannot be met). */
export function erasureDomains(
  rule: Pick<ErasureRuleChoice, 'domain' | 'sites'>,
  siteIds: readonly string[],
  resources: readonly PlacementResource[],
): number {
  const candidates = new Set(rule.sites ? rule.sites.filter((s) => siteIds.includes(s)) : siteIds);
  if (rule.domain === 'site') return candidates.size;
  return resources.filter((r) => candidates.has(r.siteId)).length;
}
