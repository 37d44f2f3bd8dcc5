import { Injectable } from '@nestjs/common';
import { escapeLike, isWithin, type Condition, type MetadataValueType } from '@tributary/shared';
import { SqlPool } from '../database/sql-pool';
import type { Visibility } from '../access/access.service';
import type { EntryKind } from './metadata.repository';
import { ConditionCompiler, SqlParams } from './query-compiler';

export type QuerySort = 'name' | 'size' | 'modified' | 'created';

export interface QuerySpec {
  kind: EntryKind;
  where: Condition | null;
  scope: string;
  sort: QuerySort;
  order: 'asc' | 'desc';
  limit: number;
  /** Sort value and id of the last entry of the previous page. */
  after: { value: string; id: bigint } | null;
  visibility: Visibility;
  /**
   * For object queries with a condition: its matches in the whole catalog, counted up to
   * `broadFrom + 1` (`resolveAreas`); Infinity without a condition.
   */
  matches?: number;
  /**
   * For object queries: the collections whose objects the query may return, resolved once per
   * request (`resolveAreas`). Without it the scope and the grants are matched on the collections'
   * paths per object.
   */
  areas?: Areas;
}

/**
 * The collections a query of objects reaches, as ids (strings of bigints). An id list lets the
 * planner estimate how many objects the scope holds (per-value statistics on `collection_id`) and
 * checks each object with one hash lookup, where a path condition was a join per object.
 */
export interface Areas {
  /** Live collections at or below the scope (and the token's collection); null: everywhere. */
  scope: string[] | null;
  /**
   * For a caller who does not see everything in scope: the live collections in scope below their
   * recursive grants (their other objects are those they own or hold a grant on). Null: the caller
   * sees every object in scope.
   */
  granted: string[] | null;
  /**
   * With `granted`: the objects granted to the caller or their groups one by one, when there are at
   * most 10,000 of them (null: more, checked per object in `permissions`).
   */
  direct?: string[] | null;
}

/** A total and whether it was estimated from a sample (docs/metadata.md, "Broad queries"). */
export interface Total {
  n: number;
  estimate: boolean;
}

/** What a sample of the catalog says about a query: its total and its facets, scaled. */
export interface SampledResult {
  total: Total;
  facets: Map<string, FacetCount[]>;
}

export interface QueryHit {
  id: bigint;
  name: string;
  path: string;
  size: bigint;
  updatedAt: Date;
  /** The sort value, for the next cursor. */
  sortValue: string;
}

export interface FacetCount {
  type: MetadataValueType;
  value: string;
  count: number;
}

const SORT_EXPR: Record<EntryKind, Record<QuerySort, { expr: string; cast: string }>> = {
  object: {
    name: { expr: 'e.name', cast: '::text' },
    size: { expr: 'e.size', cast: '::bigint' },
    modified: { expr: 'e.updated_at', cast: '::timestamptz' },
    created: { expr: 'e.created_at', cast: '::timestamptz' },
  },
  collection: {
    name: { expr: 'e.name', cast: '::text' },
    size: { expr: '0::bigint', cast: '::bigint' },
    modified: { expr: 'e.updated_at', cast: '::timestamptz' },
    created: { expr: 'e.created_at', cast: '::timestamptz' },
  },
};

/**
 * The metadata query in SQL (docs/metadata.md). Queries are built per request and sent as unnamed
 * statements, so PostgreSQL plans each with its parameter values (a prefix pattern becomes an index
 * range, a rare value is told from a common one) instead of reusing one generic plan.
 */
@Injectable()
export class MetadataQueryRepository {
  /**
   * Attributes this process knows to be counted (`metadata_counted_attributes`). An attribute is never
   * uncounted, so once seen it needs no further check.
   */
  private readonly counted = new Set<string>();

  constructor(private readonly sql: SqlPool) {}

