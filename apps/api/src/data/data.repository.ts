import { Injectable } from '@nestjs/common';
import { PrismaService } from '../database/prisma.service';
import { timespec, type Tx } from '../namespace/namespace.repository';

export interface NewObjectBytes {
  size: bigint;
  checksum: string;
  contentType: string;
}

/** An object's row as an update of its bytes needs it, locked for the transaction. */
export interface LockedObject {
  id: bigint;
  version: number;
  contentType: string;
  /** Set for a symbolic link, which has no bytes to replace. */
  linkTarget: string | null;
}

/** The attributes a write gives with the bytes (docs/attributes.md). */
export interface WrittenAttributes {
  /** The file time; absent: now (a content change moves it). */
  mtimeNs?: bigint;
  /** The permission bits; absent: unchanged. */
  mode?: number;
}

/** The update another site made within the current window (see `claimUpdateWindow`). */
export interface UpdateWindowHolder {
  siteId: string;
  acceptedAt: Date;
}

@Injectable()
export class DataRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * This site's good copy of a live object's current bytes (for a peer reading through this site): a
   * row that says good for older bytes is not one.
   */
  async localReplica(
    objectId: bigint,
    siteId: string,
  ): Promise<{ size: number; checksum: string; key: string } | null> {
    const rows = await this.prisma.$queryRaw<
      Array<{ size: bigint; checksum: string; physical_path: string }>
    >`
      SELECT r.size, r.checksum, r.physical_path
        FROM replicas r JOIN data_objects o ON o.id = r.object_id
       WHERE r.object_id = ${objectId} AND r.site_id = ${siteId} AND r.status = 'good'
         AND r.checksum = o.checksum AND o.trash_id = 0
       LIMIT 1`;
    const replica = rows[0];
    return replica
      ? { size: Number(replica.size), checksum: replica.checksum, key: replica.physical_path }
      : null;
  }

  /**
   * Marks this site's good copy of an object stale unless it holds `checksum`: after an update this
   * site forwarded to the holding site, so its copy of the old bytes is not served while the update
   * is on its way here (the copy's own site writes its row's state).
   */
  async staleLocalCopy(objectId: bigint, siteId: string, checksum: string, by: bigint): Promise<void> {
    await this.prisma.replica.updateMany({
      where: { objectId, siteId, status: 'good', NOT: { checksum } },
      data: { status: 'stale', updatedBy: by },
    });
  }

  /** A live object's path, by id (null when it is gone or in the trash). */
  async objectPath(id: bigint): Promise<string | null> {
    const rows = await this.prisma.$queryRaw<Array<{ path: string }>>`
      SELECT CASE WHEN c.path = '/' THEN '/' || o.name ELSE c.path || '/' || o.name END AS path
        FROM data_objects o JOIN collections c ON c.id = o.collection_id
       WHERE o.id = ${id} AND o.trash_id = 0`;
    return rows[0]?.path ?? null;
  }

  /** Locks a live object's row until the transaction ends; null when it is gone or in the trash. */
  async lockObject(tx: Tx, id: bigint): Promise<LockedObject | null> {
    const rows = await tx.$queryRaw<
      Array<{ version: number; content_type: string; link_target: string | null }>
    >`
      SELECT version, content_type, link_target FROM data_objects WHERE id = ${id} AND trash_id = 0 FOR UPDATE`;
    const row = rows[0];
    return row
      ? { id, version: row.version, contentType: row.content_type, linkTarget: row.link_target }
      : null;
  }

  /**
   * Claims the object's update window for `siteId`: granted when the last accepted update came from
   * the same site or was accepted before `openSince` (the start of the last completed replication
   * cycle, so every peer has been offered it). Otherwise answers who holds the window. The caller
   * holds the object's row lock, so claims of one object are serialised.
   */
  async claimUpdateWindow(
    tx: Tx,
    objectId: bigint,
    siteId: string,
    openSince: Date,
  ): Promise<UpdateWindowHolder | null> {
    const claimed = await tx.$executeRaw`
      INSERT INTO data_update_windows (object_id, site_id, accepted_at) VALUES (${objectId}, ${siteId}, clock_timestamp())
      ON CONFLICT (object_id) DO UPDATE SET site_id = EXCLUDED.site_id, accepted_at = EXCLUDED.accepted_at
       WHERE data_update_windows.site_id = EXCLUDED.site_id OR data_update_windows.accepted_at < ${openSince}`;
    if (claimed === 1) return null;
    const rows = await tx.$queryRaw<Array<{ site_id: string; accepted_at: Date }>>`
      SELECT site_id, accepted_at FROM data_update_windows WHERE object_id = ${objectId}`;
    const row = rows[0]!;
    return { siteId: row.site_id, acceptedAt: row.accepted_at };
  }

  /** Forgets windows that closed long ago (one row per updated object otherwise stays for ever). */
  async pruneUpdateWindows(before: Date): Promise<void> {
    await this.prisma.$executeRaw`DELETE FROM data_update_windows WHERE accepted_at < ${before}`;
  }

  /**
   * Replaces an object's bytes: bumps the version, moves its file time to the one given or to now,
   * sets its mode if given, points this site's replica at the new key and marks other sites' copies
   * stale. Returns this site's previous key, for removal after commit.
   */
  async replaceBytes(
    tx: Tx,
    objectId: bigint,
    bytes: NewObjectBytes,
    replica: { siteId: string; resourceId: bigint; physicalPath: string },
    by: bigint,
    attributes: WrittenAttributes = {},
  ): Promise<string | null> {
    await tx.dataObject.update({
      where: { id: objectId },
      data: {
        ...bytes,
        version: { increment: 1 },
        updatedBy: by,
        ...timespec(attributes.mtimeNs ?? BigInt(Date.now()) * 1_000_000n),
        ...(attributes.mode !== undefined ? { mode: attributes.mode } : {}),
      },
    });
    // This site's copy, on whichever of its storage resources it is (a move, or a default that
    // changed, may have put it elsewhere): it moves to the resource the new bytes were written to.
    const previous = await tx.replica.findFirst({
      where: { objectId, siteId: replica.siteId },
      orderBy: { id: 'asc' },
      select: { id: true, physicalPath: true, resourceId: true },
    });
    if (previous && previous.resourceId !== replica.resourceId) {
      // The old bytes are on another resource than the new ones: the garbage sweep removes them
      // there (the caller's removal of the previous key looks in the default resource).
      await tx.$executeRaw`INSERT INTO storage_garbage (resource_id, key, object_id)
                           VALUES (${previous.resourceId}, ${previous.physicalPath}, ${objectId})
                           ON CONFLICT (resource_id, key) DO NOTHING`;
    }
    if (previous) {
      await tx.replica.update({
        where: { id: previous.id },
        data: {
          resourceId: replica.resourceId,
          physicalPath: replica.physicalPath,
          size: bytes.size,
          checksum: bytes.checksum,
          status: 'good',
          // The new bytes were hashed as they were written.
          verifiedAt: new Date(),
          error: null,
          updatedBy: by,
        },
      });
    } else {
      await tx.replica.create({
        data: { objectId, ...replica, size: bytes.size, checksum: bytes.checksum, createdBy: by },
      });
    }
    await tx.replica.updateMany({
      where: { objectId, NOT: { siteId: replica.siteId, resourceId: replica.resourceId } },
      data: { status: 'stale', updatedBy: by },
    });
    return previous && previous.resourceId === replica.resourceId ? previous.physicalPath : null;
  }
}
