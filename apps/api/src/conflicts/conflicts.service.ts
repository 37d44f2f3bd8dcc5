import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import {
  CONFLICT_KINDS,
  ErrorCode,
  joinPath,
  splitPath,
  toConflictDecision,
  type BulkConflictDecisionDto,
  type BulkConflictDecisionRequest,
  type ConflictContenderDto,
  type ConflictFactsDto,
  type ConflictDecision,
  type ConflictDecisionRequest,
  type ConflictDto,
  type ConflictKind,
  type ConflictListQuery,
  type ConflictPolicy,
  type ConflictPolicyDto,
  type ConflictPolicyRequest,
  type ConflictStatus,
  type ConflictSummaryDto,
  type Page,
} from '@tributary/shared';
import { compareVersions } from '@tributary/replication';
import type pg from 'pg';
import { AccessService, levelAtLeast } from '../access/access.service';
import { CredentialCache } from '../auth/credential-cache';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { redactSecrets } from '../common/serialize';
import { NamespaceService } from '../namespace/namespace.service';
import type { ConflictVersion } from '../replication/catalog/conflict-rows';
import { isTrashed } from '../replication/catalog/tables';
import { scalarText } from '../replication/catalog/values';
import { ReplicationService } from '../replication/replication.service';
import { SiteContext } from '../sites/site-context';
import { conflictView } from './conflict-view';
import {
  ConflictsRepository,
  type ConflictFilter,
  type ConflictRecord,
  type DecisionRow,
} from './conflicts.repository';

/** Time, replaceable in tests (deadlines). */
@Injectable()
export class ConflictClock {
  /** Added to the system time. */
  offsetMs = 0;
  now(): number {
    return Date.now() + this.offsetMs;
  }
}

/** Fields people may enter in a merged value, per table. Everything else comes from a version. */
const MERGEABLE: Record<string, readonly string[]> = {
  users: ['display_name', 'email'],
  project_groups: ['description'],
  memberships: ['role'],
  permissions: ['level', 'recursive'],
  data_objects: ['content_type'],
  conflict_policies: ['policy', 'site'],
};

/** Bookkeeping that differs between any two versions; not what people compare. */
const BOOKKEEPING = new Set(['updated_at', 'updated_by']);

/** Tables whose records live in the namespace (a path decides who may see and decide). */
const NAMESPACE_TABLES = new Set([
  'data_objects',
  'collections',
  'permissions',
  'conflict_policies',
  'metadata_triples',
]);

interface Rights {
  see: boolean;
  decide: boolean;
  involved: boolean;
}

/**
 * Conflict negotiation: lists what people may see, shows the versions side by side, applies
 * decisions (which replicate like any change and close the conflict everywhere), decides many at
 * once, and applies collections' default policies after each replication cycle.
 */