  /**
   * FROM and WHERE of the entries that are live, in scope, visible to the caller and match the
   * condition. `e` is the entry (a data object or a collection).
   */
  private filter(
    spec: QuerySpec,
    params: SqlParams,
    from = `${tableOf(spec.kind)} e`,
    probes = false,
  ): string {
    const col = spec.kind === 'object' ? 'object_id' : 'collection_id';
    const where: string[] = ['e.trash_id = 0'];
    const v = spec.visibility;
    const areas = spec.kind === 'object' ? spec.areas : undefined;
    if (areas) {
      const inScope = areas.scope ? `e.collection_id = ANY(${params.add(areas.scope, '::bigint[]')})` : null;
      if (areas.granted === null) {
        if (inScope) where.push(inScope);
      } else {
        const user = params.add(v.userId.toString());
        const groups = (v.groupIds.length ? v.groupIds : [0n]).map(String);
        const granted = areas.direct
          ? `e.id = ANY(${params.add(areas.direct, '::bigint[]')})`
          : `EXISTS (SELECT 1 FROM permissions p WHERE p.object_id = e.id AND (p.user_id = ${user} OR p.group_id = ANY(${params.add(groups, '::bigint[]')})) AND p.level >= ${params.add(v.level)}::"PermissionLevel")`;
        const own = `(e.owner_id = ${user} OR ${granted})`;
        where.push(
          `(e.collection_id = ANY(${params.add(areas.granted, '::bigint[]')}) OR ${inScope ? `(${inScope} AND ${own})` : own})`,
        );
      }
      if (spec.where) where.push(new ConditionCompiler(params, col, probes).predicate(spec.where, 'e.id'));
      return `FROM ${from} WHERE ${where.join(' AND ')}`;
    }
    // Path conditions on the collection holding an object, or on the collection itself.
    const pathCond = (pathExpr: string, subtree: string): string =>
      subtree === '/'
        ? 'true'
        : `(${pathExpr} = ${params.add(subtree)} OR ${pathExpr} LIKE ${params.add(escapeLike(subtree) + '/%')})`;
    const inCollections = (cond: string): string =>
      `e.collection_id IN (SELECT c.id FROM collections c WHERE c.trash_id = 0 AND ${cond})`;
    const onPaths = (cond: (p: string) => string): string =>
      spec.kind === 'object' ? inCollections(cond('c.path')) : cond('e.path');

    for (const subtree of [spec.scope, v.confinedTo]) {
      if (subtree && subtree !== '/') where.push(onPaths((p) => pathCond(p, subtree)));
    }
    if (!v.all) {
      const user = params.add(v.userId.toString());
      const likes = v.roots.map((r) => escapeLike(r) + '/%');
      const either: string[] = [`e.owner_id = ${user}`];
      if (v.roots.length) {
        const roots = params.add(v.roots, '::text[]');
        const rootLikes = params.add(likes, '::text[]');
        either.push(onPaths((p) => `(${p} = ANY(${roots}) OR ${p} LIKE ANY(${rootLikes}))`));
      }
      if (spec.kind === 'collection' && v.exact.length)
        either.push(`e.path = ANY(${params.add(v.exact, '::text[]')})`);
      if (spec.kind === 'object') {
        const groups = (v.groupIds.length ? v.groupIds : [0n]).map(String);
        either.push(
          `EXISTS (SELECT 1 FROM permissions p WHERE p.object_id = e.id AND (p.user_id = ${user} OR p.group_id = ANY(${params.add(groups, '::bigint[]')})) AND p.level >= ${params.add(v.level)}::"PermissionLevel")`,
        );
      }
      where.push(`(${either.join(' OR ')})`);
    }
    if (spec.where) where.push(new ConditionCompiler(params, col).predicate(spec.where, 'e.id'));
    return `FROM ${from} WHERE ${where.join(' AND ')}`;
  }

  /**
   * The spec of an object query with its areas resolved: the live collections of the scope (the
   * deeper of the scope and the token's collection; the service has checked that one holds the
   * other) and, for a caller who does not see everything, those below their recursive grants. Two
   * walks down the collections' parent index, one statement.
   */
  async resolveAreas(spec: QuerySpec): Promise<QuerySpec> {
    if (spec.kind !== 'object') return spec;
    const [resolved, matches] = await Promise.all([
      this.areasOf(spec),
      // A `!=` or `exists` is taken as broad without counting: it matches most objects that have the
      // attribute, and counting them would read every triple of the attribute.
      spec.where && !hasOp(spec.where, ['!=', 'exists'])
        ? this.matchesUpTo(spec.where, this.broadFrom)
        : Promise.resolve(Infinity),
    ]);
    return { ...resolved, matches };
  }

  /**
   * How many matches of the condition in the whole catalog make a query broad (counted from its
   * index alone, up to this number plus one): a broad query's page walks the scope in name order
   * and its total starts from a sample; a narrower one's page and total start from the matches,
   * which is then cheap (and keeps issue 5's selective queries as they were).
   */
  broadFrom = 5_000;

  private async areasOf(spec: QuerySpec): Promise<QuerySpec> {
    const v = spec.visibility;
    const confined = v.confinedTo ?? '/';
    const top = isWithin(spec.scope, confined) ? spec.scope : confined;
    const wholeScope = v.all || v.roots.some((r) => isWithin(top, r));
    const grantedRoots = wholeScope ? [] : v.roots.filter((r) => isWithin(r, top));
    if (top === '/' && wholeScope) return { ...spec, areas: { scope: null, granted: null } };
    const groups = (v.groupIds.length ? v.groupIds : [0n]).map(String);
    const { rows } = await this.sql.pool.query<{
      scope: string[] | null;
      granted: string[] | null;
      direct: string[] | null;
      many: boolean;
    }>(
      `WITH RECURSIVE s(id) AS (
         SELECT id FROM collections WHERE trash_id = 0 AND path = $1 AND $1 <> '/'
         UNION ALL SELECT c.id FROM collections c JOIN s ON c.parent_id = s.id WHERE c.trash_id = 0),
       g(id) AS (
         SELECT id FROM collections WHERE trash_id = 0 AND path = ANY($2::text[])
         UNION ALL SELECT c.id FROM collections c JOIN g ON c.parent_id = g.id WHERE c.trash_id = 0)
       SELECT (SELECT array_agg(id) FROM s) AS scope, (SELECT array_agg(id) FROM g) AS granted,
              d.direct, coalesce(cardinality(d.direct), 0) > 10000 AS many
         FROM (SELECT array_agg(object_id) AS direct FROM (
                 SELECT DISTINCT p.object_id FROM permissions p
                  WHERE $3 AND p.object_id IS NOT NULL AND (p.user_id = $4 OR p.group_id = ANY($5::bigint[]))
                    AND p.level >= $6::"PermissionLevel" LIMIT 10001) x) d`,
      [top, grantedRoots, !wholeScope, v.userId.toString(), groups, v.level],
    );
    const r = rows[0]!;
    return {
      ...spec,
      areas: {
        scope: top === '/' ? null : (r.scope ?? []),
        granted: wholeScope ? null : (r.granted ?? []),
        direct: wholeScope || r.many ? null : (r.direct ?? []),
      },
    };
  }

