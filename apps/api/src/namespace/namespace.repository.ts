import { Injectable } from '@nestjs/common';
import { Prisma } from '@prisma/client';
import { createHash } from 'node:crypto';
import {
  DEFAULT_MODES,
  escapeLike,
  joinPath,
  splitMtime,
  SYMLINK_CONTENT_TYPE,
  type CopyState,
  type PermissionLevel,
} from '@tributary/shared';
import { PrismaService } from '../database/prisma.service';
import { purgeWaitsFor } from '../replication/catalog/trash-settlement';
import { LOCK_NAME_SQL } from './name-lock';

export type Tx = Prisma.TransactionClient;

/** What a purge did: removed the rows (bytes to remove after the commit), or found nothing to remove. */
export type PurgeOutcome =
  { kind: 'purged'; replicas: ReplicaRecord[] } | { kind: 'rescued' } | { kind: 'liveInside'; path: string };

export interface CollectionRecord {
  kind: 'collection';
  id: bigint;
  parentId: bigint | null;
  name: string;
  path: string;
  ownerId: bigint;
  owner: string;
  group: string | null;
  createdAt: Date;
  updatedAt: Date;
  /** The file time (POSIX mtime), nanoseconds since 1970. */
  mtimeNs: bigint;
  /** Permission bits (0..0o7777). */
  mode: number;
}

export interface ReplicaRecord {
  siteId: string;
  resourceId: bigint;
  resource: string;
  physicalPath: string;
  size: bigint;
  checksum: string;
  status: CopyState;
  /** A cached copy (docs/caching.md): kept because the object was read at its site. */
  cached?: boolean;
}

export interface ObjectRecord {
  kind: 'object';
  id: bigint;
  collectionId: bigint;
  name: string;
  path: string;
  ownerId: bigint;
  owner: string;
  group: string | null;
  size: bigint;
  checksum: string;
  contentType: string;
  version: number;
  createdAt: Date;
  updatedAt: Date;
  mtimeNs: bigint;
  mode: number;
  /**
   * Set for a symbolic link: a data object row without replicas whose size and checksum are its
   * target's (docs/attributes.md). Everything that names, moves, trashes, grants or replicates
   * objects treats it as one; only the data routes refuse it.
   */
  linkTarget: string | null;
  replicaCount: number;
  /** Site of the first good replica: where the bytes are read from. */
  site: string | null;
  /** Filled by `findObject`; listings carry only the count and site. */
  replicas: ReplicaRecord[];
}

export type EntryRecord = CollectionRecord | ObjectRecord;

export type SortKey = 'name' | 'size' | 'modified';

/** Position in a listing: kind rank (collections first), sort value, name, id. */
export interface ListCursor {
  k: 0 | 1;
  v: string;
  n: string;
  id: string;
}

export interface TrashRecord {
  id: bigint;
  kind: 'collection' | 'object';
  collectionId: bigint | null;
  objectId: bigint | null;
  originalPath: string;
  deletedById: bigint;
  deletedBy: string;
  deletedAtSite: string;
  createdAt: Date;
  settledAt: Date | null;
  /** The trashed object is a symbolic link. */
  symlink: boolean;
}

export interface GrantRecord {
  collectionId: bigint | null;
  objectId: bigint | null;
  path: string;
  user: string | null;
  group: string | null;
  level: PermissionLevel;
  recursive: boolean;
}

type ReplicaRow = Prisma.ReplicaGetPayload<{ include: { resource: { select: { name: true } } } }>;

const toReplicaRecord = (r: ReplicaRow): ReplicaRecord => ({
  siteId: r.siteId,
  resourceId: r.resourceId,
  resource: r.resource.name,
  physicalPath: r.physicalPath,
  size: r.size,
  checksum: r.checksum,
  status: r.status,
});

/** The columns every entry query selects, collection or object: its name, owner, group and times. */
interface EntrySqlColumns {
  id: bigint;
  name: string;
  owner_id: bigint;
  owner: string;
  group_name: string | null;
  created_at: Date;
  updated_at: Date;
  mtime_ns: bigint;
  mode: number;
}

/** The owner, group, times and mode of an entry row, as its record holds them. */
function entryFields(r: EntrySqlColumns) {
  return {
    ownerId: r.owner_id,
    owner: r.owner,
    group: r.group_name,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    mtimeNs: BigInt(r.mtime_ns),
    mode: Number(r.mode),
  };
}

