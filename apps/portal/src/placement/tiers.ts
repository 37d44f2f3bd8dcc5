import type { ReplicaDto } from '@tributary/shared';

/**
 * A copy's tiers on a compound resource (docs/storage.md, "Compound resources") in people's words:
 * whether the site's cache holds it or only its archive, whether the archive copy is made and
 * verified yet, and a staging from the archive with its progress. Empty for other copies.
 */
export function tierLabel(tier: ReplicaDto['tier']): string {
  if (!tier) return '';
  const parts = [tier.cache ? 'in the cache' : 'in the archive only'];
  parts.push(
    tier.archive === 'archived' ? 'archived' : tier.archiveError ? 'archiving failed, retrying' : 'archiving',
  );
  if (tier.staging) {
    const { bytesStaged, bytesTotal } = tier.staging;
    parts.push(`staging ${bytesTotal > 0 ? Math.floor((100 * bytesStaged) / bytesTotal) : 0}%`);
  }
  return parts.join(', ');
}

/** Whether the tiers are still changing by themselves (archiving or staging): worth polling. */
export function tiersMoving(replicas: readonly ReplicaDto[] | undefined): boolean {
  return (replicas ?? []).some((r) => r.tier && (r.tier.archive === 'pending' || r.tier.staging !== null));
}

/** Whether this site holds the object only in a compound resource's archive (a read stages it first). */
export function archiveOnly(replicas: readonly ReplicaDto[] | undefined): boolean {
  return (replicas ?? []).some((r) => r.tier !== undefined && !r.tier.cache);
}