  /**
   * Objects walked in name order before a page gives up on the walk (`walkedByName`); at least twice
   * the page's size.
   */
  walkLimit = 2_000;

  async page(spec: QuerySpec): Promise<QueryHit[]> {
    if (spec.limit === 0) return [];
    const walkLimit = Math.max(this.walkLimit, 2 * spec.limit);
    if (
      spec.kind === 'object' &&
      spec.sort === 'name' &&
      spec.where &&
      spec.areas &&
      (spec.matches ?? Infinity) > walkLimit
    ) {
      const walked = await this.pageFrom(spec, true);
      if (walked) return walked;
    }
    return (await this.pageFrom(spec, false))!;
  }

  /**
   * The page from the walk in name order (`walk`; null when the walk ended before the page was
   * full, so the matches are sparse and the other way is the better one) or from the terms or the
   * planner's choice.
   */
  private async pageFrom(spec: QuerySpec, walk: boolean): Promise<QueryHit[] | null> {
    const params = new SqlParams();
    const sort = SORT_EXPR[spec.kind][spec.sort];
    const dir = spec.order === 'asc' ? 'ASC' : 'DESC';
    const keyset = (key: string, id: string): string => {
      if (!spec.after) return '';
      const cmp = spec.order === 'asc' ? '>' : '<';
      return ` AND (${key}, ${id}) ${cmp} (${params.add(spec.after.value, sort.cast)}, ${params.add(spec.after.id.toString())}::bigint)`;
    };
    const pathExpr =
      spec.kind === 'object'
        ? `(SELECT CASE WHEN c.path = '/' THEN '/' ELSE c.path || '/' END FROM collections c WHERE c.id = e.collection_id) || e.name`
        : 'e.path';
    const sizeExpr = spec.kind === 'object' ? 'e.size' : '0::bigint';
    const walkLimit = Math.max(this.walkLimit, 2 * spec.limit);
    // The sort and the limit on the entry's id and sort key alone (for objects sorted by name an
    // index-only lookup per match, or the terms rows' names), then the page's other columns for its
    // rows only.
    const ctes = walk
      ? this.walkedByName(spec, params, dir, keyset, walkLimit)
      : (this.sortedByTerms(spec, params, dir, keyset) ?? this.sortedByEntry(spec, params, dir, keyset));
    const columns = `e.id, e.name, ${pathExpr} AS path, ${sizeExpr} AS size, e.updated_at, p.sort_value`;
    const { rows } = await this.sql.pool.query<{
      id: string | null;
      name: string;
      path: string;
      size: string;
      updated_at: Date;
      sort_value: string;
      walked?: string;
    }>(
      walk
        ? `${ctes}
       SELECT k.walked, ${columns}
         FROM (SELECT count(*) AS walked FROM w) k
         LEFT JOIN (p JOIN data_objects e ON e.id = p.id) ON true
        ORDER BY p.sort_key ${dir}, p.id ${dir}`
        : `${ctes}
       SELECT ${columns}
         FROM p JOIN ${tableOf(spec.kind)} e ON e.id = p.id
        ORDER BY p.sort_key ${dir}, p.id ${dir}`,
      params.values,
    );
    const hits = rows.filter((r) => r.id !== null);
    if (walk && hits.length < spec.limit && Number(rows[0]!.walked) >= walkLimit) return null;
    return hits.map((r) => ({
      id: BigInt(r.id!),
      name: r.name,
      path: r.path,
      size: BigInt(r.size),
      updatedAt: r.updated_at,
      sortValue: r.sort_value,
    }));
  }

