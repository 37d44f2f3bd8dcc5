import { Injectable } from '@nestjs/common';
import {
  checkedTriple,
  ErrorCode,
  isWithin,
  MAX_BULK_ROWS,
  typedValue,
  type BulkMetadataResult,
  type CheckedTriple,
  type CheckedTripleColumn,
  type Condition,
  type EntryTriplesDto,
  type MetadataAttributesDto,
  type MetadataQueryResult,
  type TripleDto,
  type UpdateTripleRequest,
} from '@tributary/shared';
import { AccessService, levelAtLeast, type AccessTarget, type Visibility } from '../access/access.service';
import { DomainError, notFound } from '../common/domain-error';
import type { Principal } from '../common/principal';
import { parseCondition } from './query-condition';
import { MetadataQueryRepository, type QuerySort } from './metadata-query.repository';
import {
  MetadataRepository,
  type EntryKind,
  type MetadataTarget,
  type TripleGroup,
  type TripleRecord,
} from './metadata.repository';

export function toTripleDto(t: TripleRecord): TripleDto {
  return {
    id: t.id.toString(),
    attribute: t.attribute,
    value: t.type === 'number' ? Number(t.value) : t.value,
    type: t.type,
    unit: t.unit,
    modifiedAt: t.updatedAt.toISOString(),
  };
}

/** A checked bulk operation (the zod schema's output). */
export interface BulkOperation {
  paths?: string[];
  under?: string;
  include: 'objects' | 'collections' | 'all';
  add: CheckedTriple[];
  set: CheckedTriple[];
  remove: { attribute: string; value: string | null; unit: string | null | undefined }[];
  columns: CheckedTripleColumn[];
}

export interface QueryInput {
  where?: unknown;
  q?: string;
  scope: string;
  kind: EntryKind;
  sort: QuerySort;
  order: 'asc' | 'desc';
  limit: number;
  cursor?: string;
  facets: string[];
  facetLimit: number;
  withTriples: boolean;
  count: boolean;
  exact: boolean;
}

/** Postgres' foreign-key violation: the object or collection was purged meanwhile. */
const FK_VIOLATION = '23503';

@Injectable()
export class MetadataService {
  constructor(
    private readonly repo: MetadataRepository,
    private readonly queries: MetadataQueryRepository,
    private readonly access: AccessService,
  ) {}

  private async target(
    principal: Principal,
    path: string,
    needed: 'read' | 'write',
  ): Promise<MetadataTarget> {
    this.access.assertWithinToken(principal, path);
    const [entry] = await this.repo.resolve([path]);
    // Same answer as the namespace: 404 only to a caller who may read where it would be.
    await this.access.requireAt(principal, path, entry ? accessTarget(entry) : null, needed, () =>
      notFound(path),
    );
    return entry!;
  }

  async list(principal: Principal, path: string): Promise<EntryTriplesDto> {
    const entry = await this.target(principal, path, 'read');
    const triples = await this.repo.list(entry.kind, entry.id);
    return { kind: entry.kind, id: entry.id.toString(), path: entry.path, triples: triples.map(toTripleDto) };
  }

  async add(principal: Principal, path: string, triples: CheckedTriple[]): Promise<TripleDto[]> {
    const entry = await this.target(principal, path, 'write');
    const added = await this.writing(() =>
      this.repo.transaction((db) =>
        this.repo.addReturning(db, entry.kind, entry.id, dedupe(triples), principal.userId),
      ),
    );
    return added.map(toTripleDto);
  }

  async update(principal: Principal, id: bigint, patch: UpdateTripleRequest): Promise<TripleDto> {
    return this.writing(() =>
      this.repo.transaction(async (db) => {
        const current = await this.repo.findOne(id, db);
        if (!current?.path) throw notFound(`triple ${id}`);
        await this.requireWrite(principal, current);
        let value: ReturnType<typeof typedValue>;
        try {
          const raw = patch.value ?? (current.type === 'number' ? Number(current.value) : current.value);
          value = typedValue(raw, patch.type ?? (patch.value === undefined ? current.type : undefined));
        } catch (err) {
          throw new DomainError(
            ErrorCode.ValidationFailed,
            `invalid input: value: ${(err as Error).message}`,
            {
              value: [(err as Error).message],
            },
          );
        }
        const updated = await this.repo.updateOne(
          db,
          id,
          {
            attribute: patch.attribute ?? current.attribute,
            type: value.type,
            value: value.text,
            num: value.num,
            time: value.time,
            unit: patch.unit === undefined ? current.unit : patch.unit || null,
          },
          principal.userId,
        );
        return toTripleDto(updated);
      }),
    );
  }

