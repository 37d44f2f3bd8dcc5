import { Injectable } from '@nestjs/common';
import { Prisma } from '@prisma/client';
import { joinPath } from '@tributary/shared';
import { PrismaService } from '../database/prisma.service';

/** The site cannot be registered as configured (an operator must change its settings). */
export class SiteRegistrationError extends Error {}

@Injectable()
export class SitesRepository {
  constructor(private readonly prisma: PrismaService) {}

  /**
   * Registers the local site once and restricts `catalog_id_seq` to its id range. The range is
   * fixed at registration: a later start with another index keeps the registered one.
   */
  async registerLocalSite(
    id: string,
    name: string,
    range: { start: bigint; end: bigint },
    url: string | undefined,
  ): Promise<{ id: string; idRangeStart: bigint; idRangeEnd: bigint }> {
    return this.prisma.$transaction(async (tx) => {
      const existing = await tx.site.findFirst({ where: { isLocal: true } });
      if (existing) return existing;
      // A site that joined from a snapshot sees every registered site: ranges must stay disjoint.
      const clash = await tx.site.findFirst({
        where: { OR: [{ id }, { idRangeStart: { lte: range.end }, idRangeEnd: { gte: range.start } }] },
      });
      if (clash) {
        throw new SiteRegistrationError(
          clash.id === id
            ? `a site named ${id} is already registered in this federation; choose another SITE_ID`
            : `this site's id range (SITE_INDEX) is already registered to site ${clash.id}; choose another SITE_INDEX`,
        );
      }
      const site = await tx.site.create({
        data: { id, name, url, idRangeStart: range.start, idRangeEnd: range.end, isLocal: true },
      });
      // Values are bigints from our own arithmetic, not user input; ALTER SEQUENCE takes no parameters.
      await tx.$executeRawUnsafe(
        `ALTER SEQUENCE catalog_id_seq MINVALUE ${range.start} MAXVALUE ${range.end} START ${range.start} RESTART ${range.start} NO CYCLE`,
      );
      return site;
    });
  }

  async ensureResource(siteId: string, name: string, rootPath: string): Promise<bigint> {
    const row = await this.prisma.storageResource.upsert({
      where: { siteId_name: { siteId, name } },
      create: { siteId, name, rootPath },
      update: { rootPath },
      select: { id: true },
    });
    return row.id;
  }

  /**
   * Registers this site's configured storage resources (kind, where, which is the default) in one
   * transaction and answers their ids by name. Resources no longer configured keep their rows
   * (copies may still name them) but are no longer the default.
   */
  async ensureResources(
    siteId: string,
    resources: ReadonlyArray<{
      name: string;
      driver: 'local' | 's3' | 'compound';
      rootPath: string;
      settings: object;
    }>,
    defaultName: string,
  ): Promise<Map<string, bigint>> {
    return this.prisma.$transaction(async (tx) => {
      const ids = new Map<string, bigint>();
      await tx.storageResource.updateMany({
        where: { siteId, isDefault: true, NOT: { name: defaultName } },
        data: { isDefault: false },
      });
      for (const r of resources) {
        const data = {
          driver: r.driver,
          rootPath: r.rootPath,
          settings: r.settings as Prisma.InputJsonObject,
          isDefault: r.name === defaultName,
        };
        const row = await tx.storageResource.upsert({
          where: { siteId_name: { siteId, name: r.name } },
          create: { siteId, name: r.name, ...data },
          update: data,
          select: { id: true },
        });
        ids.set(r.name, row.id);
      }
      return ids;
    });
  }

  async ensureAdmin(
    username: string,
    hash: () => Promise<string>,
  ): Promise<{ id: bigint; created: boolean }> {
    const existing = await this.prisma.user.findUnique({ where: { username }, select: { id: true } });
    if (existing) return { id: existing.id, created: false };
    const created = await this.prisma.user.create({
      data: { username, displayName: 'Administrator', passwordHash: await hash(), isAdmin: true },
      select: { id: true },
    });
    return { id: created.id, created: true };
  }

  /** The namespace root `/` and the given top-level collections, owned by the administrator. */
  async ensureRoots(ownerId: bigint, topLevel: string[]): Promise<{ rootId: bigint; childIds: bigint[] }> {
    const root =
      (await this.prisma.collection.findFirst({ where: { path: '/', trashId: 0 }, select: { id: true } })) ??
      (await this.prisma.collection.create({
        data: { name: '', path: '/', ownerId, createdBy: ownerId },
        select: { id: true },
      }));
    const childIds: bigint[] = [];
    for (const path of topLevel) {
      const child =
        (await this.prisma.collection.findFirst({ where: { path, trashId: 0 }, select: { id: true } })) ??
        (await this.prisma.collection.create({
          data: { parentId: root.id, name: path.slice(1), path, ownerId, createdBy: ownerId },
          select: { id: true },
        }));
      childIds.push(child.id);
    }
    return { rootId: root.id, childIds };
  }

  /** The `public` group and its read grant on the given collections alone (not what lies below). */
  async ensurePublicGroup(name: string, adminId: bigint, browsable: bigint[]): Promise<bigint> {
    const group = await this.prisma.projectGroup.upsert({
      where: { name },
      create: { name, description: 'Every account', createdBy: adminId },
      update: {},
      select: { id: true },
    });
    for (const collectionId of browsable) {
      const exists = await this.prisma.permission.findFirst({ where: { collectionId, groupId: group.id } });
      if (!exists) {
        await this.prisma.permission.create({
          data: { collectionId, groupId: group.id, level: 'read', recursive: false, createdBy: adminId },
        });
      }
    }
    return group.id;
  }

  async ensureHome(userId: bigint, username: string, homeRootId: bigint): Promise<void> {
    const path = joinPath('/home', username);
    const exists = await this.prisma.collection.findFirst({ where: { path, trashId: 0 } });
    if (!exists) {
      await this.prisma.collection.create({
        data: { parentId: homeRootId, name: username, path, ownerId: userId, createdBy: userId },
      });
    }
  }
}