@Injectable()
export class ConflictsService implements OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('Conflicts');
  private applyingPolicies: Promise<void> | undefined;
  private stopping = false;

  constructor(
    private readonly repo: ConflictsRepository,
    private readonly access: AccessService,
    private readonly namespace: NamespaceService,
    private readonly replication: ReplicationService,
    private readonly site: SiteContext,
    @Inject(ConflictClock) private readonly clock: ConflictClock,
    private readonly credentials: CredentialCache,
  ) {}

  onModuleInit(): void {
    this.replication.afterCycle(() => {
      if (this.stopping) return;
      this.applyingPolicies ??= this.applyPolicies()
        .then(() => undefined)
        .catch((err: unknown) =>
          this.logger.error(
            `applying conflict policies failed: ${err instanceof Error ? err.message : String(err)}`,
          ),
        )
        .finally(() => (this.applyingPolicies = undefined));
    });
  }

  /** Before the pool ends (SqlPool): no new policy run starts, and a running one finishes. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopping = true;
    await this.applyingPolicies;
  }

  async list(
    p: Principal,
    q: ConflictListQuery & { status: string; limit: number },
  ): Promise<Page<ConflictDto>> {
    const visible = await this.visible(p, {
      kind: q.kind,
      path: q.path,
      site: q.site,
      status:
        q.status === 'decided' ? 'decided' : q.status === 'open' || q.status === 'final' ? 'open' : 'all',
    });
    const now = this.clock.now();
    let items = visible.filter(({ record, rights }) => {
      const status = statusOf(record, now);
      if (q.involving === 'me' && !rights.involved) return false;
      if (q.status === 'open' || q.status === 'final' || q.status === 'decided') return status === q.status;
      if (q.status === 'closed') return status !== 'open';
      return true;
    });
    const total = items.length;
    if (q.cursor) {
      const at = items.findIndex(({ record }) => record.id === q.cursor);
      if (at < 0)
        throw new DomainError(ErrorCode.InvalidCursor, 'the cursor does not belong to this listing');
      items = items.slice(at + 1);
    }
    const page = items.slice(0, q.limit);
    const dtos = await this.toDtos(p, page);
    return {
      items: dtos,
      total,
      nextCursor: items.length > q.limit ? page.at(-1)?.record.id : undefined,
    };
  }

  async summary(p: Principal): Promise<ConflictSummaryDto> {
    const now = this.clock.now();
    const open = (await this.visible(p, { status: 'open' })).filter(
      ({ record }) => statusOf(record, now) === 'open',
    );
    const byKind = Object.fromEntries(CONFLICT_KINDS.map((k) => [k, 0])) as Record<ConflictKind, number>;
    for (const { record } of open) byKind[record.kind] += 1;
    return { open: open.length, byKind, involvingMe: open.filter(({ rights }) => rights.involved).length };
  }

  async get(p: Principal, id: string): Promise<ConflictDto> {
    const record = await this.repo.findOne(id);
    const rights = record ? await this.rightsOn(p, record) : null;
    if (!record || !rights?.see) throw notFound(`conflict ${id}`);
    return (await this.toDtos(p, [{ record, rights }]))[0] as ConflictDto;
  }

  async decide(p: Principal, id: string, body: ConflictDecisionRequest): Promise<ConflictDto> {
    const record = await this.repo.findOne(id);
    const rights = record ? await this.rightsOn(p, record) : null;
    if (!record || !rights?.see) throw notFound(`conflict ${id}`);
    if (!rights.decide) {
      throw new DomainError(ErrorCode.PermissionDenied, `you may see conflict ${id} but not decide it`);
    }
    await this.apply(
      record,
      toConflictDecision(body),
      { userId: p.userId, username: p.username, policy: null },
      p,
    );
    return this.get(p, id);
  }

  async decideMany(p: Principal, body: BulkConflictDecisionRequest): Promise<BulkConflictDecisionDto> {
    const now = this.clock.now();
    const found = await this.visible(p, { ...body.filter, status: 'open' });
    const result: BulkConflictDecisionDto = { decided: [], skipped: [] };
    const wanted = body.filter.ids ? new Set(body.filter.ids) : null;
    for (const { record, rights } of found.slice(0, 1000)) {
      if (wanted) wanted.delete(record.id);
      if (statusOf(record, now) !== 'open') {
        result.skipped.push({ id: record.id, reason: 'its deadline has passed' });
        continue;
      }
      if (!rights.decide) {
        result.skipped.push({ id: record.id, reason: 'you may not decide it' });
        continue;
      }
      const decision = decisionFor(record, body.action, body.site ?? null);
      if ('skip' in decision) {
        result.skipped.push({ id: record.id, reason: decision.skip });
        continue;
      }
      try {
        await this.apply(record, decision, { userId: p.userId, username: p.username, policy: null }, p);
        result.decided.push(record.id);
      } catch (err) {
        result.skipped.push({ id: record.id, reason: err instanceof Error ? err.message : String(err) });
      }
    }
    for (const id of wanted ?? [])
      result.skipped.push({ id, reason: 'no open conflict you may see has this id' });
    return result;
  }

  async policies(p: Principal, path: string, kind?: ConflictKind): Promise<ConflictPolicyDto[]> {
    await this.access.require(p, { path, kind: 'collection' }, 'read');
    const rows = await this.repo.policies(path, kind);
    return rows.map((r) => ({
      path: r.path,
      kind: r.kind,
      policy: r.policy,
      site: r.site,
      setBy: r.set_by,
      updatedAt: new Date(r.updated_at).toISOString(),
    }));
  }

  async setPolicy(p: Principal, body: ConflictPolicyRequest): Promise<ConflictPolicyDto> {
    const collectionId = await this.ownedCollection(p, body.path);
    await this.repo.setPolicy(collectionId, body.kind, body.policy, body.site ?? null, p.userId);
    const [set] = (await this.policies(p, body.path, body.kind)).filter((x) => x.path === body.path);
    return set as ConflictPolicyDto;
  }

  async deletePolicy(p: Principal, path: string, kind: ConflictKind): Promise<void> {
    const collectionId = await this.ownedCollection(p, path);
    if (!(await this.repo.deletePolicy(collectionId, kind))) throw notFound(`a ${kind} policy on ${path}`);
  }

  /**
   * Decides open conflicts for which a collection has a default policy. One site decides each (the
   * least site id among the versions), so a decision is made once and replicates.
   */
  async applyPolicies(): Promise<number> {
    const now = this.clock.now();
    let decided = 0;
    for (const record of await this.repo.find({ status: 'open' })) {
      if (statusOf(record, now) !== 'open' || !record.collection_path) continue;
      const decider = record.versions.map((v) => v.site).sort()[0];
      if (decider !== this.site.siteId) continue;
      const policy = await this.repo.policyFor(record.collection_path, record.kind);
      if (!policy) continue;
      const decision = decisionFor(record, policy.policy, policy.site);
      const name = `${policy.policy}${policy.site ? ` ${policy.site}` : ''} (set on ${policy.path})`;
      try {
        await this.apply(record, 'skip' in decision ? { action: 'keep' } : decision, {
          userId: null,
          username: null,
          policy: name,
        });
        decided += 1;
      } catch (err) {
        this.logger.warn(`policy ${name} could not decide conflict ${record.id}: ${(err as Error).message}`);
      }
    }
    return decided;
  }

  /** Applies a decision: the record takes the chosen state and the conflict closes, in one transaction. */
  private async apply(
    record: ConflictRecord,
    body: ConflictDecision,
    by: { userId: bigint | null; username: string | null; policy: string | null },
    principal?: Principal,
  ): Promise<void> {
    const now = this.clock.now();
    if (record.kind === 'same-name' && body.action !== 'keep' && body.action !== 'rename') {
      throw new DomainError(
        ErrorCode.ValidationFailed,
        'a same-name conflict is decided by keeping the new name or renaming',
        { action: ['use keep or rename'] },
      );
    }
    if (body.action === 'rename' && record.kind !== 'same-name') {
      throw new DomainError(ErrorCode.ValidationFailed, 'rename decides same-name conflicts only', {
        action: ['use keep, choose or merge'],
      });
    }
    if (body.action === 'choose' && !record.versions[body.version]) {
      throw new DomainError(
        ErrorCode.ValidationFailed,
        `conflict ${record.id} has no version ${body.version}`,
        {
          version: [`must be between 0 and ${record.versions.length - 1}`],
        },
      );
    }
    const decision: DecisionRow = {
      ...decisionFields(by),
      action: body.action,
      value: decisionValue(body),
      site: this.site.siteId,
    };
    // A rename, and a choice of a version that moved the record to the trash, go through the namespace.
    if (body.action === 'rename') {
      if (!record.path || !principal)
        throw new DomainError(ErrorCode.ValidationFailed, 'only files and folders can be renamed here');
      const to = joinPath(splitPath(record.path).parent, body.name);
      await this.closeIfOpen(record.id, now, decision, {
        before: async () => {
          if (to !== record.path) await this.namespace.move(principal, record.path as string, to);
        },
      });
      return;
    }
    const chosen = body.action === 'choose' ? (record.versions[body.version] as ConflictVersion) : null;
    if (chosen && isTrashed(record.tbl, chosen.data) && record.path && principal) {
      await this.closeIfOpen(record.id, now, decision, {
        before: async () => {
          await this.namespace.delete(principal, record.path as string);
        },
      });
      return;
    }
    await this.closeIfOpen(record.id, now, decision, {
      write: async (client) => {
        if (body.action !== 'choose' && body.action !== 'merge') return;
        const current = await this.repo.currentRow(client, record.tbl, record.row_key);
        let next: Record<string, unknown> | null;
        if (body.action === 'choose') {
          next = chosen?.deleted ? null : { ...(chosen?.data ?? {}) };
        } else {
          next = { ...(current ?? provisional(record)?.data ?? {}), ...validatedMerge(record, body.value) };
        }
        if (next && by.userId !== null) {
          next.updated_by = String(by.userId);
          next.updated_at = new Date(now).toISOString();
        }
        try {
          await this.repo.writeRow(client, record.tbl, next, record.row_key, current !== null);
        } catch (err) {
          throw catalogError(err, record);
        }
      },
    });
  }

  /**
   * Runs `write` and records `decision`, closing the conflict, in one transaction, refusing one already
   * decided or past its deadline. `before` (a namespace operation with its own transaction) runs
   * first, so a failure there leaves the conflict open.
   */
  private async closeIfOpen(
    id: string,
    now: number,
    decision: DecisionRow,
    steps: { before?: () => Promise<void>; write?: (client: pg.PoolClient) => Promise<void> },
  ): Promise<void> {
    const check = await this.repo.findOne(id);
    if (!check) throw notFound(`conflict ${id}`);
    assertOpen(check, now);
    if (steps.before) await steps.before();
    await this.repo.transaction(async (client) => {
      const status = await this.repo.lock(client, id);
      if (status !== 'open') throw closed(check, 'it was decided meanwhile');
      if (steps.write) await steps.write(client);
      await this.repo.markDecided(client, id, decision);
    });
    // A decision may rewrite an account, token or membership; the next request must see it.
    this.credentials.forget();
  }

  private async ownedCollection(p: Principal, path: string): Promise<string> {
    await this.access.require(p, { path, kind: 'collection' }, 'own');
    const id = await this.repo.collectionId(path);
    if (!id) throw notFound(`collection ${path}`);
    return id;
  }

  private async visible(
    p: Principal,
    filter: ConflictFilter,
  ): Promise<Array<{ record: ConflictRecord; rights: Rights }>> {
    const out: Array<{ record: ConflictRecord; rights: Rights }> = [];
    for (const record of await this.repo.find(filter)) {
      const rights = await this.rightsOn(p, record);
      if (rights.see) out.push({ record, rights });
    }
    return out;
  }

  /** Who may see and decide a conflict: those with rights on its record (administrators on all). */
  private async rightsOn(p: Principal, record: ConflictRecord): Promise<Rights> {
    const me = String(p.userId);
    const involved =
      record.versions.some((v) => v.by === me) ||
      record.owner_id === me ||
      (record.tbl === 'users' && record.row_key === me) ||
      record.versions.some((v) => scalarText(v.data?.user_id ?? '') === me);
    const place = record.path ?? record.collection_path;
    if (
      NAMESPACE_TABLES.has(record.tbl) ||
      (place && !['users', 'project_groups', 'memberships', 'api_tokens'].includes(record.tbl))
    ) {
      if (!place) return { see: p.isAdmin, decide: p.isAdmin, involved };
      const needed = record.tbl === 'permissions' || record.tbl === 'conflict_policies' ? 'own' : 'write';
      const level = await this.access.levelOf(p, {
        path: place,
        kind: record.tbl === 'data_objects' ? 'object' : 'collection',
      });
      return { see: levelAtLeast(level, 'read') || involved, decide: levelAtLeast(level, needed), involved };
    }
    const confined = Boolean(p.token?.collectionPath);
    if (p.isAdmin && !confined) return { see: true, decide: true, involved };
    if (record.tbl === 'users' || record.tbl === 'api_tokens') {
      const own = record.tbl === 'users' ? record.row_key === me : involved;
      return { see: own || involved, decide: own && !confined, involved };
    }
    if (record.tbl === 'project_groups' || record.tbl === 'memberships') {
      const groupId =
        record.tbl === 'project_groups'
          ? record.row_key
          : scalarText(provisional(record)?.data?.group_id ?? '');
      const manager = (await this.repo.managedGroups(p.userId)).has(groupId);
      return { see: manager || involved, decide: manager && !confined, involved };
    }
    return { see: involved, decide: false, involved };
  }

  private async toDtos(
    p: Principal,
    rows: Array<{ record: ConflictRecord; rights: Rights }>,
  ): Promise<ConflictDto[]> {
    const ids = {
      collections: [] as string[],
      objects: [] as string[],
      users: [] as string[],
      groups: [] as string[],
    };
    const keysByTable = new Map<string, string[]>();
    for (const { record } of rows) {
      keysByTable.set(record.tbl, [...(keysByTable.get(record.tbl) ?? []), record.row_key]);
      for (const v of record.versions) {
        if (v.by) ids.users.push(v.by);
        const d = v.data ?? {};
        for (const [field, list] of [
          ['collection_id', ids.collections],
          ['parent_id', ids.collections],
          ['object_id', ids.objects],
          ['user_id', ids.users],
          ['group_id', ids.groups],
          ['created_by', ids.users],
        ] as const) {
          if (d[field] !== null && d[field] !== undefined) list.push(scalarText(d[field]));
        }
      }
    }
    const contests = new Map<string, ConflictContenderDto[]>();
    for (const { record } of rows) {
      if (record.kind !== 'same-name' || typeof record.detail.name !== 'string') continue;
      const found = await this.repo.contenders(record.tbl, record.detail.name, record.collection_id);
      for (const c of found) if (c.by) ids.users.push(c.by);
      found.sort((a, b) => a.stamp - b.stamp || a.key.localeCompare(b.key));
      contests.set(
        record.id,
        found.map((c) => ({
          recordId: c.key,
          site: c.site,
          createdAt: new Date(Math.floor(c.stamp / 1000)).toISOString(),
          createdBy: c.by,
          name: c.current?.name ?? null,
          path: c.current?.path ?? null,
          size: c.current?.size === null || c.current?.size === undefined ? null : Number(c.current.size),
          checksum: c.current?.checksum ?? null,
          kept: c.kept,
          trashed: Boolean(c.current && c.current.trash_id !== '0'),
          gone: !c.current,
        })),
      );
    }
    const [lookups, existing] = await Promise.all([this.repo.lookups(ids), this.repo.existing(keysByTable)]);
    const names = lookups.users;
    for (const list of contests.values()) {
      for (const c of list) c.createdBy = c.createdBy ? (names.get(c.createdBy) ?? null) : null;
    }
    const now = this.clock.now();
    return rows.map(({ record, rights }) => {
      const status = statusOf(record, now);
      const winner = provisional(record);
      const contenders = contests.get(record.id) ?? [];
      const view = conflictView(
        {
          kind: record.kind,
          tbl: record.tbl,
          path: record.path,
          exists: existing.has(`${record.tbl}:${record.row_key}`),
          versions: record.versions,
          detail: record.detail,
        },
        Math.max(0, winner ? record.versions.indexOf(winner) : 0),
        lookups,
        contenders,
      );
      return {
        id: record.id,
        kind: record.kind,
        table: record.tbl,
        recordId: record.row_key,
        path: record.path,
        status,
        openedAt: new Date(record.opened_at).toISOString(),
        deadline: new Date(record.deadline).toISOString(),
        versions: record.versions.map((v, index) => ({
          index,
          site: v.site,
          at: new Date(Math.floor(v.stamp / 1000)).toISOString(),
          deleted: v.deleted,
          trashed: isTrashed(record.tbl, v.data),
          by: v.by ? (names.get(v.by) ?? null) : null,
          ...(v.key ? { recordId: v.key } : {}),
          values: redactSecrets(v.data),
          facts: view.facts[index] as ConflictFactsDto,
          provisionalWinner: v === winner,
        })),
        changedFields: changedFields(record.versions),
        detail: record.detail,
        entry: view.entry,
        story: view.story,
        differing: view.differing,
        contenders,
        decision:
          record.status === 'decided'
            ? {
                action: record.decision ?? 'keep',
                by: record.decided_by_name,
                policy: record.decided_policy,
                at: new Date(record.decided_at as string).toISOString(),
                site: record.decided_at_site ?? '',
                value: record.decided_value,
              }
            : null,
        involvesMe: rights.involved,
        canDecide: rights.decide && status === 'open',
      };
    });
  }
}

