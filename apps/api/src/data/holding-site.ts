import type { ObjectRecord, ReplicaRecord } from '../namespace/namespace.repository';

/**
 * The copies of an object that may be served: `good` and of the object's current bytes (a row that
 * says good for older bytes, such as a peer's late state, never is; docs/placement.md, "Copy states").
 */
export function servableCopies(object: ObjectRecord): ReplicaRecord[] {
  return object.replicas.filter((r) => r.status === 'good' && r.checksum === object.checksum);
}

/**
 * The site whose copy of an object's bytes decides on updates of them: of the sites with a good
 * copy of the current bytes, the first by id (every site computes the same); this site when none
 * has one. Cached copies (docs/caching.md) count only when no other copy is good: a site that keeps
 * the bytes because they were read there, and may evict them, does not take the updates over.
 */
export function holdingSite(object: ObjectRecord, localSite: string): string {
  const servable = servableCopies(object);
  const kept = servable.filter((r) => r.cached !== true);
  const good = (kept.length > 0 ? kept : servable).map((r) => r.siteId);
  return good.length === 0 ? localSite : good.sort()[0]!;
}

/**
 * Whether a partial update's base may still be the object's version: exactly, where the bytes are
 * held; elsewhere this site's catalog may lag (not newer than the base, and the same SHA-256 if the
 * same version), and the holding site decides.
 */
export function baseAcceptable(
  object: ObjectRecord,
  base: { version: number; sha256: string },
  heldHere: boolean,
): boolean {
  if (object.version === base.version) return object.checksum === base.sha256;
  return !heldHere && object.version < base.version;
}