  /**
   * `WITH w, p(id, sort_key, sort_value)`: the first `walkLimit` objects the caller may read in scope,
   * in name order (an index-only walk of (trash_id, name, id, collection_id, owner_id), or for a small
   * scope its objects sorted), each then probed for the condition in that order until the page is
   * full. When a good share of the scope matches, a page costs about a page's worth of probes however
   * many objects match, where collecting every match to sort them grows with the matches (issue 34).
   * Which of the two to take is not left to the planner: its estimate of how many objects match a
   * number range mixes every attribute's numbers, and a scope's matches are often not a random share
   * of the catalog's.
   */
  private walkedByName(
    spec: QuerySpec,
    params: SqlParams,
    dir: string,
    keyset: Keyset,
    walkLimit: number,
  ): string {
    const scoped: QuerySpec = { ...spec, where: null };
    const probes = new ConditionCompiler(params, 'object_id', true).predicate(spec.where!, 'w.id');
    return `WITH w AS MATERIALIZED (
       SELECT e.id, e.name ${this.filter(scoped, params)}${keyset('e.name', 'e.id')}
        ORDER BY e.name ${dir}, e.id ${dir} LIMIT ${params.add(walkLimit)}),
     p AS (
       SELECT w.id, w.name AS sort_key, w.name AS sort_value FROM w WHERE ${probes}
        ORDER BY w.name ${dir}, w.id ${dir} LIMIT ${params.add(spec.limit)})`;
  }

