import { Inject, Injectable } from '@nestjs/common';
import {
  ancestorPaths,
  DEFAULT_MODES,
  ErrorCode,
  hasControlCharacter,
  isCatalogId,
  isWithin,
  splitPath,
  type EntryDetailDto,
  type EntryDto,
  type Page,
  type PermissionDto,
  type PermissionLevel,
  type TrashEntryDto,
} from '@tributary/shared';
import { AccessService, levelAtLeast, maxLevel, type AccessTarget } from '../access/access.service';
import { CredentialCache } from '../auth/credential-cache';
import { relayPeerRefusal } from '../common/peer-refusal';
import { DomainError, notFound } from '../common/domain-error';
import { SITE_CONFIG, type SiteConfig } from '../config/config';
import type { Principal } from '../common/principal';
import { HOME_ROOT, PROJECTS_ROOT, SiteContext } from '../sites/site-context';
import { StorageService } from '../storage/storage.service';
import { ReplicationService } from '../replication/replication.service';
import { PeerRequestError } from '@tributary/replication';
import { forwardedTrashPath, type ForwardedTrashAction, type TrashAction } from './forwarded-trash';
import { toEntryDetailDto, toEntryDto, toTrashDto } from './namespace.mapper';
import {
  CollectionRecord,
  EntryRecord,
  ListCursor,
  NamespaceRepository,
  SortKey,
  type Tx,
} from './namespace.repository';

/** Collections that hold the namespace together: never renamed, moved or deleted. */
const PROTECTED = new Set(['/', HOME_ROOT, PROJECTS_ROOT]);

/** The deciding site's refusals of a forwarded restore or purge, passed on to the user as they are. */
const RELAYED_TRASH_CODES = new Set<string>([
  ErrorCode.NotFound,
  ErrorCode.PurgeNotYet,
  ErrorCode.PurgeBlocked,
  ErrorCode.NameTaken,
  ErrorCode.PermissionDenied,
  ErrorCode.TokenOutsideCollection,
  ErrorCode.AccountDisabled,
  ErrorCode.Unauthenticated,
]);

@Injectable()
export class NamespaceService {
  constructor(
    private readonly repo: NamespaceRepository,
    private readonly access: AccessService,
    private readonly site: SiteContext,
    private readonly storage: StorageService,
    @Inject(SITE_CONFIG) private readonly config: SiteConfig,
    private readonly credentials: CredentialCache,
    private readonly replication: ReplicationService,
  ) {}

  private get cycleSeconds(): number {
    return Math.round(this.config.replication.cycleMs / 1000);
  }

  /** The live collection or object at a normalised path, or null. */
  async resolve(path: string, tx?: Tx): Promise<EntryRecord | null> {
    const collection = await this.repo.findCollection(path, tx);
    if (collection || path === '/') return collection;
    const { parent, name } = splitPath(path);
    return this.repo.findObjectAt(parent, name, tx);
  }

  /**
   * The entry at a path the caller gave, checked for `needed`: a missing path is 404 only to a caller
   * who may read the collection it would be in; anyone else gets the same 403 as for an entry they
   * cannot read, so names cannot be probed.
   */
  private async reach(
    principal: Principal,
    path: string,
    needed: PermissionLevel,
    missing: () => DomainError = () => notFound(path),
  ): Promise<{ entry: EntryRecord; level: PermissionLevel }> {
    this.access.assertWithinToken(principal, path);
    const entry = await this.resolve(path);
    const level = await this.access.requireAt(principal, path, entry && entryTarget(entry), needed, missing);
    return { entry: entry!, level };
  }

  async requireCollection(path: string, tx?: Tx): Promise<CollectionRecord> {
    const entry = await this.resolve(path, tx);
    if (!entry) throw notFound(`collection ${path}`);
    if (entry.kind !== 'collection')
      throw new DomainError(ErrorCode.NotACollection, `${path} is a data object, not a collection`);
    return entry;
  }

