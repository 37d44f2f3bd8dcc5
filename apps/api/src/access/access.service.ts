import { Injectable } from '@nestjs/common';
import { ancestorPaths, ErrorCode, isWithin, type PermissionLevel } from '@tributary/shared';
import { DomainError } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { AccessRepository } from './access.repository';

const RANK: Record<PermissionLevel, number> = { read: 0, write: 1, own: 2 };

/** The higher of two levels (null: no access). */
export function maxLevel(a: PermissionLevel | null, b: PermissionLevel | null): PermissionLevel | null {
  if (a === null) return b;
  if (b === null) return a;
  return RANK[a] >= RANK[b] ? a : b;
}

export function levelAtLeast(held: PermissionLevel | null, needed: PermissionLevel): boolean {
  return held !== null && RANK[held] >= RANK[needed];
}

/**
 * Which entries a caller may reach at some level, as a filter for queries over many entries
 * (metadata search): everything (`all`), or the subtrees under `roots`, the collections in `exact`
 * (grants that do not recurse), entries the user owns and objects granted to them directly.
 * `confinedTo` (a token's collection) applies in every case.
 */
export interface Visibility {
  all: boolean;
  userId: bigint;
  groupIds: bigint[];
  level: PermissionLevel;
  roots: string[];
  exact: string[];
  confinedTo: string | null;
}

export interface AccessTarget {
  path: string;
  kind: 'collection' | 'object';
  /** Set for objects. */
  objectId?: bigint;
}

/**
 * Every service asks here before it reads or changes the namespace. Admins hold `own` everywhere;
 * a token confined to a collection cannot reach outside it, whatever its owner may do.
 */
@Injectable()
export class AccessService {
  constructor(private readonly repo: AccessRepository) {}

  async levelOf(principal: Principal, target: AccessTarget): Promise<PermissionLevel | null> {
    const confinedTo = principal.token?.collectionPath;
    if (confinedTo && !isWithin(target.path, confinedTo)) return null;
    if (principal.isAdmin) return 'own';
    return this.repo.effectiveLevel({
      userId: principal.userId,
      groupIds: principal.groupIds,
      ancestorPaths: ancestorPaths(target.path),
      collectionPath: target.kind === 'collection' ? target.path : null,
      objectId: target.objectId ?? null,
    });
  }

  /**
   * What everything inside a collection inherits: ownership of it or above, and recursive grants
   * on it or above (not its browse-only grants). Listings raise this per child.
   */
  async inheritedBelow(principal: Principal, collectionPath: string): Promise<PermissionLevel | null> {
    if (principal.isAdmin) return 'own';
    return this.repo.effectiveLevel({
      userId: principal.userId,
      groupIds: principal.groupIds,
      ancestorPaths: [...ancestorPaths(collectionPath), collectionPath],
      collectionPath: null,
      objectId: null,
    });
  }

  /** What the caller may reach with at least `level`, for filtering many entries at once. */
  async visibility(principal: Principal, level: PermissionLevel): Promise<Visibility> {
    const base = {
      userId: principal.userId,
      groupIds: principal.groupIds,
      level,
      confinedTo: principal.token?.collectionPath ?? null,
    };
    if (principal.isAdmin) return { ...base, all: true, roots: ['/'], exact: [] };
    const grants = await this.repo.collectionGrants(principal.userId, principal.groupIds, level);
    const recursive = grants.filter((g) => g.recursive).map((g) => g.path);
    // Keep only the topmost subtrees: a root inside another adds nothing.
    const roots = recursive.filter((p) => !recursive.some((q) => q !== p && isWithin(p, q)));
    const exact = grants
      .filter((g) => !g.recursive && !roots.some((r) => isWithin(g.path, r)))
      .map((g) => g.path);
    return { ...base, all: roots.includes('/'), roots, exact };
  }

  /** Throws PERMISSION_DENIED (or TOKEN_OUTSIDE_COLLECTION) unless the caller holds `needed`. */
  async require(
    principal: Principal,
    target: AccessTarget,
    needed: PermissionLevel,
  ): Promise<PermissionLevel> {
    this.assertWithinToken(principal, target.path);
    const level = await this.levelOf(principal, target);
    if (!levelAtLeast(level, needed)) {
      throw new DomainError(
        ErrorCode.PermissionDenied,
        `you need ${needed} access to ${target.path}` + (level ? ` (you have ${level})` : ''),
      );
    }
    return level as PermissionLevel;
  }

  /**
   * Whether the caller may learn if a name exists at `path`: they may read the deepest collection
   * above it that exists (its parent, when that exists), so could list it and see. Anyone else gets
   * `concealed` whatever is there (docs/permissions.md).
   */
  async canSee(principal: Principal, path: string): Promise<boolean> {
    if (path === '/') return true;
    const above = await this.repo.deepestCollection(ancestorPaths(path));
    if (above === null) return false;
    return levelAtLeast(await this.levelOf(principal, { path: above, kind: 'collection' }), 'read');
  }

  /**
   * The one refusal for a path in a collection the caller cannot read, whether something is there
   * or not: it names only the path given, so the answer cannot tell the two apart.
   */
  concealed(path: string, needed: PermissionLevel): DomainError {
    return new DomainError(ErrorCode.PermissionDenied, `you need ${needed} access to ${path}`);
  }

  /**
   * `require` for a path the caller gave and what was found there (`entry` null when nothing is):
   * a caller who may read neither the entry nor the collection it is in gets `concealed`, missing or
   * not; anyone else gets `missing()` for a missing entry, or the usual PERMISSION_DENIED.
   */
  async requireAt(
    principal: Principal,
    path: string,
    entry: AccessTarget | null,
    needed: PermissionLevel,
    missing: () => DomainError,
  ): Promise<PermissionLevel> {
    this.assertWithinToken(principal, path);
    const level = entry ? await this.levelOf(principal, entry) : null;
    if (entry && levelAtLeast(level, needed)) return level as PermissionLevel;
    if (!levelAtLeast(level, 'read') && !(await this.canSee(principal, path))) {
      throw this.concealed(path, needed);
    }
    if (!entry) throw missing();
    throw new DomainError(
      ErrorCode.PermissionDenied,
      `you need ${needed} access to ${entry.path}` + (level ? ` (you have ${level})` : ''),
    );
  }

  assertWithinToken(principal: Principal, path: string): void {
    const confinedTo = principal.token?.collectionPath;
    if (confinedTo && !isWithin(path, confinedTo)) {
      throw new DomainError(
        ErrorCode.TokenOutsideCollection,
        `this token is confined to ${confinedTo}; ${path} is outside it`,
      );
    }
  }

  assertAdmin(principal: Principal): void {
    if (!principal.isAdmin)
      throw new DomainError(ErrorCode.AdminRequired, 'only an administrator can do this');
    if (principal.token?.collectionPath) {
      throw new DomainError(
        ErrorCode.TokenOutsideCollection,
        'a token confined to a collection cannot administer accounts',
      );
    }
  }
}