  async remove(principal: Principal, id: bigint): Promise<void> {
    await this.repo.transaction(async (db) => {
      const current = await this.repo.findOne(id, db);
      if (!current?.path) throw notFound(`triple ${id}`);
      await this.requireWrite(principal, current);
      await this.repo.deleteOne(db, id);
    });
  }

  private async requireWrite(principal: Principal, t: TripleRecord & { path: string | null }): Promise<void> {
    try {
      await this.access.require(
        principal,
        { path: t.path!, kind: t.kind, objectId: t.kind === 'object' ? t.targetId : undefined },
        'write',
      );
    } catch (err) {
      // Someone who may not even read the entry learns nothing about the triple.
      if (
        err instanceof DomainError &&
        !(await this.access.levelOf(principal, {
          path: t.path!,
          kind: t.kind,
          objectId: t.kind === 'object' ? t.targetId : undefined,
        }))
      ) {
        throw notFound(`triple ${t.id}`);
      }
      throw err;
    }
  }

  /**
   * Applies every operation in one transaction: all of it or none. Within the request, removals come
   * first, then replacements (`set`), then additions.
   */
  async bulk(principal: Principal, operations: BulkOperation[]): Promise<BulkMetadataResult> {
    const explicit = [...new Set(operations.flatMap((o) => o.paths ?? []))];
    for (const p of explicit) this.access.assertWithinToken(principal, p);
    for (const o of operations) if (o.under) this.access.assertWithinToken(principal, o.under);

    return this.writing(() =>
      this.repo.transaction(async (db) => {
        const resolved = await this.repo.resolve(explicit, db);
        const byPath = new Map(resolved.map((e) => [e.path, e]));
        await this.requireWriteAll(principal, explicit, byPath);

        // Targets of each operation, by kind.
        const work: { kind: EntryKind; ids: bigint[]; op: BulkOperation }[] = [];
        for (const op of operations) {
          if (op.paths) {
            const entries = op.paths.map((p) => byPath.get(p)!);
            for (const kind of ['object', 'collection'] as const) {
              const ids = [...new Set(entries.filter((e) => e.kind === kind).map((e) => e.id))];
              if (ids.length) work.push({ kind, ids, op });
            }
          } else {
            const under = op.under!;
            const [root] = await this.repo.resolve([under], db);
            // Whether `under` exists is told only to a caller who may read it or where it is.
            const rootLevel = root ? await this.access.levelOf(principal, accessTarget(root)) : null;
            if (!levelAtLeast(rootLevel, 'read') && !(await this.access.canSee(principal, under))) {
              throw this.access.concealed(under, 'write');
            }
            if (root?.kind !== 'collection') throw notFound(`collection ${under}`);
            const level = await this.access.inheritedBelow(principal, under);
            if (!levelAtLeast(level, 'write')) {
              throw new DomainError(
                ErrorCode.PermissionDenied,
                `you need write access to everything under ${under}`,
              );
            }
            for (const kind of ['object', 'collection'] as const) {
              if (op.include !== 'all' && op.include !== `${kind}s`) continue;
              const ids = await this.repo.idsUnder(under, kind, db);
              if (ids.length) work.push({ kind, ids, op });
            }
          }
        }
        const tables = { object: [] as TripleGroup[], collection: [] as TripleGroup[] };
        for (const op of operations) {
          if (op.columns.length) tableRows(op.paths!, op.columns, byPath, tables);
        }
        const rows = work.reduce(
          (n, w) => n + w.ids.length * (w.op.add.length + w.op.set.length + w.op.remove.length),
          tables.object.reduce((n, g) => n + g.triples.length, 0) +
            tables.collection.reduce((n, g) => n + g.triples.length, 0),
        );
        if (rows > MAX_BULK_ROWS) {
          throw new DomainError(
            ErrorCode.PayloadTooLarge,
            `this request would change ${rows} (entry, triple) pairs; at most ${MAX_BULK_ROWS} per request: split it`,
          );
        }
        const result: BulkMetadataResult = {
          targets: new Set(work.flatMap((w) => w.ids.map((id) => `${w.kind}:${id}`))).size,
          added: 0,
          updated: 0,
          removed: 0,
        };
        for (const kind of ['object', 'collection'] as const) {
          const mine = work.filter((w) => w.kind === kind);
          for (const w of mine) result.removed += await this.repo.remove(db, kind, w.ids, w.op.remove);
          const sets = mine.map((w) => ({ targets: w.ids, triples: dedupe(w.op.set) }));
          const s = await this.repo.set(db, kind, sets, principal.userId);
          result.updated += s.updated;
          result.removed += s.removed;
          result.added += s.added;
          const adds = mine.map((w) => ({ targets: w.ids, triples: dedupe(w.op.add) }));
          adds.push(...tables[kind]);
          result.added += await this.repo.add(db, kind, distinctPairs(adds), principal.userId);
        }
        return result;
      }),
    );
  }