/** A row of `OBJECT_SELECT`: an object with its collection's path, owner, group and replicas. */
interface ObjectSqlRow {
  id: bigint;
  collection_id: bigint;
  name: string;
  size: bigint;
  checksum: string;
  content_type: string;
  owner_id: bigint;
  version: number;
  created_at: Date;
  updated_at: Date;
  mtime_ns: bigint;
  mode: number;
  link_target: string | null;
  collection_path: string;
  owner: string | null;
  group_name: string | null;
  /** JSON: ids and sizes as text (bigints do not survive JSON numbers). */
  replicas: string | ReplicaJson[];
}

interface ReplicaJson {
  siteId: string;
  resourceId: string;
  resource: string;
  physicalPath: string;
  size: string;
  checksum: string;
  status: CopyState;
  cached?: boolean;
}

/**
 * An object with everything its record needs, in one statement: its replicas (oldest first, as
 * JSON) and the names of its owner and group. Reading an object's bytes starts with this, so it
 * is one round trip rather than one per relation.
 */
const OBJECT_SELECT = Prisma.sql`
  SELECT o.id, o.collection_id, o.name, o.size, o.checksum, o.content_type, o.owner_id, o.version,
         o.created_at, o.updated_at, o.mtime_s * 1000000000 + o.mtime_nsec AS mtime_ns, o.mode, o.link_target,
         c.path AS collection_path, u.username AS owner, g.name AS group_name,
         COALESCE((SELECT json_agg(json_build_object(
                            'siteId', r.site_id, 'resourceId', r.resource_id::text, 'resource', s.name,
                            'physicalPath', r.physical_path, 'size', r.size::text, 'checksum', r.checksum,
                            'status', r.status, 'cached', r.cached)
                          ORDER BY r.created_at, r.id)
                     FROM replicas r JOIN storage_resources s ON s.id = r.resource_id
                    WHERE r.object_id = o.id), '[]') AS replicas
    FROM data_objects o
    JOIN collections c ON c.id = o.collection_id
    LEFT JOIN users u ON u.id = o.owner_id
    LEFT JOIN project_groups g ON g.id = o.group_id`;

function toObjectRecord(row: ObjectSqlRow): ObjectRecord {
  const replicas =
    typeof row.replicas === 'string' ? (JSON.parse(row.replicas) as ReplicaJson[]) : row.replicas;
  return {
    kind: 'object',
    id: row.id,
    collectionId: row.collection_id,
    name: row.name,
    path: row.collection_path === '/' ? `/${row.name}` : `${row.collection_path}/${row.name}`,
    ownerId: row.owner_id,
    owner: row.owner ?? '?',
    group: row.group_name,
    size: row.size,
    checksum: row.checksum,
    contentType: row.content_type,
    version: Number(row.version),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    mtimeNs: BigInt(row.mtime_ns),
    mode: Number(row.mode),
    linkTarget: row.link_target,
    replicaCount: replicas.length,
    site: replicas.find((r) => r.status === 'good')?.siteId ?? null,
    replicas: replicas.map((r) => ({
      siteId: r.siteId,
      resourceId: BigInt(r.resourceId),
      resource: r.resource,
      physicalPath: r.physicalPath,
      size: BigInt(r.size),
      checksum: r.checksum,
      status: r.status,
      cached: r.cached === true,
    })),
  };
}

/**
 * A file time in nanoseconds as the catalog's columns hold it (`mtime_s`, `mtime_nsec`: a timespec,
 * so that no value outgrows what a JSON number keeps between sites); nothing when not given.
 */
export function timespec(ns: bigint | undefined): { mtimeS?: bigint; mtimeNsec?: number } {
  if (ns === undefined) return {};
  const { seconds, nanoseconds } = splitMtime(ns);
  return { mtimeS: seconds, mtimeNsec: nanoseconds };
}

