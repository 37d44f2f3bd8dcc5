import { Injectable } from '@nestjs/common';
import { PrismaService } from '../database/prisma.service';
import type { Tx } from '../namespace/namespace.repository';

export interface NewObjectBytes {
  size: bigint;
  checksum: string;
  contentType: string;
}

@Injectable()
export class DataRepository {
  constructor(private readonly prisma: PrismaService) {}

  /** This site's good copy of an object (for a peer reading through this site). */
  async localReplica(
    objectId: bigint,
    siteId: string,
  ): Promise<{ size: number; checksum: string; key: string } | null> {
    const replica = await this.prisma.replica.findFirst({
      where: { objectId, siteId, status: 'good', object: { trashId: 0n } },
      select: { size: true, checksum: true, physicalPath: true },
    });
    return replica
      ? { size: Number(replica.size), checksum: replica.checksum, key: replica.physicalPath }
      : null;
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
}