  async stat(principal: Principal, path: string): Promise<EntryDetailDto> {
    const { entry, level } = await this.reach(principal, path, 'read');
    const detail = toEntryDetailDto(entry, level);
    if (entry.kind !== 'object') return detail;
    // Copies on this site's compound resources show their tiers (docs/storage.md).
    const mine = entry.replicas.filter((r) => r.siteId === this.site.siteId);
    const tiers = await this.storage.tiers(mine.map((r) => ({ resource: r.resource, key: r.physicalPath })));
    if (tiers.size === 0) return detail;
    entry.replicas.forEach((r, i) => {
      const t = r.siteId === this.site.siteId ? tiers.get(r.physicalPath) : undefined;
      if (t)
        detail.replicas[i]!.tier = {
          cache: t.inCache,
          archive: t.archive,
          archiveError: t.archiveError,
          staging: t.staging ?? null,
        };
    });
    return detail;
  }

  async list(
    principal: Principal,
    path: string,
    sort: SortKey,
    order: 'asc' | 'desc',
    limit: number,
    cursorText: string | undefined,
    offset?: number,
  ): Promise<Page<EntryDto>> {
    const { entry: collection } = await this.reach(principal, path, 'read', () =>
      notFound(`collection ${path}`),
    );
    if (collection.kind !== 'collection')
      throw new DomainError(ErrorCode.NotACollection, `${path} is a data object, not a collection`);
    const cursor = cursorText ? decodeCursor(cursorText, sort) : null;
    let items: EntryRecord[];
    let total: number;
    if (offset !== undefined) {
      // The counts say which table the position falls in and from which end it is nearer.
      const counts = await this.repo.counts(collection.id);
      total = counts.collections + counts.objects;
      items = await this.repo.listChildrenAt(collection, sort, order, limit + 1, offset, counts);
    } else {
      const [rows, counts] = await Promise.all([
        this.repo.listChildren(collection, sort, order, limit + 1, cursor),
        this.repo.counts(collection.id),
      ]);
      items = rows;
      total = counts.collections + counts.objects;
    }
    const page = items.slice(0, limit);
    const last = page.at(-1);
    const levels = await this.childLevels(principal, collection, page);
    return {
      items: page.map((e) => toEntryDto(e, levels.get(e) ?? null)),
      total,
      nextCursor: items.length > limit && last ? encodeCursor(last, sort) : undefined,
    };
  }

  /**
   * What the caller may do with each listed child: what they inherit from above (recursive grants
   * and ownership, not the browse-only grants of the listed collection), raised by ownership of the
   * child and grants on it.
   */
  private async childLevels(
    principal: Principal,
    parent: CollectionRecord,
    children: EntryRecord[],
  ): Promise<Map<EntryRecord, PermissionLevel | null>> {
    const result = new Map<EntryRecord, PermissionLevel | null>();
    if (principal.isAdmin && !principal.token?.collectionPath) {
      for (const c of children) result.set(c, 'own');
      return result;
    }
    const inherited = await this.access.inheritedBelow(principal, parent.path);
    const direct = await this.repo.directLevels(
      children.filter((c) => c.kind === 'collection').map((c) => c.id),
      children.filter((c) => c.kind === 'object').map((c) => c.id),
      principal.userId,
      principal.groupIds,
    );
    for (const c of children) {
      let level = maxLevel(inherited, direct.get(`${c.kind === 'collection' ? 'c' : 'o'}${c.id}`) ?? null);
      if (c.ownerId === principal.userId) level = 'own';
      const confined = principal.token?.collectionPath;
      result.set(c, confined && !isWithin(c.path, confined) ? null : level);
    }
    return result;
  }

