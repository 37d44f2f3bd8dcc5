import { Injectable } from '@nestjs/common';
import {
  ancestorPaths,
  checkCondition,
  ConditionError,
  ErrorCode,
  isCatalogId,
  parseQueryText,
  QuerySyntaxError,
  type Page,
  type PermissionLevel,
  type PlacementSiteDto,
  type PlacementRuleDto,
  type PlacementRuleRequest,
  type SubscriptionDto,
  type SubscriptionListDto,
  type SubscriptionRequest,
} from '@tributary/shared';
import { erasureDomains } from '@tributary/placement';
import { AccessService, levelAtLeast } from '../access/access.service';
import { DomainError } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { invalidRule, noCollection, noRule, noSubscription } from './placement.errors';
import { PlacementRepository, type RuleCursor, type RuleRecord } from './placement.repository';

/** What the validation pipe hands over (defaults applied, path normalised). */
interface RuleListInput {
  path: string;
  limit: number;
  cursor?: string;
}

/**
 * Placement rules (docs/placement.md, "Placement rules"): who may set them, what a rule may ask for,
 * and the rules that apply at a collection. The mover reads the rules from the catalog itself.
 */
@Injectable()
export class PlacementService {
  constructor(
    private readonly repo: PlacementRepository,
    private readonly access: AccessService,
  ) {}

  async create(p: Principal, body: PlacementRuleRequest): Promise<PlacementRuleDto> {
    const collection = await this.collectionAt(p, body.path, 'own');
    const details: Record<string, string[]> = {};
    const add = (field: string, message: string): void => void (details[field] ??= []).push(message);

    const known = (await this.repo.sites()).map((s) => s.id);
    const unknown = (body.sites ?? []).filter((s) => !known.includes(s));
    if (unknown.length > 0)
      add('sites', `unknown site${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`);
    if (body.copies !== undefined && body.copies > known.length) {
      add('copies', `must be at most the number of usable sites (${known.length})`);
    }
    const erasure = body.erasure && {
      k: body.erasure.k,
      m: body.erasure.m,
      domain: body.erasure.domain ?? 'site',
    };
    if (erasure) {
      // Each shard in another failure domain: refused when there are fewer domains than shards.
      const domains = erasureDomains(
        { domain: erasure.domain, sites: body.sites ?? null },
        known,
        erasure.domain === 'resource' ? await this.repo.resources() : [],
      );
      const shards = erasure.k + erasure.m;
      if (domains < shards)
        add(
          'erasure',
          `k + m = ${shards} shards need ${shards} different ${erasure.domain === 'site' ? 'sites' : 'storage resources'}; ` +
            `the rule can use ${domains}`,
        );
    }
    if (body.resources) {
      // Each resource must be one of its site's (as the catalog knows them), not a compound's part.
      const placeable = await this.repo.placeableResources(body.resources.map((r) => r.site));
      body.resources.forEach((r, i) => {
        const names = placeable.get(r.site) ?? [];
        if (!names.includes(r.resource))
          add(
            `resources.${i}.resource`,
            names.length > 0
              ? `${r.site} has no storage resource "${r.resource}" (it has ${names.join(', ')})`
              : `${r.site} has no storage resource "${r.resource}"`,
          );
      });
    }
    const condition = body.condition === undefined ? null : body.condition;
    if (condition !== null) {
      const problem = conditionProblem(condition);
      if (problem) add('condition', problem);
    }
    const expiresAt = body.expiresAt === undefined ? null : new Date(body.expiresAt);
    if (expiresAt && expiresAt.getTime() <= Date.now()) add('expiresAt', 'must be in the future');
    if (Object.keys(details).length > 0) throw invalidRule(details);

    const id = await this.repo.insert({
      collectionId: collection.id,
      copies: erasure ? erasure.k + erasure.m : (body.copies ?? 1),
      sites: body.sites ?? null,
      condition,
      expiresAt,
      ownerId: p.userId,
      ...(erasure ? { erasure } : {}),
      ...(body.resources ? { resources: body.resources } : {}),
    });
    if (!id) throw noCollection(body.path);
    const record = await this.repo.findOne(id);
    if (!record) throw noRule(id);
    return toDto(record, null);
  }

  /**
   * Subscribes a site (default: this one) to the collection at `path`: a placement rule with that
   * site as its one site, marked as a subscription (docs/placement.md, "Subscriptions"). Needs
   * `own` on the collection, as any rule. An identical subscription is answered as it is.
   */
  async subscribe(p: Principal, body: SubscriptionRequest, localSite: string): Promise<SubscriptionDto> {
    const collection = await this.collectionAt(p, body.path, 'own');
    const site = body.site ?? localSite;
    const details: Record<string, string[]> = {};
    if (!(await this.repo.sites()).some((s) => s.id === site))
      (details.site ??= []).push(`unknown site: ${site}`);
    const condition = body.condition ?? null;
    const problem = condition === null ? null : conditionProblem(condition);
    if (problem) (details.condition ??= []).push(problem);
    if (Object.keys(details).length > 0) throw invalidRule(details);
    const same = (await this.repo.subscriptions(body.path, site, 1000)).find(
      (r) => r.collection_id === collection.id && r.condition === condition,
    );
    if (same) return toSubscriptionDto(same);
    const id = await this.repo.insert({
      collectionId: collection.id,
      copies: 1,
      sites: [site],
      condition,
      expiresAt: null,
      ownerId: p.userId,
      subscription: true,
    });
    if (!id) throw noCollection(body.path);
    const record = await this.repo.findOne(id);
    if (!record) throw noRule(id);
    return toSubscriptionDto(record);
  }