@Injectable()
export class NamespaceRepository {
  constructor(private readonly prisma: PrismaService) {}

  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.prisma.$transaction(fn, { timeout: 60_000, maxWait: 30_000 });
  }

  async findCollection(path: string, tx: Tx = this.prisma): Promise<CollectionRecord | null> {
    const rows = await tx.$queryRaw<
      (EntrySqlColumns & { parent_id: bigint | null; path: string })[]
    >(Prisma.sql`
      SELECT c.id, c.parent_id, c.name, c.path, c.owner_id, u.username AS owner, g.name AS group_name,
             c.created_at, c.updated_at, c.mtime_s * 1000000000 + c.mtime_nsec AS mtime_ns, c.mode
        FROM collections c JOIN users u ON u.id = c.owner_id LEFT JOIN project_groups g ON g.id = c.group_id
       WHERE c.path = ${path} AND c.trash_id = 0`);
    const r = rows[0];
    return r
      ? {
          kind: 'collection',
          id: r.id,
          parentId: r.parent_id,
          name: r.name,
          path: r.path,
          ...entryFields(r),
        }
      : null;
  }

  /** The live object `name` in the live collection at `collectionPath`, in one statement. */
  async findObjectAt(
    collectionPath: string,
    name: string,
    tx: Tx = this.prisma,
  ): Promise<ObjectRecord | null> {
    const rows = await tx.$queryRaw<ObjectSqlRow[]>(
      Prisma.sql`${OBJECT_SELECT}
        WHERE c.path = ${collectionPath} AND c.trash_id = 0 AND o.name = ${name} AND o.trash_id = 0`,
    );
    return rows[0] ? toObjectRecord(rows[0]) : null;
  }

  /** Many objects of one collection by name, in one round of queries (batch reads); missing names are absent. */
  async findObjects(
    collection: { id: bigint; path: string },
    names: string[],
  ): Promise<Map<string, ObjectRecord>> {
    if (names.length === 0) return new Map();
    const rows = await this.prisma.$queryRaw<ObjectSqlRow[]>(
      Prisma.sql`${OBJECT_SELECT}
        WHERE o.collection_id = ${collection.id} AND o.name = ANY(${names}) AND o.trash_id = 0`,
    );
    return new Map(rows.map((row) => [row.name, toObjectRecord(row)]));
  }

  /**
   * Holds the name `name` in collection `id` until the transaction ends: the same advisory lock the
   * ingest path takes (see name-lock.ts), so names are unique across collections and objects.
   */
  async lockName(tx: Tx, id: bigint, name: string): Promise<void> {
    await tx.$executeRawUnsafe(LOCK_NAME_SQL, id.toString(), name);
  }

  /** Whether a live collection or object named `name` sits in the collection. */
  async nameTaken(tx: Tx, collectionId: bigint, name: string): Promise<'collection' | 'object' | null> {
    const c = await tx.collection.findFirst({
      where: { parentId: collectionId, name, trashId: 0 },
      select: { id: true },
    });
    if (c) return 'collection';
    const o = await tx.dataObject.findFirst({
      where: { collectionId, name, trashId: 0 },
      select: { id: true },
    });
    return o ? 'object' : null;
  }

  async createCollection(
    tx: Tx,
    data: { parentId: bigint; name: string; path: string; ownerId: bigint; groupId: bigint | null },
    attributes: { mode?: number; mtimeNs?: bigint } = {},
  ): Promise<void> {
    await tx.collection.create({
      data: { ...data, ...timespec(attributes.mtimeNs), mode: attributes.mode, createdBy: data.ownerId },
    });
  }

  /**
   * A symbolic link: a data object row without replicas, whose size and checksum are its target's
   * (so listings, sorting and conflict records need nothing new) and whose mode is 0o777.
   */
  async createSymlink(
    tx: Tx,
    data: {
      collectionId: bigint;
      name: string;
      target: string;
      ownerId: bigint;
      groupId: bigint | null;
      mtimeNs?: bigint;
    },
  ): Promise<bigint> {
    const bytes = Buffer.from(data.target, 'utf8');
    const created = await tx.dataObject.create({
      data: {
        collectionId: data.collectionId,
        name: data.name,
        size: BigInt(bytes.length),
        checksum: createHash('sha256').update(bytes).digest('hex'),
        contentType: SYMLINK_CONTENT_TYPE,
        ownerId: data.ownerId,
        groupId: data.groupId,
        mode: DEFAULT_MODES.symlink,
        linkTarget: data.target,
        createdBy: data.ownerId,
        ...timespec(data.mtimeNs),
      },
      select: { id: true },
    });
    return created.id;
  }

  /**
   * Sets a live entry's file time and/or permission bits (a change of its catalog record, which
   * replicates). False when the entry is no longer live (moved to the trash or purged meanwhile).
   */
  async setAttributes(
    entry: { kind: 'collection' | 'object'; id: bigint },
    attributes: { mtimeNs?: bigint; mode?: number },
    by: bigint,
  ): Promise<boolean> {
    const data = { ...timespec(attributes.mtimeNs), mode: attributes.mode, updatedBy: by };
    const where = { id: entry.id, trashId: 0n };
    const res =
      entry.kind === 'collection'
        ? await this.prisma.collection.updateMany({ where, data })
        : await this.prisma.dataObject.updateMany({ where, data });
    return res.count === 1;
  }

  async counts(collectionId: bigint): Promise<{ collections: number; objects: number }> {
    const [collections, objects] = await Promise.all([
      this.prisma.collection.count({ where: { parentId: collectionId, trashId: 0 } }),
      this.prisma.dataObject.count({ where: { collectionId, trashId: 0 } }),
    ]);
    return { collections, objects };
  }

  /**
   * One page of a collection's children: collections first, then objects, each ordered by the sort
   * key, then name, then id. Keyset pagination on indexes (parent, trash_id, key), so the first page
   * of a collection with 100,000 children costs one short index scan per table.
   */
  async listChildren(
    parent: { id: bigint; path: string },
    sort: SortKey,
    order: 'asc' | 'desc',
    limit: number,
    cursor: ListCursor | null,
  ): Promise<EntryRecord[]> {
    const out: EntryRecord[] = [];
    if (!cursor || cursor.k === 0) {
      out.push(...(await this.pageOf('collections', parent, sort, order, limit, cursor)));
    }
    if (out.length < limit) {
      const objectCursor = cursor && cursor.k === 1 ? cursor : null;
      out.push(...(await this.pageOf('data_objects', parent, sort, order, limit - out.length, objectCursor)));
    }
    return out;
  }

  /**
   * The children at positions offset .. offset+limit-1 of the same order as listChildren, given the
   * counts of live child collections and objects. Each table's part is read from whichever end of
   * that table's listing is nearer (the reversed order with the mirrored offset, rows then turned
   * back), so the end of a collection of 100,000 costs no more than its start: an index walk over at
   * most half the entries, never a page per 500 entries in between.
   */
  async listChildrenAt(
    parent: { id: bigint; path: string },
    sort: SortKey,
    order: 'asc' | 'desc',
    limit: number,
    offset: number,
    counts: { collections: number; objects: number },
  ): Promise<EntryRecord[]> {
    const out: EntryRecord[] = [];
    if (offset < counts.collections) {
      const n = Math.min(limit, counts.collections - offset);
      out.push(...(await this.sliceOf('collections', parent, sort, order, offset, n, counts.collections)));
    }
    const objectOffset = Math.max(0, offset - counts.collections);
    const rest = Math.min(limit - out.length, counts.objects - objectOffset);
    if (rest > 0) {
      out.push(
        ...(await this.sliceOf('data_objects', parent, sort, order, objectOffset, rest, counts.objects)),
      );
    }
    return out;
  }

  private async sliceOf(
    table: 'collections' | 'data_objects',
    parent: { id: bigint; path: string },
    sort: SortKey,
    order: 'asc' | 'desc',
    offset: number,
    limit: number,
    size: number,
  ): Promise<EntryRecord[]> {
    const fromEnd = size - offset - limit;
    if (fromEnd < offset) {
      const reversed = order === 'asc' ? 'desc' : 'asc';
      return (await this.pageOf(table, parent, sort, reversed, limit, null, fromEnd)).reverse();
    }
    return this.pageOf(table, parent, sort, order, limit, null, offset);
  }

  private async pageOf(
    table: 'collections' | 'data_objects',
    parent: { id: bigint; path: string },
    sort: SortKey,
    order: 'asc' | 'desc',
    limit: number,
    cursor: ListCursor | null,
    offset = 0,
  ): Promise<EntryRecord[]> {
    const isObjects = table === 'data_objects';
    const parentColumn = Prisma.raw(isObjects ? 'e.collection_id' : 'e.parent_id');
    const keyExpr = Prisma.raw(
      sort === 'size'
        ? isObjects
          ? 'e.size'
          : '0::bigint'
        : sort === 'modified'
          ? 'e.updated_at'
          : 'e.name',
    );
    const dir = Prisma.raw(order === 'asc' ? 'ASC' : 'DESC');
    const cmp = Prisma.raw(order === 'asc' ? '>' : '<');
    let after = Prisma.empty;
    if (cursor) {
      const value =
        sort === 'size'
          ? Prisma.sql`${BigInt(cursor.v)}::bigint`
          : sort === 'modified'
            ? Prisma.sql`${cursor.v}::timestamptz`
            : Prisma.sql`${cursor.v}::text`;
      after = Prisma.sql`AND (${keyExpr}, e.name, e.id) ${cmp} (${value}, ${cursor.n}::text, ${BigInt(cursor.id)}::bigint)`;
    }
    const objectColumns = isObjects
      ? Prisma.sql`e.size, e.checksum, e.content_type, e.version, e.link_target,
          (SELECT count(*) FROM replicas r WHERE r.object_id = e.id)::int AS replica_count,
          (SELECT r.site_id FROM replicas r WHERE r.object_id = e.id AND r.status = 'good'
            ORDER BY r.created_at LIMIT 1) AS site`
      : Prisma.sql`0::bigint AS size, NULL AS checksum, NULL AS content_type, NULL::int AS version,
          NULL::text AS link_target, 0 AS replica_count, NULL AS site`;
    const rows = await this.prisma.$queryRaw<
      (EntrySqlColumns & {
        size: bigint;
        checksum: string | null;
        content_type: string | null;
        version: number | null;
        link_target: string | null;
        replica_count: number;
        site: string | null;
      })[]
    >(Prisma.sql`
      SELECT e.id, e.name, e.owner_id, u.username AS owner, g.name AS group_name, e.created_at, e.updated_at,
             e.mtime_s * 1000000000 + e.mtime_nsec AS mtime_ns, e.mode, ${objectColumns}
        FROM ${Prisma.raw(table)} e
        JOIN users u ON u.id = e.owner_id
        LEFT JOIN project_groups g ON g.id = e.group_id
       WHERE ${parentColumn} = ${parent.id} AND e.trash_id = 0 ${after}
       ORDER BY ${keyExpr} ${dir}, e.name ${dir}, e.id ${dir}
       LIMIT ${limit} OFFSET ${offset}`);
    const childPath = (name: string): string => (parent.path === '/' ? `/${name}` : `${parent.path}/${name}`);
    return rows.map((r): EntryRecord =>
      isObjects
        ? {
            kind: 'object',
            id: r.id,
            collectionId: parent.id,
            name: r.name,
            path: childPath(r.name),
            ...entryFields(r),
            size: r.size,
            checksum: r.checksum ?? '',
            contentType: r.content_type ?? 'application/octet-stream',
            version: r.version ?? 1,
            linkTarget: r.link_target,
            replicaCount: r.replica_count,
            site: r.site,
            replicas: [],
          }
        : {
            kind: 'collection',
            id: r.id,
            parentId: parent.id,
            name: r.name,
            path: childPath(r.name),
            ...entryFields(r),
          },
    );
  }

  /** Direct grants to the user or their groups on the given entries, highest level per entry. */
  async directLevels(
    collectionIds: bigint[],
    objectIds: bigint[],
    userId: bigint,
    groupIds: bigint[],
  ): Promise<Map<string, PermissionLevel>> {
    if (collectionIds.length + objectIds.length === 0) return new Map();
    const rows = await this.prisma.$queryRaw<
      { cid: bigint | null; oid: bigint | null; level: PermissionLevel }[]
    >(Prisma.sql`
      SELECT collection_id AS cid, object_id AS oid, max(level)::text AS level FROM permissions
       WHERE (collection_id = ANY(${collectionIds}::bigint[]) OR object_id = ANY(${objectIds}::bigint[]))
         AND (user_id = ${userId} OR group_id = ANY(${groupIds.length ? groupIds : [0n]}::bigint[]))
       GROUP BY collection_id, object_id`);
    return new Map(rows.map((r) => [r.cid !== null ? `c${r.cid}` : `o${r.oid}`, r.level]));
  }

  /** Renames/moves a collection and rewrites the paths of everything below it. */
  async moveCollection(
    tx: Tx,
    c: CollectionRecord,
    newParentId: bigint,
    newName: string,
    newPath: string,
    by: bigint,
  ): Promise<void> {
    await tx.$executeRaw`
      UPDATE collections SET path = ${newPath} || substr(path, ${c.path.length + 1}), updated_at = now(), updated_by = ${by}
       WHERE trash_id = 0 AND left(path, ${c.path.length + 1}) = ${c.path + '/'}`;
    await tx.collection.update({
      where: { id: c.id },
      data: { parentId: newParentId, name: newName, path: newPath, updatedBy: by },
    });
  }

  async moveObject(tx: Tx, id: bigint, newCollectionId: bigint, newName: string, by: bigint): Promise<void> {
    await tx.dataObject.update({
      where: { id },
      data: { collectionId: newCollectionId, name: newName, updatedBy: by },
    });
  }

  /** Moves an entry (with its whole subtree for a collection) into the trash. */
  async trash(tx: Tx, entry: EntryRecord, by: bigint, siteId: string): Promise<bigint> {
    if (entry.kind === 'collection') {
      // Waits for transactions adding to the subtree (they hold their parent FOR SHARE) and makes
      // later ones find their parent gone.
      await tx.$queryRaw`
        SELECT id FROM collections
         WHERE trash_id = 0 AND (path = ${entry.path} OR left(path, ${entry.path.length + 1}) = ${entry.path + '/'})
           FOR UPDATE`;
    }
    const t = await tx.trashEntry.create({
      data: {
        kind: entry.kind,
        collectionId: entry.kind === 'collection' ? entry.id : null,
        objectId: entry.kind === 'object' ? entry.id : null,
        originalPath: entry.path,
        deletedById: by,
        deletedAtSite: siteId,
        createdBy: by,
      },
      select: { id: true },
    });
    if (entry.kind === 'object') {
      await tx.dataObject.update({ where: { id: entry.id }, data: { trashId: t.id, updatedBy: by } });
    } else {
      await tx.$executeRaw`
        UPDATE data_objects SET trash_id = ${t.id}, updated_by = ${by}
         WHERE trash_id = 0 AND collection_id IN (
           SELECT id FROM collections WHERE trash_id = 0 AND (path = ${entry.path} OR left(path, ${entry.path.length + 1}) = ${entry.path + '/'}))`;
      await tx.$executeRaw`
        UPDATE collections SET trash_id = ${t.id}, updated_by = ${by}
         WHERE trash_id = 0 AND (path = ${entry.path} OR left(path, ${entry.path.length + 1}) = ${entry.path + '/'})`;
    }
    return t.id;
  }

  async findTrash(id: bigint, tx: Tx = this.prisma): Promise<TrashRecord | null> {
    const row = await tx.trashEntry.findUnique({ where: { id } });
    if (!row) return null;
    const user = await tx.user.findUnique({ where: { id: row.deletedById }, select: { username: true } });
    const object = row.objectId
      ? await tx.dataObject.findUnique({ where: { id: row.objectId }, select: { linkTarget: true } })
      : null;
    return { ...row, deletedBy: user?.username ?? '?', symlink: (object?.linkTarget ?? null) !== null };
  }

  /** The trash entry, locked until the transaction ends (restore and purge of one entry serialise). */
  async lockTrash(id: bigint, tx: Tx): Promise<TrashRecord | null> {
    const locked = await tx.$queryRaw<
      { id: bigint }[]
    >`SELECT id FROM trash_entries WHERE id = ${id} FOR UPDATE`;
    return locked.length ? this.findTrash(id, tx) : null;
  }

  /**
   * Of `peers`, those that have not yet applied this site's delete behind a trash entry: the last
   * logged change of the entry against each peer's acknowledged applied seq. A delete not yet
   * extracted into the log is waiting for every peer.
   */
  async peersYetToApplyDelete(trashId: bigint, peers: string[], tx: Tx): Promise<string[]> {
    if (peers.length === 0) return [];
    const rows = await tx.$queryRaw<{ peer_id: string }[]>`
      WITH logged AS (
        SELECT max(l.seq) AS seq FROM repl_log l, jsonb_array_elements(l.changes) x
         WHERE x ->> 't' = 'trash_entries' AND x ->> 'k' = ${trashId.toString()}),
      unlogged AS (
        SELECT EXISTS (SELECT 1 FROM repl_changes WHERE tbl = 'trash_entries' AND row_key = ${trashId.toString()}) AS yes)
      SELECT p.peer_id FROM unnest(${peers}::text[]) AS p(peer_id)
        LEFT JOIN repl_peers r USING (peer_id), logged, unlogged
       WHERE unlogged.yes OR logged.seq IS NULL OR COALESCE(r.peer_applied_seq, 0) < logged.seq
       ORDER BY p.peer_id`;
    return rows.map((r) => r.peer_id);
  }

  /**
   * Locks an entry about to be moved and tells whether it is still where the caller found it
   * (a concurrent move or delete would make a path rewrite from the old place wrong).
   */
  async lockUnchanged(tx: Tx, entry: EntryRecord): Promise<boolean> {
    if (entry.kind === 'collection') {
      const rows = await tx.$queryRaw<{ path: string }[]>`
        SELECT path FROM collections WHERE id = ${entry.id} AND trash_id = 0 FOR UPDATE`;
      return rows[0]?.path === entry.path;
    }
    const rows = await tx.$queryRaw<{ collection_id: bigint; name: string }[]>`
      SELECT collection_id, name FROM data_objects WHERE id = ${entry.id} AND trash_id = 0 FOR UPDATE`;
    return rows[0]?.collection_id === entry.collectionId && rows[0]?.name === entry.name;
  }

  /** Holds a collection (FOR SHARE) while something is added to it; its current path, or null if it is no longer live. */
  async lockLive(tx: Tx, id: bigint): Promise<string | null> {
    const rows = await tx.$queryRaw<{ path: string }[]>`
      SELECT path FROM collections WHERE id = ${id} AND trash_id = 0 FOR SHARE`;
    return rows[0]?.path ?? null;
  }

  async listTrash(
    deletedById: bigint | null,
    within: string | null,
    limit: number,
    beforeId: bigint | null,
  ): Promise<{ items: TrashRecord[]; total: number }> {
    // Only entries that still hold what they took: an entry whose record was rescued by an update
    // made elsewhere stays in the catalog (every site keeps the same entries) but holds nothing.
    const conditions: Prisma.Sql[] = [
      Prisma.sql`(EXISTS (SELECT 1 FROM data_objects o WHERE o.id = t.object_id AND o.trash_id = t.id)
               OR EXISTS (SELECT 1 FROM collections c WHERE c.id = t.collection_id AND c.trash_id = t.id))`,
    ];
    if (deletedById !== null) conditions.push(Prisma.sql`t.deleted_by_id = ${deletedById}`);
    if (within && within !== '/') {
      conditions.push(
        Prisma.sql`(t.original_path = ${within} OR t.original_path LIKE ${escapeLike(within) + '/%'})`,
      );
    }
    const where = Prisma.join(conditions, ' AND ');
    const page = beforeId === null ? Prisma.sql`` : Prisma.sql`AND t.id < ${beforeId}`;
    const [rows, counted] = await Promise.all([
      this.prisma.$queryRaw<
        Array<{
          id: bigint;
          kind: 'collection' | 'object';
          collection_id: bigint | null;
          object_id: bigint | null;
          original_path: string;
          deleted_by_id: bigint;
          deleted_by: string | null;
          deleted_at_site: string;
          created_at: Date;
          settled_at: Date | null;
          symlink: boolean;
        }>
      >`SELECT t.id, t.kind::text AS kind, t.collection_id, t.object_id, t.original_path, t.deleted_by_id,
               u.username AS deleted_by, t.deleted_at_site, t.created_at, t.settled_at,
               EXISTS (SELECT 1 FROM data_objects o WHERE o.id = t.object_id AND o.link_target IS NOT NULL) AS symlink
          FROM trash_entries t LEFT JOIN users u ON u.id = t.deleted_by_id
         WHERE ${where} ${page}
         ORDER BY t.id DESC LIMIT ${limit}`,
      this.prisma.$queryRaw<Array<{ n: bigint }>>`SELECT count(*) AS n FROM trash_entries t WHERE ${where}`,
    ]);
    return {
      items: rows.map((r) => ({
        id: r.id,
        kind: r.kind,
        collectionId: r.collection_id,
        objectId: r.object_id,
        originalPath: r.original_path,
        deletedById: r.deleted_by_id,
        deletedBy: r.deleted_by ?? '?',
        deletedAtSite: r.deleted_at_site,
        createdAt: r.created_at,
        settledAt: r.settled_at,
        symlink: r.symlink,
      })),
      total: Number(counted[0]?.n ?? 0),
    };
  }

  /**
   * Brings a trash entry's rows back under the collection now at the original parent path (which
   * may be another row than before, if the old parent was moved or replaced since).
   */
  async restore(tx: Tx, trash: TrashRecord, parentId: bigint, by: bigint): Promise<void> {
    if (trash.kind === 'object' && trash.objectId) {
      await tx.dataObject.update({ where: { id: trash.objectId }, data: { collectionId: parentId } });
    } else if (trash.collectionId) {
      await tx.collection.update({ where: { id: trash.collectionId }, data: { parentId } });
    }
    await tx.dataObject.updateMany({ where: { trashId: trash.id }, data: { trashId: 0, updatedBy: by } });
    await tx.collection.updateMany({ where: { trashId: trash.id }, data: { trashId: 0, updatedBy: by } });
    await tx.trashEntry.delete({ where: { id: trash.id } });
  }

  /**
   * Deletes a trash entry's rows for good, with everything that lived inside a trashed collection
   * (also what was trashed separately before it, whose trash entries go too). Only what is still in
   * the trash is removed: an entry whose record an update made elsewhere rescued holds nothing
   * (`rescued`), and a folder with something live inside it again is left alone (`liveInside`).
   * Returns the replicas whose bytes the caller removes after the commit.
   */
  async purge(tx: Tx, trash: TrashRecord): Promise<PurgeOutcome> {
    let objectIds: bigint[] = [];
    let collectionIds: bigint[] = [];
    if (trash.kind === 'object' && trash.objectId) {
      const held = await tx.$queryRaw<{ id: bigint }[]>`
        SELECT id FROM data_objects WHERE id = ${trash.objectId} AND trash_id = ${trash.id} FOR UPDATE`;
      if (held.length === 0) return { kind: 'rescued' };
      objectIds = [trash.objectId];
    } else if (trash.collectionId) {
      const held = await tx.$queryRaw<{ id: bigint }[]>`
        SELECT id FROM collections WHERE id = ${trash.collectionId} AND trash_id = ${trash.id} FOR UPDATE`;
      if (held.length === 0) return { kind: 'rescued' };
      // Every descendant, live or not: a live one (brought back by a rescue of its own entry) would
      // be left without its parent.
      const subtree = await tx.$queryRaw<{ id: bigint; depth: number }[]>`
        WITH RECURSIVE subtree AS (
          SELECT id, 0 AS depth FROM collections WHERE id = ${trash.collectionId}
          UNION ALL
          SELECT c.id, s.depth + 1 FROM collections c JOIN subtree s ON c.parent_id = s.id
        ) SELECT id, depth FROM subtree ORDER BY depth DESC`;
      collectionIds = subtree.map((r) => r.id);
      const collections = await tx.$queryRaw<{ id: bigint; path: string; trash_id: bigint }[]>`
        SELECT id, path, trash_id FROM collections WHERE id = ANY(${collectionIds}::bigint[]) ORDER BY id FOR UPDATE`;
      const objects = await tx.$queryRaw<
        { id: bigint; name: string; collection_id: bigint; trash_id: bigint }[]
      >`
        SELECT id, name, collection_id, trash_id FROM data_objects
         WHERE collection_id = ANY(${collectionIds}::bigint[]) ORDER BY id FOR UPDATE`;
      const liveCollection = collections.find((c) => c.trash_id === 0n);
      if (liveCollection) return { kind: 'liveInside', path: liveCollection.path };
      const liveObject = objects.find((o) => o.trash_id === 0n);
      if (liveObject) {
        const parent = collections.find((c) => c.id === liveObject.collection_id);
        return { kind: 'liveInside', path: joinPath(parent?.path ?? '/', liveObject.name) };
      }
      objectIds = objects.map((o) => o.id);
    }
    const replicas = await tx.replica.findMany({
      where: { objectId: { in: objectIds } },
      include: { resource: { select: { name: true } } },
    });
    await tx.trashEntry.deleteMany({
      where: {
        OR: [{ id: trash.id }, { objectId: { in: objectIds } }, { collectionId: { in: collectionIds } }],
      },
    });
    await tx.dataObject.deleteMany({ where: { id: { in: objectIds } } });
    // Deepest first, so no collection is deleted while a child still refers to it.
    for (const id of collectionIds) await tx.collection.delete({ where: { id } });
    return { kind: 'purged', replicas: replicas.map(toReplicaRecord) };
  }

  /**
   * The sites whose changes this site must still apply before it may purge a settled trash entry
   * (what the deleting site had applied of them when it settled; see packages/replication).
   */
  purgeWaitsFor(tx: Tx, trashId: bigint, siteId: string): Promise<{ site: string; seq: number }[]> {
    return purgeWaitsFor(
      {
        query: async (text, values = []) => ({ rows: await tx.$queryRawUnsafe<unknown[]>(text, ...values) }),
      },
      trashId,
      siteId,
    );
  }

  async grantsOn(collectionIds: bigint[], objectId: bigint | null): Promise<GrantRecord[]> {
    const rows = await this.prisma.permission.findMany({
      where: { OR: [{ collectionId: { in: collectionIds } }, ...(objectId ? [{ objectId }] : [])] },
      include: {
        collection: { select: { path: true } },
        user: { select: { username: true } },
        group: { select: { name: true } },
      },
      orderBy: { id: 'asc' },
    });
    return rows.map((r) => ({
      collectionId: r.collectionId,
      objectId: r.objectId,
      path: r.collection?.path ?? '',
      user: r.user?.username ?? null,
      group: r.group?.name ?? null,
      level: r.level,
      recursive: r.recursive,
    }));
  }

  async setGrant(
    target: { collectionId: bigint | null; objectId: bigint | null },
    who: { userId: bigint | null; groupId: bigint | null },
    level: PermissionLevel | null,
    by: bigint,
  ): Promise<void> {
    // Changed in place: a grant's id comes from what it joins (migration natural_ids), and an update
    // keeps its version history, where a delete and a new insert of the same id would meet the
    // delete's tombstone at every other site.
    await this.prisma.$transaction(async (tx) => {
      const existing = await tx.permission.findMany({ where: { ...target, ...who }, select: { id: true } });
      if (!level) {
        if (existing.length > 0) await tx.permission.deleteMany({ where: { ...target, ...who } });
        return;
      }
      const [keep, ...extra] = existing;
      if (extra.length > 0) await tx.permission.deleteMany({ where: { id: { in: extra.map((e) => e.id) } } });
      if (keep) await tx.permission.update({ where: { id: keep.id }, data: { level, updatedBy: by } });
      else await tx.permission.create({ data: { ...target, ...who, level, createdBy: by } });
    });
  }

  async userId(username: string): Promise<bigint | null> {
    return (await this.prisma.user.findUnique({ where: { username }, select: { id: true } }))?.id ?? null;
  }

  async groupId(name: string): Promise<bigint | null> {
    return (await this.prisma.projectGroup.findUnique({ where: { name }, select: { id: true } }))?.id ?? null;
  }
}