  async createCollection(
    principal: Principal,
    path: string,
    parents: boolean,
    attributes: { mode?: number; mtimeNs?: bigint } = {},
  ): Promise<EntryDto> {
    this.access.assertWithinToken(principal, path);
    if (path === '/') throw new DomainError(ErrorCode.NameTaken, 'the root collection exists');
    const missing: string[] = [];
    let existing: EntryRecord | null = null;
    for (let p = path; ; p = splitPath(p).parent) {
      existing = await this.resolve(p);
      if (existing) break;
      missing.unshift(p);
      if (!parents && missing.length > 1) {
        // No need to walk further up: one query says whether the caller may learn that it is missing.
        if (!(await this.access.canSee(principal, path))) throw this.access.concealed(path, 'write');
        throw notFound(
          `collection ${splitPath(path).parent} (pass "parents": true to create missing parents)`,
        );
      }
    }
    // Which of the names exist is told only to a caller who may read where they are: the deepest
    // existing one's parent when it is the path itself, otherwise that entry (whose child is missing).
    const level = await this.access.levelOf(principal, entryTarget(existing));
    if (missing.length === 0) {
      if (!levelAtLeast(level, 'read') && !(await this.access.canSee(principal, path))) {
        throw this.access.concealed(path, 'write');
      }
      throw new DomainError(ErrorCode.NameTaken, `${path} exists already`);
    }
    if (!levelAtLeast(level, 'read')) throw this.access.concealed(path, 'write');
    if (existing.kind !== 'collection') {
      throw new DomainError(ErrorCode.NotACollection, `${existing.path} is a data object, not a collection`);
    }
    if (!levelAtLeast(level, 'write')) {
      throw new DomainError(
        ErrorCode.PermissionDenied,
        `you need write access to ${existing.path} (you have ${level})`,
      );
    }
    const groupId = principal.activeGroupId;
    await this.repo.transaction(async (tx) => {
      await this.requireLive(tx, existing);
      let parentId = existing.id;
      for (const p of missing) {
        const { name } = splitPath(p);
        await this.repo.lockName(tx, parentId, name);
        const clash = await this.repo.nameTaken(tx, parentId, name);
        if (clash)
          throw new DomainError(
            ErrorCode.NameTaken,
            `${p} exists already (a ${clash === 'object' ? 'data object' : 'collection'})`,
          );
        await this.repo.createCollection(
          tx,
          { parentId, name, path: p, ownerId: principal.userId, groupId },
          p === path ? attributes : {},
        );
        const created = await this.repo.findCollection(p, tx);
        parentId = created!.id;
      }
    });
    const created = await this.repo.findCollection(path);
    return toEntryDto(created!, 'own');
  }

  /**
   * Creates a symbolic link at `path` pointing to `target`, stored as written and never resolved
   * (it may point nowhere, or outside the namespace). Needs write access to the collection it goes
   * in, as an upload does; a name that exists is 409 NAME_TAKEN.
   */
  async createSymlink(
    principal: Principal,
    path: string,
    target: string,
    mtimeNs: bigint | undefined,
  ): Promise<EntryDto> {
    this.access.assertWithinToken(principal, path);
    if (path === '/') throw new DomainError(ErrorCode.NameTaken, 'the root collection exists');
    const { parent, name } = splitPath(path);
    // Whether something is there, or the collection exists, is told only to a caller who may read
    // where it would go (as for mkdir).
    const existing = await this.resolve(path);
    if (existing) {
      const level = await this.access.levelOf(principal, entryTarget(existing));
      if (!levelAtLeast(level, 'read') && !(await this.access.canSee(principal, path))) {
        throw this.access.concealed(path, 'write');
      }
      throw new DomainError(
        ErrorCode.NameTaken,
        `${path} exists already; remove it first or choose another name`,
      );
    }
    const collection = await this.resolve(parent);
    if (!collection) {
      if (!(await this.access.canSee(principal, path))) throw this.access.concealed(path, 'write');
      throw notFound(`collection ${parent} (create it first: POST /api/v1/namespace/collections)`);
    }
    const level = await this.access.levelOf(principal, entryTarget(collection));
    if (!levelAtLeast(level, 'read')) throw this.access.concealed(path, 'write');
    if (collection.kind !== 'collection') {
      throw new DomainError(ErrorCode.NotACollection, `${parent} is a data object, not a collection`);
    }
    if (!levelAtLeast(level, 'write')) {
      throw new DomainError(
        ErrorCode.PermissionDenied,
        `you need write access to ${parent} (you have ${level})`,
      );
    }
    await this.repo.transaction(async (tx) => {
      await this.repo.lockName(tx, collection.id, name);
      await this.requireLive(tx, collection);
      const clash = await this.repo.nameTaken(tx, collection.id, name);
      if (clash) {
        throw new DomainError(
          ErrorCode.NameTaken,
          `${path} exists already (a ${clash === 'object' ? 'data object' : 'collection'})`,
        );
      }
      await this.repo.createSymlink(tx, {
        collectionId: collection.id,
        name,
        target,
        ownerId: principal.userId,
        groupId: principal.activeGroupId,
        mtimeNs,
      });
    });
    const created = await this.resolve(path);
    if (!created) throw notFound(`${path} (it was moved or deleted meanwhile)`);
    return toEntryDto(created, 'own');
  }