  /** `WITH p(id, sort_key, sort_value)`: the page's entries, sorted and limited in the entries' table. */
  private sortedByEntry(spec: QuerySpec, params: SqlParams, dir: string, keyset: Keyset): string {
    const sort = SORT_EXPR[spec.kind][spec.sort];
    const sortText =
      sort.cast === '::timestamptz'
        ? `to_char(${sort.expr} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
        : `${sort.expr}::text`;
    return `WITH p AS (
       SELECT e.id, ${sort.expr} AS sort_key, ${sortText} AS sort_value
         ${this.filter(spec, params)}${keyset(sort.expr, 'e.id')}
        ORDER BY ${sort.expr} ${dir}, e.id ${dir} LIMIT ${params.add(spec.limit)})`;
  }

  /**
   * `WITH p(id, sort_key, sort_value)` from the objects' terms rows, which carry each object's name:
   * for objects sorted by name whose condition the terms drive (a text equality, or two or more in a
   * conjunction), for a caller who sees every object in scope `/`. The GIN search's rows are sorted by
   * their name, and objects are looked up in that order until the page is full, so only about a
   * page's worth are read rather than every match (docs/metadata.md, "How a query runs"). In a scope,
   * or for a caller who sees part of the catalog, the objects' own filter may be the better place to
   * start, which the planner weighs in `sortedByEntry`. Null when this does not apply.
   */
  private sortedByTerms(spec: QuerySpec, params: SqlParams, dir: string, keyset: Keyset): string | null {
    if (spec.kind !== 'object' || spec.sort !== 'name' || !spec.where || !isUnrestricted(spec)) return null;
    const compiler = new ConditionCompiler(params, 'object_id');
    const driven = compiler.termsDriven(spec.where, 'x');
    if (!driven) return null;
    const checks = ['e.trash_id = 0', ...driven.rest.map((c) => compiler.predicate(c, 'e.id', true))];
    // Materialized, so the sort happens once over the GIN search's rows and the limit stops the
    // lookups; its order carries to the outer ORDER BY (PostgreSQL 17 and later), with no sort again.
    return `WITH s AS MATERIALIZED (
       SELECT x.object_id AS id, x.name FROM metadata_terms x
        WHERE ${driven.onTerms}${keyset('x.name', 'x.object_id')}
        ORDER BY x.name ${dir}, x.object_id ${dir}),
     p AS (
       SELECT s.id, s.name AS sort_key, s.name AS sort_value FROM s
        WHERE EXISTS (SELECT 1 FROM data_objects e WHERE e.id = s.id AND ${checks.join(' AND ')})
        ORDER BY s.name ${dir}, s.id ${dir} LIMIT ${params.add(spec.limit)})`;
  }

  /**
   * Attribute names starting with `prefix` that at least one live entry visible to the caller
   * carries, in byte order. Candidates come from a skip scan over the three value-type indexes (one
   * index probe per distinct name, so 10 M triples with a few hundred names cost a few hundred
   * probes), at most 1,000 of them; each is then checked for a visible entry with EXISTS.
   */
  async attributes(prefix: string, limit: number, visibility: Visibility): Promise<string[]> {
    const params = new SqlParams();
    const from = params.add(prefix);
    const like = params.add(`${escapeLike(prefix)}%`);
    const skip = (name: string, pred: string): string =>
      `${name}(attr, n) AS (
         (SELECT attribute, 1 FROM metadata_triples WHERE ${pred} AND attribute >= ${from} ORDER BY attribute LIMIT 1)
         UNION ALL
         SELECT (SELECT attribute FROM metadata_triples WHERE ${pred} AND attribute > s.attr ORDER BY attribute LIMIT 1), s.n + 1
           FROM ${name} s WHERE s.attr IS NOT NULL AND s.attr LIKE ${like} AND s.n < 1000)`;
    const spec = (kind: EntryKind): QuerySpec => ({
      kind,
      where: null,
      scope: '/',
      sort: 'name',
      order: 'asc',
      limit: 0,
      after: null,
      visibility,
    });
    const objects = this.filter(spec('object'), params);
    const collections = this.filter(spec('collection'), params);
    const { rows } = await this.sql.pool.query<{ attr: string }>(
      `WITH RECURSIVE ${skip('t', `value_type = 'text'`)}, ${skip('nu', 'num IS NOT NULL')}, ${skip('ti', 'time IS NOT NULL')},
       cand AS (SELECT attr FROM t UNION SELECT attr FROM nu UNION SELECT attr FROM ti)
       SELECT c.attr FROM cand c
        WHERE c.attr IS NOT NULL AND c.attr LIKE ${like}
          AND (EXISTS (SELECT 1 FROM metadata_triples m WHERE m.attribute = c.attr
                        AND m.object_id IN (SELECT e.id ${objects}))
            OR EXISTS (SELECT 1 FROM metadata_triples m WHERE m.attribute = c.attr
                        AND m.collection_id IN (SELECT e.id ${collections})))
        ORDER BY c.attr COLLATE "C" LIMIT ${params.add(limit)}`,
      params.values,
    );
    return rows.map((r) => r.attr);
  }

  /**
   * Kept counts exist for the attributes whole-catalog facets have asked about: the first such facet
   * at this site counts the attribute's triples once (`metadata_count_attribute`, migration
   * 20261126100000_counted_attributes; a GROUP BY over the attribute's triples, like the benchmark's
   * facet baseline: 0.26 s for a million), later ones only read.
   */
  private async catalogFacet(attribute: string, limit: number): Promise<FacetCount[]> {
    if (!this.counted.has(attribute)) {
      await this.sql.query('SELECT metadata_count_attribute($1)', [attribute]);
      this.counted.add(attribute);
    }
    const { rows } = await this.sql.pool.query<{ type: MetadataValueType; value: string; n: string }>(
      `SELECT value_type AS type, value, sum(n) AS n FROM (
         SELECT value_type, value, n FROM metadata_value_counts WHERE attribute = $1
         UNION ALL SELECT value_type, value, n FROM metadata_value_deltas WHERE attribute = $1
         UNION ALL SELECT f.value_type, f.value, -count(*) FROM data_objects d
           JOIN metadata_triples f ON f.object_id = d.id AND f.attribute = $1
          WHERE d.trash_id > 0 GROUP BY 1, 2) v
        GROUP BY 1, 2 HAVING sum(n) > 0
        ORDER BY n DESC, type, value LIMIT $2`,
      [attribute, limit],
    );
    return rows.map((r) => ({ type: r.type, value: r.value, count: Number(r.n) }));
  }

  /** Folds the counts' deltas (`metadata_fold_counts`); returns how many were folded. */
  async foldCounts(): Promise<number> {
    const { rows } = await this.sql.query<{ n: string }>('SELECT metadata_fold_counts() AS n');
    return Number(rows[0]!.n);
  }

  /**
   * Merges the terms index's pending list into the index; returns how many pages it held. Writes add
   * their terms to that list (GIN's fast update), which every conjunction reads in full until it is
   * merged: 10,000 tagged objects made the benchmark's conjunction 2 to 3 ms slower at ten million
   * triples. Autovacuum merges it too, but only after many more writes.
   */
  async mergePendingTerms(): Promise<number> {
    const { rows } = await this.sql.query<{ n: string }>(
      `SELECT gin_clean_pending_list('metadata_terms_terms_idx'::regclass) AS n`,
    );
    return Number(rows[0]!.n);
  }

  /**
   * How many entries match. When the caller sees every object and the query has a condition, the
   * matching ids come from the triples' (or terms') indexes alone and trashed objects (few, found by
   * their index) are left out by an anti-join, instead of probing every match's row in
   * `data_objects` as the page does for its sort (at ten million triples, 1,000 matches: 0.4 ms
   * instead of 3 ms).
   */
  async count(spec: QuerySpec): Promise<number> {
    const params = new SqlParams();
    const sql =
      isUnrestricted(spec) && spec.where && spec.kind === 'object'
        ? `SELECT count(DISTINCT m.id) AS n FROM (${new ConditionCompiler(params, 'object_id').idSet(spec.where)}) m(id)
            WHERE ${notTrashed('data_objects', 'm.id')}`
        : `SELECT count(*) AS n ${this.filter(spec, params)}`;
    const { rows } = await this.sql.pool.query<{ n: string }>(sql, params.values);
    return Number(rows[0]!.n);
  }

  /**
   * A condition with at most this many matches in the whole catalog, or a scope reaching at most this
   * many objects, is counted exactly without a sample: at most this many probes (docs/metadata.md,
   * "Broad queries"). Properties so tests can lower them.
   */
  exactLimit = 5_000;
  /**
   * A sample's total at most this is counted exactly after all (a small figure is better exact, and a
   * few matches are cheap to count unless the scope is large); above it, the sample's figures are the
   * answer. Between this and `exactLimit` an exact count would cost more probes than the figure is
   * worth (the matches or the scope's objects are many more than the result).
   */
  estimateFrom = 1_000;
  /** About how many objects a sample reads (a fraction of `data_objects`' pages). */
  sampleRows = 5_000;
  /** Scopes with at most this many readable objects (estimated) are counted by probing each. */
  probeScopeLimit = 20_000;
  private tableRows: { rows: number; collections: number; at: number } | null = null;

  /**
   * The total and the facets of an object query estimated from a random sample of the catalog:
   * `TABLESAMPLE SYSTEM` reads a fraction of `data_objects`' pages (about `sampleRows` objects),
   * the query's filter picks those the caller may read in scope, each is probed for the condition,
   * and the counts are scaled by the fraction, as a search engine's sampled aggregations are. Also
   * how many objects the caller may read in scope (`readable`), which decides how an exact count
   * runs. The pages are chosen by a seed taken from the query, so asking again (the next page) gives
   * the same figures while the catalog is unchanged. Only readable, live objects are in the sample, so
   * nothing else is counted. A fraction of 1 (a small catalog) reads every page: exact figures.
   */
  async sample(
    spec: QuerySpec,
    attributes: string[],
    limit: number,
  ): Promise<SampledResult & { readable: number }> {
    // The sample's pages hold whole runs of one collection's objects, so a scope's share of them, not
    // of the catalog, sets the error: the fraction grows as the scope's share shrinks, so that about
    // `sampleRows` of the sampled objects are in reach (at most `maxSampleFraction` of the pages).
    const { rows: total } = await this.objectRows();
    const { share } = await this.reach(spec);
    const wanted = this.sampleRows / Math.max(1, total * share);
    const fraction = wanted >= 1 ? 1 : Math.min(this.maxSampleFraction, wanted);
    const params = new SqlParams();
    const percent = params.add(fraction * 100, '::float4');
    const seed = params.add(seedOf(JSON.stringify([spec.where, spec.scope, spec.areas ?? null])), '::float8');
    const from = `data_objects e TABLESAMPLE SYSTEM (${percent}) REPEATABLE (${seed})`;
    const readable = this.filter({ ...spec, where: null }, params, from);
    const condition = spec.where
      ? new ConditionCompiler(params, 'object_id', true).predicate(spec.where, 'r.id')
      : 'true';
    // The facets' triples are looked up per sampled match (a probe of the (object_id, attribute)
    // index), not joined: the sample is small and the attributes' triples are many.
    const facetPart = attributes.length
      ? `UNION ALL
       SELECT f.attribute, f.value_type, min(f.value), count(*) FROM s
        CROSS JOIN LATERAL (SELECT f.attribute, f.value_type, f.value, f.num, f.time FROM metadata_triples f
                             WHERE f.object_id = s.id AND f.attribute = ANY(${params.add(attributes, '::text[]')}) OFFSET 0) f
        GROUP BY f.attribute, f.value_type, CASE WHEN f.value_type = 'text' THEN f.value END, f.num, f.time`
      : '';
    const { rows } = await this.sql.pool.query<{
      attribute: string | null;
      type: MetadataValueType | null;
      value: string | null;
      n: string;
    }>(
      `WITH r AS MATERIALIZED (SELECT e.id ${readable}),
       s AS MATERIALIZED (SELECT r.id FROM r WHERE ${condition})
       SELECT NULL AS attribute, 'readable' AS type, NULL AS value, count(*) AS n FROM r
       UNION ALL SELECT NULL, 'matches', NULL, count(*) FROM s
       ${facetPart}`,
      params.values,
    );
    const scale = (n: number): number => (fraction >= 1 ? n : Math.round(n / fraction));
    const count = (type: string): number =>
      Number(rows.find((r) => r.attribute === null && r.type === type)!.n);
    const facets = new Map<string, FacetCount[]>(attributes.map((a) => [a, []]));
    for (const r of rows) {
      if (r.attribute === null) continue;
      facets.get(r.attribute)?.push({ type: r.type!, value: r.value!, count: scale(Number(r.n)) });
    }
    for (const [a, list] of facets) {
      list.sort(
        (x, y) =>
          y.count - x.count ||
          x.type.localeCompare(y.type) ||
          (x.value < y.value ? -1 : x.value > y.value ? 1 : 0),
      );
      facets.set(a, list.slice(0, limit));
    }
    return {
      total: { n: scale(count('matches')), estimate: fraction < 1 },
      facets,
      readable: scale(count('readable')),
    };
  }

  /**
   * The exact total of an object query whose scope holds few readable objects (`probeScopeLimit`):
   * each is probed for the condition, rather than each match of the condition in the catalog being
   * probed for the scope (a common value in a small scope). The planner cannot weigh the two: its
   * estimates of a range's matches mix every attribute's numbers.
   */
  private async countInScope(spec: QuerySpec): Promise<number> {
    const params = new SqlParams();
    const readable = this.filter({ ...spec, where: null }, params);
    const condition = spec.where
      ? new ConditionCompiler(params, 'object_id', true).predicate(spec.where, 'r.id')
      : 'true';
    const { rows } = await this.sql.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM (SELECT e.id ${readable} OFFSET 0) r WHERE ${condition}`,
      params.values,
    );
    return Number(rows[0]!.n);
  }

  /**
   * How many triples of the whole catalog match the condition, counted from its indexes alone up to
   * `cap + 1` (an object with two matching values counts twice): whether the exact count should
   * start from the matches or from the scope.
   */
  private async matchesUpTo(where: Condition, cap: number): Promise<number> {
    const params = new SqlParams();
    // Probes: a `!=` checks each triple of the attribute for the value it must not have, where an
    // anti-join would first hash every triple that has it (half a million for a common value).
    const ids = new ConditionCompiler(params, 'object_id', true).idSet(where);
    const { rows } = await this.sql.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM (${ids} LIMIT ${params.add(Math.ceil(cap) + 1)}) m`,
      params.values,
    );
    return Number(rows[0]!.n);
  }

  /**
   * The total (when `count`) and the facets of a query. A sample (`sample`) comes first: when it
   * estimates more than `exactLimit` matches, its figures are the answer, marked as estimates; when
   * fewer, the exact total (probing each readable object of a small scope, else as the page's filter
   * does) and exact facets. `exact` asks for the exact figures whatever they cost; facets the kept
   * counts answer (every object, no condition, a caller who sees everything) are always exact.
   * Collections are counted exactly (there are far fewer of them than objects).
   */
  async summary(
    spec: QuerySpec,
    want: { count: boolean; facets: string[]; facetLimit: number; exact: boolean },
  ): Promise<{ total?: Total; facets: FacetCount[][]; facetsAreEstimates: boolean }> {
    const exactFacets = (): Promise<FacetCount[][]> =>
      Promise.all(want.facets.map((a) => this.facet(spec, a, want.facetLimit)));
    const kept = isUnrestricted(spec) && !spec.where && spec.kind === 'object';
    const exactly = async (readable: number | null): Promise<{ total?: Total; facets: FacetCount[][] }> => {
      const [n, facets] = await Promise.all([
        !want.count
          ? Promise.resolve(undefined)
          : // (A caller with no grant in scope reaches only what they own or were granted one by one,
            // which the collections' share does not tell: counted from the matches.)
            readable !== null && readable > 0 && spec.areas && spec.where && readable <= this.probeScopeLimit
            ? this.matchesUpTo(spec.where, readable).then((m) =>
                m > readable ? this.countInScope(spec) : this.count(spec),
              )
            : this.count(spec),
        exactFacets(),
      ]);
      return { ...(n === undefined ? {} : { total: { n, estimate: false } }), facets };
    };
    if (want.exact || spec.kind !== 'object' || (!want.count && (kept || !want.facets.length))) {
      return { ...(await exactly(null)), facetsAreEstimates: false };
    }
    // Few matches in the whole catalog, or few objects in reach: counting exactly is cheap.
    const reach = await this.reach(spec);
    if (spec.where && spec.areas && reach.share < 1 && reach.objects <= this.exactLimit)
      return { ...(await exactly(reach.objects)), facetsAreEstimates: false };
    if ((spec.matches ?? Infinity) <= this.exactLimit)
      return { ...(await exactly(null)), facetsAreEstimates: false };
    const sampled = await this.sample(spec, kept ? [] : want.facets, want.facetLimit);
    if (!sampled.total.estimate) {
      // The sample read every page: its figures are exact.
      const facets = kept ? await exactFacets() : want.facets.map((a) => sampled.facets.get(a) ?? []);
      return { ...(want.count ? { total: sampled.total } : {}), facets, facetsAreEstimates: false };
    }
    if (sampled.total.n <= this.estimateFrom)
      return { ...(await exactly(sampled.readable)), facetsAreEstimates: false };
    return {
      ...(want.count ? { total: sampled.total } : {}),
      facets: kept ? await exactFacets() : want.facets.map((a) => sampled.facets.get(a) ?? []),
      facetsAreEstimates: !kept,
    };
  }

  /** The planner's count of `data_objects`' rows (kept by autovacuum and ANALYZE), re-read each minute. */
  private async objectRows(): Promise<{ rows: number; collections: number }> {
    if (this.tableRows && Date.now() - this.tableRows.at < 60_000) return this.tableRows;
    const { rows } = await this.sql.pool.query<{ n: string; c: string }>(
      // Never analyzed (reltuples -1): about 50 rows per page.
      `SELECT max(CASE WHEN relname = 'data_objects' THEN n END) AS n, max(CASE WHEN relname = 'collections' THEN n END) AS c
         FROM (SELECT relname, (CASE WHEN reltuples >= 0 THEN reltuples
                    ELSE pg_relation_size(oid) / current_setting('block_size')::int * 50 END)::bigint AS n
                 FROM pg_class WHERE oid IN ('data_objects'::regclass, 'collections'::regclass)) x`,
    );
    this.tableRows = { rows: Number(rows[0]!.n), collections: Number(rows[0]!.c), at: Date.now() };
    return this.tableRows;
  }

  /**
   * About how many objects a query's scope and grants reach: the catalog's objects times the share of
   * its collections they cover (null areas: all of them).
   */
  private async reach(spec: QuerySpec): Promise<{ objects: number; share: number }> {
    const { rows, collections } = await this.objectRows();
    const ids = spec.areas ? (spec.areas.granted ?? spec.areas.scope) : null;
    const share = ids ? Math.min(1, ids.length / Math.max(1, collections)) : 1;
    return { objects: Math.ceil(rows * share), share };
  }

  /** The largest fraction of `data_objects`' pages a sample reads. */
  maxSampleFraction = 0.2;

  /** Which value types an attribute has anywhere in the catalog. */
  private async typesOf(attribute: string): Promise<MetadataValueType[]> {
    const { rows } = await this.sql.query<{ text: boolean; number: boolean; time: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM metadata_triples WHERE value_type = 'text' AND attribute = $1) AS text,
              EXISTS (SELECT 1 FROM metadata_triples WHERE num IS NOT NULL AND attribute = $1) AS number,
              EXISTS (SELECT 1 FROM metadata_triples WHERE time IS NOT NULL AND attribute = $1) AS time`,
      [attribute],
    );
    const r = rows[0]!;
    return (['text', 'number', 'time'] as const).filter((t) => r[t]);
  }

  /**
   * The values of an attribute and how many entries of the result have each, most frequent first.
   * Every live object with no condition (an administrator's overview): from the kept counts
   * (`metadata_value_counts` plus the deltas not folded yet), less the triples of trashed objects
   * (few, found by their index). Otherwise, when the caller sees everything in scope `/`, the count
   * runs over the attribute's index alone, leaving out trashed entries by an anti-join instead of
   * joining every triple to its entry; in every other case over the entries of the result.
   */
  async facet(spec: QuerySpec, attribute: string, limit: number): Promise<FacetCount[]> {
    const unrestricted = isUnrestricted(spec);
    if (unrestricted && !spec.where && spec.kind === 'object') return this.catalogFacet(attribute, limit);
    const params = new SqlParams();
    const col = spec.kind === 'object' ? 'object_id' : 'collection_id';
    const attr = params.add(attribute);
    let entryFilter: string;
    if (unrestricted) {
      const table = tableOf(spec.kind);
      const cond = spec.where
        ? ` AND ${new ConditionCompiler(params, col).predicate(spec.where, `f.${col}`)}`
        : '';
      entryFilter = `f.${col} IS NOT NULL AND ${notTrashed(table, `f.${col}`)}${cond}`;
    } else {
      entryFilter = `f.${col} IN (SELECT e.id ${this.filter(spec, params)})`;
    }
    // Only the value types the attribute has (three index probes): a branch per type that has no
    // triples would still cost planning and a parallel append.
    const types = await this.typesOf(attribute);
    if (types.length === 0) return [];
    const branch: Record<MetadataValueType, string> = {
      text: `SELECT 'text' AS type, f.value, count(*) AS n FROM metadata_triples f
              WHERE f.value_type = 'text' AND f.attribute = ${attr} AND ${entryFilter} GROUP BY f.value`,
      number: `SELECT 'number' AS type, min(f.value) AS value, count(*) AS n FROM metadata_triples f
                WHERE f.num IS NOT NULL AND f.attribute = ${attr} AND ${entryFilter} GROUP BY f.num`,
      time: `SELECT 'time' AS type, min(f.value) AS value, count(*) AS n FROM metadata_triples f
              WHERE f.time IS NOT NULL AND f.attribute = ${attr} AND ${entryFilter} GROUP BY f.time`,
    };
    const { rows } = await this.sql.pool.query<{ type: MetadataValueType; value: string; n: string }>(
      `SELECT * FROM (${types.map((t) => branch[t]).join(' UNION ALL ')}) v
        ORDER BY n DESC, type, value LIMIT ${params.add(limit)}`,
      params.values,
    );
    return rows.map((r) => ({ type: r.type, value: r.value, count: Number(r.n) }));
  }
}

/** A keyset condition on (sort key, id) after the previous page's last entry, or nothing. */
type Keyset = (key: string, id: string) => string;

const tableOf = (kind: EntryKind): 'data_objects' | 'collections' =>
  kind === 'object' ? 'data_objects' : 'collections';

/**
 * The entry `id` of `table` is not in the trash, as an anti-join against the few trashed entries
 * (found by their trash_id index) rather than a probe of each entry's row.
 */
function notTrashed(table: 'data_objects' | 'collections', id: string): string {
  return `NOT EXISTS (SELECT 1 FROM ${table} d WHERE d.id = ${id} AND d.trash_id > 0)`;
}

/** Whether a condition has a leaf with one of these operators. */
function hasOp(node: Condition, ops: string[]): boolean {
  return node.kind === 'leaf' ? ops.includes(node.op) : node.children.some((c) => hasOp(c, ops));
}

/** A seed in [0, 2^31) from a text (FNV-1a), so the same query samples the same pages. */
function seedOf(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h & 0x7fffffff;
}

/** The caller sees every entry and the query is not scoped: only liveness limits the result. */
function isUnrestricted(spec: QuerySpec): boolean {
  return spec.visibility.all && spec.scope === '/' && !spec.visibility.confinedTo;
}