  /**
   * Write access to every path, checked as a set (one query for the caller's grants), in the order
   * given: the first refusal wins, and a path in a collection the caller cannot read is refused the
   * same whether it exists or not. Only then are the missing paths the caller may know of reported.
   */
  private async requireWriteAll(
    principal: Principal,
    paths: string[],
    byPath: Map<string, MetadataTarget>,
  ): Promise<void> {
    const v = principal.isAdmin ? null : await this.access.visibility(principal, 'write');
    const missing: string[] = [];
    for (const path of paths) {
      const e = byPath.get(path);
      if (e && (v === null || covers(v, e, principal.userId))) continue;
      if (!e && principal.isAdmin) {
        missing.push(path);
        continue;
      }
      try {
        await this.access.requireAt(principal, path, e ? accessTarget(e) : null, 'write', () =>
          notFound(path),
        );
      } catch (err) {
        if (!e && err instanceof DomainError && err.code === ErrorCode.NotFound) missing.push(path);
        else throw err;
      }
    }
    if (missing.length) {
      throw new DomainError(
        ErrorCode.NotFound,
        `${missing.length} path(s) do not exist, nothing was changed: ${missing.slice(0, 5).join(', ')}${missing.length > 5 ? ', ...' : ''}`,
        { paths: missing.slice(0, 100) },
      );
    }
  }

  /** Attribute names in use on entries the caller may read (for suggestions in forms and the search box). */
  async attributes(principal: Principal, prefix: string, limit: number): Promise<MetadataAttributesDto> {
    const visibility = await this.access.visibility(principal, 'read');
    return { attributes: await this.queries.attributes(prefix, limit, visibility) };
  }

  async query(principal: Principal, input: QueryInput): Promise<MetadataQueryResult> {
    const where = this.condition(input);
    this.access.assertWithinToken(principal, input.scope);
    const visibility = await this.access.visibility(principal, 'read');
    const spec = await this.queries.resolveAreas({
      kind: input.kind,
      where,
      scope: input.scope,
      sort: input.sort,
      order: input.order,
      limit: input.limit,
      after: input.cursor ? decodeCursor(input.cursor, input.sort, input.order) : null,
      visibility,
    });
    const [page, summary] = await Promise.all([
      input.limit > 0 ? this.queries.page({ ...spec, limit: input.limit + 1 }) : Promise.resolve([]),
      this.queries.summary(spec, {
        count: input.count,
        facets: input.facets,
        facetLimit: input.facetLimit,
        exact: input.exact,
      }),
    ]);
    const { total, facets } = summary;
    const items = page.slice(0, input.limit);
    const more = input.limit > 0 && page.length > input.limit;
    const triples = input.withTriples
      ? await this.repo.listMany(
          input.kind,
          items.map((i) => i.id),
        )
      : undefined;
    const result: MetadataQueryResult = {
      items: items.map((h) => ({
        kind: input.kind,
        id: h.id.toString(),
        name: h.name,
        path: h.path,
        size: Number(h.size),
        modifiedAt: h.updatedAt.toISOString(),
        ...(triples ? { triples: (triples.get(h.id) ?? []).map(toTripleDto) } : {}),
      })),
    };
    if (more) {
      const last = items[items.length - 1]!;
      result.nextCursor = encodeCursor(input.sort, input.order, last.sortValue, last.id);
    }
    if (total !== undefined) {
      result.total = total.n;
      result.totalIsEstimate = total.estimate;
    }
    if (input.facets.length) {
      result.facetsAreEstimates = summary.facetsAreEstimates;
      result.facets = Object.fromEntries(
        input.facets.map((a, i) => [
          a,
          facets[i]!.map((f) => ({ value: f.type === 'number' ? Number(f.value) : f.value, count: f.count })),
        ]),
      );
    }
    return result;
  }