  /**
   * Sets an entry's file time and/or permission bits (`touch -d`, `utimensat`, `chmod`): a change
   * of its catalog record, which replicates. Needs write access to the entry. A symbolic link's
   * mode stays 0o777 (Linux has no lchmod); its file time may be set (`touch -h`, `lutimes`).
   */
  async setAttributes(
    principal: Principal,
    path: string,
    attributes: { mtimeNs?: bigint; mode?: number },
  ): Promise<EntryDto> {
    const { entry, level } = await this.reach(principal, path, 'write');
    if (
      entry.kind === 'object' &&
      entry.linkTarget !== null &&
      attributes.mode !== undefined &&
      attributes.mode !== DEFAULT_MODES.symlink
    ) {
      throw new DomainError(
        ErrorCode.IsASymlink,
        `${path} is a symbolic link: its mode is always 0777 (change the mode of its target instead)`,
        { mode: ['a symbolic link has no permission bits of its own'] },
      );
    }
    if (!(await this.repo.setAttributes(entry, attributes, principal.userId))) {
      throw notFound(`${path} (it was moved or deleted meanwhile)`);
    }
    const updated = await this.resolve(path);
    if (!updated) throw notFound(`${path} (it was moved or deleted meanwhile)`);
    return toEntryDto(updated, level);
  }

  async move(principal: Principal, from: string, to: string): Promise<EntryDto> {
    this.access.assertWithinToken(principal, from);
    this.access.assertWithinToken(principal, to);
    if (PROTECTED.has(from))
      throw new DomainError(ErrorCode.RootImmutable, `${from} cannot be moved or renamed`);
    if (from === to) throw new DomainError(ErrorCode.NameTaken, `${to} is where it is already`);
    if (isWithin(to, from))
      throw new DomainError(ErrorCode.MoveIntoItself, `cannot move ${from} into itself (${to})`);
    const { parent: toParentPath, name: toName } = splitPath(to);
    // Renaming in place needs write; taking an entry out of its collection needs own, or write access
    // would turn into ownership under a collection the mover owns.
    const sameParent = splitPath(from).parent === toParentPath;
    const { entry } = await this.reach(principal, from, sameParent ? 'write' : 'own');
    await this.access.require(principal, { path: splitPath(from).parent, kind: 'collection' }, 'write');
    const found = await this.resolve(toParentPath);
    // A destination the caller cannot see into is refused naming only `to`, whether it exists or not.
    const toLevel = found ? await this.access.levelOf(principal, entryTarget(found)) : null;
    if (!levelAtLeast(toLevel, 'write')) {
      if (!levelAtLeast(toLevel, 'read') && !(await this.access.canSee(principal, toParentPath))) {
        throw this.access.concealed(to, 'write');
      }
      if (!found) throw notFound(`collection ${toParentPath}`);
    }
    if (found!.kind !== 'collection') {
      throw new DomainError(ErrorCode.NotACollection, `${toParentPath} is a data object, not a collection`);
    }
    const toParent = found as CollectionRecord;
    await this.access.require(principal, entryTarget(toParent), 'write');
    await this.repo.transaction(async (tx) => {
      if (!(await this.repo.lockUnchanged(tx, entry))) {
        throw new DomainError(
          ErrorCode.NameTaken,
          `${from} was moved or deleted meanwhile; look again and retry`,
        );
      }
      await this.repo.lockName(tx, toParent.id, toName);
      await this.requireLive(tx, toParent);
      const clash = await this.repo.nameTaken(tx, toParent.id, toName);
      if (clash)
        throw new DomainError(
          ErrorCode.NameTaken,
          `${to} exists already; choose another name or move it first`,
        );
      if (entry.kind === 'collection') {
        await this.repo.moveCollection(tx, entry, toParent.id, toName, to, principal.userId);
      } else {
        await this.repo.moveObject(tx, entry.id, toParent.id, toName, principal.userId);
      }
    });
    // Tokens confined to a moved collection follow it from the next request on.
    if (entry.kind === 'collection') this.credentials.forget();
    const moved = await this.resolve(to);
    return toEntryDto(moved!, await this.access.levelOf(principal, entryTarget(moved!)));
  }

