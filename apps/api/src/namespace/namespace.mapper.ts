import {
  formatMtime,
  type EntryDetailDto,
  type EntryDto,
  type EntryKind,
  type PermissionLevel,
  type TrashEntryDto,
} from '@tributary/shared';
import { idString, iso } from '../common/serialize';
import type { EntryRecord, TrashRecord } from './namespace.repository';

/** What clients see an entry as: a symbolic link is a data object row with a target. */
export function entryKind(e: EntryRecord): EntryKind {
  return e.kind === 'collection' ? 'collection' : e.linkTarget !== null ? 'symlink' : 'object';
}

export function toEntryDto(e: EntryRecord, access: PermissionLevel | null): EntryDto {
  const isObject = e.kind === 'object';
  return {
    kind: entryKind(e),
    id: idString(e.id),
    name: e.name,
    path: e.path,
    owner: e.owner,
    group: e.group,
    size: isObject ? Number(e.size) : 0,
    checksum: isObject ? `sha256:${e.checksum}` : null,
    contentType: isObject ? e.contentType : null,
    version: isObject ? e.version : null,
    site: isObject ? e.site : null,
    replicaCount: isObject ? e.replicaCount : 0,
    createdAt: iso(e.createdAt),
    modifiedAt: iso(e.updatedAt),
    mtime: formatMtime(e.mtimeNs),
    mode: e.mode,
    linkTarget: isObject ? e.linkTarget : null,
    access,
  };
}

export function toEntryDetailDto(e: EntryRecord, access: PermissionLevel | null): EntryDetailDto {
  return {
    ...toEntryDto(e, access),
    replicas:
      e.kind === 'object'
        ? e.replicas.map((r) => ({
            site: r.siteId,
            resource: r.resource,
            size: Number(r.size),
            checksum: `sha256:${r.checksum}`,
            status: r.status,
          }))
        : [],
  };
}

export function toTrashDto(t: TrashRecord): TrashEntryDto {
  return {
    id: idString(t.id),
    kind: t.symlink ? 'symlink' : t.kind,
    originalPath: t.originalPath,
    deletedBy: t.deletedBy,
    deletedAt: iso(t.createdAt),
    deletedAtSite: t.deletedAtSite,
    purgeAllowed: t.settledAt !== null,
  };
}