  /** The request's condition, from either form; errors name the field and, for text, the position. */
  condition(input: { where?: unknown; q?: string }): Condition | null {
    return parseCondition(input);
  }

  /** Maps a write that lost its target to a purge meanwhile to 404 rather than 500. */
  private async writing<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if ((err as { code?: string }).code === FK_VIOLATION) {
        throw new DomainError(
          ErrorCode.NotFound,
          'an object or collection was deleted while its metadata was being changed; nothing was changed',
        );
      }
      throw err;
    }
  }
}

function covers(v: Visibility, e: MetadataTarget, userId: bigint): boolean {
  if (v.all || e.ownerId === userId) return true;
  const dir = e.kind === 'object' ? e.path.slice(0, e.path.lastIndexOf('/')) || '/' : e.path;
  if (v.roots.some((r) => isWithin(dir, r))) return true;
  return e.kind === 'collection' && v.exact.includes(e.path);
}

function tripleKey(t: CheckedTriple): string {
  return `${t.attribute}\u0000${t.type}\u0000${t.value}\u0000${t.unit ?? ''}`;
}

/**
 * The rows of a table of triples (bulk `columns`) as one group per path, by the kind of entry: path i
 * gets each column's value i (none where it is null). A path's triples are made distinct only when
 * two columns name the same attribute (otherwise they cannot repeat).
 */
function tableRows(
  paths: string[],
  columns: CheckedTripleColumn[],
  byPath: Map<string, MetadataTarget>,
  out: Record<EntryKind, TripleGroup[]>,
): void {
  const repeats = new Set(columns.map((c) => c.attribute)).size < columns.length;
  paths.forEach((path, i) => {
    const target = byPath.get(path)!;
    const triples: CheckedTriple[] = [];
    for (const c of columns) {
      const v = c.values[i];
      if (v) triples.push(checkedTriple(c.attribute, v, c.unit));
    }
    if (triples.length)
      out[target.kind].push({ targets: [target.id], triples: repeats ? dedupe(triples) : triples });
  });
}

function dedupe(triples: CheckedTriple[]): CheckedTriple[] {
  return notSeen(triples, new Set());
}

/** The triples whose key is not in `seen` yet (each once), adding their keys to it. */
function notSeen(triples: CheckedTriple[], seen: Set<string>): CheckedTriple[] {
  return triples.filter((t) => {
    const k = tripleKey(t);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * The groups with each (target, triple) pair once. Within a group the triples and the targets are
 * distinct already, so only a target named by more than one operation can repeat a pair; when none
 * is, the groups are returned as they are.
 */
function distinctPairs(groups: TripleGroup[]): TripleGroup[] {
  const targets = new Set<bigint>();
  let repeated = false;
  for (const g of groups) {
    for (const t of g.targets) {
      if (targets.has(t)) repeated = true;
      targets.add(t);
    }
  }
  if (!repeated) return groups;
  const seen = new Map<bigint, Set<string>>();
  const out: TripleGroup[] = [];
  for (const g of groups) {
    for (const target of g.targets) {
      let have = seen.get(target);
      if (!have) seen.set(target, (have = new Set()));
      const triples = notSeen(g.triples, have);
      if (triples.length) out.push({ targets: [target], triples });
    }
  }
  return out;
}

function encodeCursor(sort: QuerySort, order: string, value: string, id: bigint): string {
  return Buffer.from(JSON.stringify([sort, order, value, id.toString()])).toString('base64url');
}

function decodeCursor(cursor: string, sort: QuerySort, order: string): { value: string; id: bigint } {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (
      Array.isArray(parsed) &&
      parsed.length === 4 &&
      parsed[0] === sort &&
      parsed[1] === order &&
      typeof parsed[2] === 'string' &&
      typeof parsed[3] === 'string' &&
      /^[0-9]{1,19}$/.test(parsed[3])
    ) {
      return { value: parsed[2], id: BigInt(parsed[3]) };
    }
  } catch {
    // fall through
  }
  throw new DomainError(
    ErrorCode.InvalidCursor,
    'the cursor is not one this query returned (it must come from the same sort and order)',
  );
}

function accessTarget(e: MetadataTarget): AccessTarget {
  return { path: e.path, kind: e.kind, objectId: e.kind === 'object' ? e.id : undefined };
}