  async delete(principal: Principal, path: string): Promise<TrashEntryDto> {
    this.access.assertWithinToken(principal, path);
    if (PROTECTED.has(path)) throw new DomainError(ErrorCode.RootImmutable, `${path} cannot be deleted`);
    const { entry } = await this.reach(principal, path, 'write');
    await this.access.require(principal, { path: splitPath(path).parent, kind: 'collection' }, 'write');
    const trashId = await this.repo.transaction((tx) =>
      this.repo.trash(tx, entry, principal.userId, this.site.siteId),
    );
    // Tokens confined to a deleted collection stop from the next request on.
    if (entry.kind === 'collection') this.credentials.forget();
    return toTrashDto((await this.repo.findTrash(trashId))!);
  }

  /**
   * Administrators see everything in the trash, others what they deleted; a token confined to a
   * collection sees only what was deleted from inside it.
   */
  async listTrash(
    principal: Principal,
    limit: number,
    cursor: string | undefined,
  ): Promise<Page<TrashEntryDto>> {
    const before = cursor ? parseId(cursor) : null;
    const { items, total } = await this.repo.listTrash(
      siteWide(principal) ? null : principal.userId,
      principal.token?.collectionPath ?? null,
      limit,
      before,
    );
    const last = items.at(-1);
    return {
      items: items.map(toTrashDto),
      total,
      nextCursor: items.length === limit && last ? last.id.toString() : undefined,
    };
  }

  async restore(principal: Principal, trashId: bigint): Promise<EntryDto> {
    const decidedAt = await this.decidingSite(principal, trashId);
    if (decidedAt) return this.forwardTrashAction<EntryDto>(decidedAt, 'restore', principal, trashId);
    const restoredPath = await this.repo.transaction(async (tx) => {
      // Locked for the whole transaction: a purge of the same entry waits, then finds it gone.
      const trash = await this.loadTrash(principal, trashId, tx);
      const { parent, name } = splitPath(trash.originalPath);
      const parentCollection = await this.repo.findCollection(parent, tx);
      if (!parentCollection) {
        throw notFound(
          `collection ${parent} (restore or recreate it first, then restore ${trash.originalPath})`,
        );
      }
      await this.access.require(principal, entryTarget(parentCollection), 'write');
      await this.repo.lockName(tx, parentCollection.id, name);
      await this.requireLive(tx, parentCollection);
      if (await this.repo.nameTaken(tx, parentCollection.id, name)) {
        throw new DomainError(
          ErrorCode.NameTaken,
          `${trash.originalPath} exists again; rename or move that one first, then restore`,
        );
      }
      await this.repo.restore(tx, trash, parentCollection.id, principal.userId);
      return trash.originalPath;
    });
    this.credentials.forget();
    const restored = await this.resolve(restoredPath);
    if (!restored) throw notFound(`${restoredPath} (it was moved or deleted meanwhile)`);
    return toEntryDto(restored, await this.access.levelOf(principal, entryTarget(restored)));
  }