function statusOf(record: ConflictRecord, now: number): ConflictStatus {
  if (record.status === 'decided') return 'decided';
  return Date.parse(record.deadline) <= now ? 'final' : 'open';
}

function closed(record: ConflictRecord, why: string): DomainError {
  return new DomainError(ErrorCode.ConflictClosed, `conflict ${record.id} is closed: ${why}`);
}

function assertOpen(record: ConflictRecord, now: number): void {
  const status = statusOf(record, now);
  if (status === 'decided') {
    throw closed(
      record,
      `it was decided${record.decided_by_name ? ` by ${record.decided_by_name}` : ''} at ${record.decided_at_site ?? 'another site'}`,
    );
  }
  if (status === 'final') {
    throw closed(
      record,
      `its deadline passed at ${new Date(record.deadline).toISOString()}, so the provisional version is final; change the record itself instead`,
    );
  }
}

function provisional(record: ConflictRecord): ConflictVersion | undefined {
  return record.versions.find(
    (v) => v.site === record.winner_site && v.stamp === Number(record.winner_stamp),
  );
}

/** What a policy or a bulk action means for one conflict. */
function decisionFor(
  record: ConflictRecord,
  policy: ConflictPolicy,
  site: string | null,
): ConflictDecision | { skip: string } {
  if (policy === 'keep' || record.kind === 'same-name') return { action: 'keep' };
  let index = -1;
  record.versions.forEach((v, i) => {
    if (policy === 'prefer-site' && v.site !== site) return;
    if (index < 0 || compareVersions(v, record.versions[index] as ConflictVersion) > 0) index = i;
  });
  if (index < 0) return { skip: `no version from ${site}` };
  return { action: 'choose', version: index };
}