  /**
   * Who subscribes to what: the subscriptions on the collection at `path` and below it whose
   * collection the caller may read (the others are not shown), of one subscriber when `site` is given.
   */
  async subscriptions(p: Principal, path: string, site: string | undefined): Promise<SubscriptionListDto> {
    await this.collectionAt(p, path, 'read');
    const items: SubscriptionDto[] = [];
    for (const r of await this.repo.subscriptions(path, site, 1000)) {
      const level = await this.access.levelOf(p, { path: r.path, kind: 'collection' });
      if (levelAtLeast(level, 'read')) items.push(toSubscriptionDto(r));
    }
    return { items };
  }

  /** Removes a subscription (needs `own` on its collection); its copies stay where they are. */
  async unsubscribe(p: Principal, id: string): Promise<void> {
    const rule = await this.repo.findOne(id);
    if (!rule?.subscription) throw noSubscription(id);
    const level = await this.access.levelOf(p, { path: rule.path, kind: 'collection' });
    if (!levelAtLeast(level, 'read')) throw noSubscription(id);
    if (!levelAtLeast(level, 'own')) throw permissionDenied(rule.path, level);
    if (!(await this.repo.delete(id))) throw noSubscription(id);
  }

  /** The sites a rule may name (any signed-in caller: site ids are no secret, copies show them). */
  async sites(): Promise<PlacementSiteDto[]> {
    return (await this.repo.sites()).map((s) => ({ id: s.id, name: s.name, local: s.is_local }));
  }

  /** The rules on the collection at `path` and those it inherits from its ancestors. */
  async list(p: Principal, q: RuleListInput): Promise<Page<PlacementRuleDto>> {
    await this.collectionAt(p, q.path, 'read');
    const paths = [q.path, ...ancestorPaths(q.path)];
    const after = q.cursor === undefined ? null : parseCursor(q.cursor);
    const [rows, total] = await Promise.all([
      this.repo.onPaths(paths, q.limit + 1, after),
      this.repo.countOnPaths(paths),
    ]);
    const page = rows.slice(0, q.limit);
    const last = page.at(-1);
    return {
      items: page.map((r) => toDto(r, r.path === q.path ? null : r.path)),
      total,
      ...(rows.length > q.limit && last ? { nextCursor: `${last.path.length}.${last.id}` } : {}),
    };
  }

  async remove(p: Principal, id: string): Promise<void> {
    const rule = await this.repo.findOne(id);
    if (!rule) throw noRule(id);
    // A token confined elsewhere gets null here: the rule does not exist for it.
    const level = await this.access.levelOf(p, { path: rule.path, kind: 'collection' });
    if (!levelAtLeast(level, 'read')) throw noRule(id);
    if (!levelAtLeast(level, 'own')) throw permissionDenied(rule.path, level);
    if (!(await this.repo.delete(id))) throw noRule(id);
  }

  /**
   * The live collection at `path` when the caller holds `needed` on it. Refusals are the API's usual
   * ones (AccessService.requireAt): whoever cannot read the collection above the path gets the same
   * PERMISSION_DENIED whether something is there or not; an object at the path is a 422 for those
   * who may read it.
   */
  private async collectionAt(
    p: Principal,
    path: string,
    needed: PermissionLevel,
  ): Promise<{ id: string; level: PermissionLevel }> {
    const entry = await this.repo.entryAt(path);
    const level = await this.access.requireAt(
      p,
      path,
      entry && {
        path,
        kind: entry.kind,
        ...(entry.kind === 'object' ? { objectId: BigInt(entry.id) } : {}),
      },
      'read',
      () => noCollection(path),
    );
    if (!entry) throw noCollection(path);
    if (entry.kind === 'object') {
      throw invalidRule({ path: ['is an object; rules are set on collections (they cover what is below)'] });
    }
    if (!levelAtLeast(level, needed)) throw permissionDenied(path, level);
    return { id: entry.id, level };
  }
}

function permissionDenied(path: string, level: PermissionLevel | null): DomainError {
  return new DomainError(
    ErrorCode.PermissionDenied,
    `you need own access to ${path} to change its placement rules` + (level ? ` (you have ${level})` : ''),
  );
}

/** Why a rule's condition is refused, or null when it parses and checks. */
function conditionProblem(text: string): string | null {
  try {
    checkCondition(parseQueryText(text), 'condition');
    return null;
  } catch (err) {
    if (err instanceof QuerySyntaxError) return `${err.reason} at position ${err.position + 1}`;
    if (err instanceof ConditionError) return `${err.at}: ${err.message}`;
    throw err;
  }
}

function parseCursor(cursor: string): RuleCursor {
  const match = /^([0-9]{1,5})\.([0-9]+)$/.exec(cursor);
  if (!match || !isCatalogId(match[2] as string))
    throw new DomainError(ErrorCode.InvalidCursor, 'the cursor does not belong to this listing');
  return { pathLength: Number(match[1]), id: match[2] as string };
}

function toDto(r: RuleRecord, inheritedFrom: string | null): PlacementRuleDto {
  return {
    id: r.id,
    path: r.path,
    copies: r.copies,
    sites: r.sites,
    condition: r.condition,
    expiresAt: r.expires_at ? new Date(r.expires_at).toISOString() : null,
    owner: r.owner,
    createdAt: new Date(r.created_at).toISOString(),
    subscription: r.subscription,
    resources: r.resources,
    erasure:
      r.erasure_k === null || r.erasure_m === null
        ? null
        : { k: r.erasure_k, m: r.erasure_m, domain: r.erasure_domain ?? 'site' },
    inheritedFrom,
  };
}

function toSubscriptionDto(r: RuleRecord): SubscriptionDto {
  return {
    id: r.id,
    path: r.path,
    site: r.sites?.[0] ?? '',
    condition: r.condition,
    owner: r.owner,
    createdAt: new Date(r.created_at).toISOString(),
  };
}