  async purge(principal: Principal, trashId: bigint): Promise<void> {
    const decidedAt = await this.decidingSite(principal, trashId);
    if (decidedAt) {
      await this.forwardTrashAction<unknown>(decidedAt, 'purge', principal, trashId);
      return;
    }
    const replicas = await this.repo.transaction(async (tx) => {
      const trash = await this.loadTrash(principal, trashId, tx);
      if (!trash.settledAt) {
        // An update made at another site before the delete reached it must still be able to rescue it.
        const deletedHere = trash.deletedAtSite === this.site.siteId;
        const waitingFor = deletedHere
          ? await this.repo.peersYetToApplyDelete(
              trash.id,
              this.config.replication.peers.map((p) => p.id),
              tx,
            )
          : [];
        const who = deletedHere
          ? waitingFor.length > 0
            ? `${waitingFor.join(', ')} ${waitingFor.length === 1 ? 'has' : 'have'} not applied the delete yet`
            : 'every site has applied the delete, which is being marked settled'
          : `${trash.deletedAtSite}, where it was deleted, has not yet confirmed that every site applied the delete`;
        throw new DomainError(
          ErrorCode.PurgeNotYet,
          `${trash.originalPath} was deleted at ${trash.deletedAtSite}: ${who}; ` +
            `purging becomes possible after the next replication exchange (within about ${this.cycleSeconds * 2} s)`,
          waitingFor.length > 0 ? { waitingFor } : undefined,
          { 'retry-after': String(this.cycleSeconds) },
        );
      }
      // A rescue the deleting site applied before it settled the delete may still be on its way here.
      const waits = await this.repo.purgeWaitsFor(tx, trash.id, this.site.siteId);
      if (waits.length > 0) {
        const sites = waits.map((w) => w.site);
        throw new DomainError(
          ErrorCode.PurgeNotYet,
          `${trash.originalPath}: changes from ${sites.join(', ')} that ${trash.deletedAtSite} had applied when it ` +
            `settled the delete have not reached this site yet; purge here after the next replication exchange ` +
            `(within about ${this.cycleSeconds * 2} s), or at ${trash.deletedAtSite}`,
          { waitingFor: sites },
          { 'retry-after': String(this.cycleSeconds) },
        );
      }
      const outcome = await this.repo.purge(tx, trash);
      if (outcome.kind === 'rescued') {
        // Listings hide such an entry; what it took is live again, so there is nothing to purge.
        throw notFound(
          `trash entry ${trashId} (what it held is no longer in the trash: a change made at another site rescued it)`,
        );
      }
      if (outcome.kind === 'liveInside') {
        throw new DomainError(
          ErrorCode.PurgeBlocked,
          `${trash.originalPath} cannot be purged: ${outcome.path} inside it is live again (rescued by a change ` +
            `made at another site); move it out of the folder or restore the folder first`,
          { live: [outcome.path] },
        );
      }
      return outcome.replicas;
    });
    // The catalog no longer refers to these bytes; remove them after the commit.
    await Promise.all(
      replicas.filter((r) => r.siteId === this.site.siteId).map((r) => this.storage.remove(r.physicalPath)),
    );
  }

  /**
   * The site that decides on a trash entry, when it is another one: the site where it was deleted.
   * Restores and purges of one entry then serialise on that site's lock of the entry, so a restore
   * asked for at one site and a purge at another cannot both win (the purge removing the bytes of
   * what the restore brought back). Null when this site decides: it deleted the entry, the request
   * was forwarded here, or the deleting site is no longer a peer. Checks first that the caller may
   * act on the entry, as the deciding site will again.
   */
  private async decidingSite(principal: Principal, trashId: bigint): Promise<string | null> {
    if (principal.via === 'peer') return null;
    const trash = await this.repo.findTrash(trashId);
    if (!trash || (!siteWide(principal) && trash.deletedById !== principal.userId)) {
      throw notFound(`trash entry ${trashId}`);
    }
    this.access.assertWithinToken(principal, trash.originalPath);
    if (trash.deletedAtSite === this.site.siteId) return null;
    return this.replication.peers.peer(trash.deletedAtSite) ? trash.deletedAtSite : null;
  }

  /** Asks the deciding site to restore or purge a trash entry for this user; its answer is ours. */
  private async forwardTrashAction<T>(
    site: string,
    action: TrashAction,
    principal: Principal,
    trashId: bigint,
  ): Promise<T> {
    const body: ForwardedTrashAction = { userId: principal.userId.toString() };
    try {
      return await this.replication.peers.request<T>(site, 'POST', forwardedTrashPath(trashId, action), body);
    } catch (err) {
      if (!(err instanceof PeerRequestError)) throw err;
      throw relayPeerRefusal(
        err,
        RELAYED_TRASH_CODES,
        (why) =>
          `trash entry ${trashId} was deleted at ${site}, which decides on restoring or purging it, and ${why}; try again later`,
        this.cycleSeconds,
      );
    }
  }

  /** Loads and locks a trash entry the caller may act on (their own, or any for an administrator). */
  private async loadTrash(principal: Principal, id: bigint, tx: Tx) {
    const trash = await this.repo.lockTrash(id, tx);
    if (!trash || (!siteWide(principal) && trash.deletedById !== principal.userId)) {
      throw notFound(`trash entry ${id}`);
    }
    this.access.assertWithinToken(principal, trash.originalPath);
    return trash;
  }