function decisionFields(by: { userId: bigint | null; username: string | null; policy: string | null }) {
  return { userId: by.userId, username: by.username, policy: by.policy };
}

/** What a decision records besides its action: the version chosen, the merged value or the new name. */
function decisionValue(body: ConflictDecision): unknown {
  switch (body.action) {
    case 'choose':
      return { version: body.version };
    case 'merge':
      return body.value;
    case 'rename':
      return { name: body.name };
    case 'keep':
      return null;
  }
}

function validatedMerge(record: ConflictRecord, value: Record<string, unknown>): Record<string, unknown> {
  const allowed = MERGEABLE[record.tbl] ?? [];
  const fields = Object.keys(value);
  if (allowed.length === 0) {
    throw new DomainError(
      ErrorCode.ValidationFailed,
      `conflicts on ${record.tbl} are decided by keep or choose`,
      {
        action: ['use keep or choose'],
      },
    );
  }
  const unknown = fields.filter((f) => !allowed.includes(f));
  if (fields.length === 0 || unknown.length > 0) {
    throw new DomainError(ErrorCode.ValidationFailed, `a merged value may set ${allowed.join(', ')}`, {
      value: unknown.length ? unknown.map((f) => `${f} cannot be merged`) : ['give at least one field'],
    });
  }
  for (const f of fields) {
    const v = value[f];
    if (v !== null && !['string', 'number', 'boolean'].includes(typeof v)) {
      throw new DomainError(ErrorCode.ValidationFailed, `${f} must be a string, number, boolean or null`, {
        [`value.${f}`]: ['must be a string, number, boolean or null'],
      });
    }
    if (typeof v === 'string' && (v.length > 1000 || /\p{Cc}/u.test(v))) {
      throw new DomainError(
        ErrorCode.ValidationFailed,
        `${f} must be at most 1000 characters without control characters`,
        {
          [`value.${f}`]: ['too long or has control characters'],
        },
      );
    }
  }
  return value;
}

/** A value PostgreSQL refused (a name taken, a wrong type): the caller's to fix, nothing written. */
function catalogError(err: unknown, record: ConflictRecord): Error {
  const code = (err as { code?: string }).code ?? '';
  if (code === '23505') {
    return new DomainError(
      ErrorCode.NameTaken,
      `that version's name is taken now; rename the other record first`,
    );
  }
  if (code === '23503') {
    return new DomainError(
      ErrorCode.ConflictClosed,
      `that version refers to something deleted since; it cannot be restored`,
    );
  }
  if (code.startsWith('22') || code === '23514' || code === '23502') {
    return new DomainError(
      ErrorCode.ValidationFailed,
      `the value is not valid for ${record.tbl}: ${(err as Error).message}`,
    );
  }
  return err as Error;
}

function changedFields(versions: readonly ConflictVersion[]): string[] {
  const keys = new Set<string>();
  for (const v of versions) for (const k of Object.keys(v.data ?? {})) keys.add(k);
  return [...keys]
    .filter((k) => !BOOKKEEPING.has(k))
    .filter((k) => new Set(versions.map((v) => JSON.stringify(v.data?.[k] ?? null))).size > 1)
    .sort();
}
