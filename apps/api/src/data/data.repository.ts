import { Injectable } from '@nestjs/common';
import type { Tx } from '../namespace/namespace.repository';

export interface NewObjectBytes {
  size: bigint;
  checksum: string;
  contentType: string;
}

@Injectable()
export class DataRepository {
  /** Inserts the object row; the replica follows once the bytes have a key. */
  async createObject(
    tx: Tx,
    data: NewObjectBytes & { collectionId: bigint; name: string; ownerId: bigint; groupId: bigint | null },
  ): Promise<bigint> {
    const row = await tx.dataObject.create({
      data: { ...data, createdBy: data.ownerId },
      select: { id: true },
    });
    return row.id;
  }

  async addReplica(
    tx: Tx,
    data: {
      objectId: bigint;
      siteId: string;
      resourceId: bigint;
      physicalPath: string;
      size: bigint;
      checksum: string;
      by: bigint;
    },
  ): Promise<void> {
    const { by, ...rest } = data;
    await tx.replica.create({ data: { ...rest, createdBy: by } });
  }

  /**
   * Replaces an object's bytes: bumps the version, points this site's replica at the new key and
   * marks other sites' copies stale. Returns this site's previous key, for removal after commit.
   */
  async replaceBytes(
    tx: Tx,
    objectId: bigint,
    bytes: NewObjectBytes,
    replica: { siteId: string; resourceId: bigint; physicalPath: string },
    by: bigint,
  ): Promise<string | null> {
    await tx.dataObject.update({
      where: { id: objectId },
      data: { ...bytes, version: { increment: 1 }, updatedBy: by },
    });
    const previous = await tx.replica.findFirst({
      where: { objectId, siteId: replica.siteId, resourceId: replica.resourceId },
      select: { id: true, physicalPath: true },
    });
    if (previous) {
      await tx.replica.update({
        where: { id: previous.id },
        data: {
          physicalPath: replica.physicalPath,
          size: bytes.size,
          checksum: bytes.checksum,
          status: 'good',
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
    return previous?.physicalPath ?? null;
  }

  async currentVersion(tx: Tx, objectId: bigint): Promise<number> {
    const row = await tx.dataObject.findUniqueOrThrow({ where: { id: objectId }, select: { version: true } });
    return row.version;
  }
}