  /**
   * Inside a transaction that adds to a collection: holds it against being trashed or moved
   * meanwhile (those take it FOR UPDATE) and fails if that already happened.
   */
  private async requireLive(tx: Tx, collection: CollectionRecord): Promise<void> {
    const path = await this.repo.lockLive(tx, collection.id);
    if (path === null) throw notFound(`collection ${collection.path} (it was deleted meanwhile)`);
    if (path !== collection.path) {
      throw new DomainError(
        ErrorCode.NameTaken,
        `${collection.path} was moved meanwhile; look again and retry`,
      );
    }
  }

  async permissions(principal: Principal, path: string): Promise<PermissionDto[]> {
    const { entry } = await this.reach(principal, path, 'read');
    const chain = [...ancestorPaths(entry.path), ...(entry.kind === 'collection' ? [entry.path] : [])];
    const ids = await Promise.all(chain.map((p) => this.repo.findCollection(p)));
    const grants = await this.repo.grantsOn(
      ids.filter((c): c is CollectionRecord => c !== null).map((c) => c.id),
      entry.kind === 'object' ? entry.id : null,
    );
    return grants
      .filter((g) => g.objectId !== null || g.path === entry.path || g.recursive)
      .map((g) => {
        const on = g.objectId !== null ? entry.path : g.path;
        return {
          path: entry.path,
          user: g.user,
          group: g.group,
          level: g.level,
          inheritedFrom: on === entry.path ? null : on,
        };
      });
  }

  async setPermission(
    principal: Principal,
    path: string,
    who: { user?: string; group?: string },
    level: PermissionLevel | null,
  ): Promise<PermissionDto[]> {
    const { entry, level: held } = await this.reach(principal, path, 'own');
    if (!levelAtLeast(held, 'own'))
      throw new DomainError(ErrorCode.PermissionDenied, `you need own access to ${path}`);
    const userId = who.user ? await this.repo.userId(who.user) : null;
    const groupId = who.group ? await this.repo.groupId(who.group) : null;
    if (who.user && userId === null) throw notFound(`user "${who.user}"`);
    if (who.group && groupId === null) throw notFound(`group "${who.group}"`);
    await this.repo.setGrant(
      entry.kind === 'collection'
        ? { collectionId: entry.id, objectId: null }
        : { collectionId: null, objectId: entry.id },
      { userId, groupId },
      level,
      principal.userId,
    );
    return this.permissions(principal, path);
  }
}

/** Administrators act site-wide, unless through a token confined to a collection. */
function siteWide(principal: Principal): boolean {
  return principal.isAdmin && !principal.token?.collectionPath;
}

/** What access is checked on for an entry. */
export function entryTarget(entry: EntryRecord): AccessTarget {
  return entry.kind === 'object'
    ? { path: entry.path, kind: 'object', objectId: entry.id }
    : { path: entry.path, kind: 'collection' };
}

function encodeCursor(e: EntryRecord, sort: SortKey): string {
  const v =
    sort === 'size'
      ? e.kind === 'object'
        ? e.size.toString()
        : '0'
      : sort === 'modified'
        ? e.updatedAt.toISOString()
        : e.name;
  const c: ListCursor = { k: e.kind === 'collection' ? 0 : 1, v, n: e.name, id: e.id.toString() };
  return Buffer.from(JSON.stringify(c)).toString('base64url');
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function decodeCursor(text: string, sort: SortKey): ListCursor {
  let c: Partial<ListCursor> = {};
  try {
    c = JSON.parse(Buffer.from(text, 'base64url').toString('utf8')) as Partial<ListCursor>;
  } catch {
    // reported below
  }
  const { k, v, n, id } = c;
  const valueOk =
    typeof v === 'string' &&
    (sort === 'size'
      ? v === '0' || isCatalogId(v)
      : sort === 'modified'
        ? ISO_TIME.test(v)
        : !hasControlCharacter(v));
  if (
    (k === 0 || k === 1) &&
    valueOk &&
    typeof n === 'string' &&
    !hasControlCharacter(n) &&
    typeof id === 'string' &&
    isCatalogId(id)
  ) {
    return { k, v, n, id };
  }
  throw new DomainError(
    ErrorCode.InvalidCursor,
    'the cursor is not one this listing returned; start again without it',
  );
}

function parseId(text: string): bigint {
  if (!isCatalogId(text)) {
    throw new DomainError(
      ErrorCode.InvalidCursor,
      'the cursor is not one this listing returned; start again without it',
    );
  }
  return BigInt(text);
}
