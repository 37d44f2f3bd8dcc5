import type { Condition, TypedValue } from '@tributary/shared';

/**
 * Turns a checked condition into SQL over `metadata_triples` (docs/metadata.md, "How a query runs").
 *
 * A leaf is a condition on the triples of one attribute; an entry matches when one of its triples
 * satisfies it (`!=`: the entry has the attribute and none of its values is equal). A conjunction
 * becomes one correlated EXISTS per leaf, which PostgreSQL turns into semi-joins and orders by
 * estimated selectivity: it starts from the most selective leaf's index range and probes the others
 * per entry. A disjunction becomes `id IN (... UNION ALL ...)`, also a semi-join. Each leaf's text
 * touches one of the typed partial indexes (text, number, time), so every leaf is an index range.
 */
export class SqlParams {
  readonly values: unknown[] = [];
  add(value: unknown, cast = ''): string {
    this.values.push(value);
    return `$${this.values.length}${cast}`;
  }
}

export type TargetColumn = 'object_id' | 'collection_id';

const COLUMN = { text: 'value', number: 'num', time: 'time' } as const;
const PRESENT = {
  text: `value_type = 'text'`,
  number: 'num IS NOT NULL',
  time: 'time IS NOT NULL',
} as const;
const CAST = { text: '', number: '::float8', time: '::timestamptz' } as const;
/** The comparisons a terms row's measures answer (not `!=`, `exists`, `like`). */
const MEASURE_OPS = new Set(['=', '<', '<=', '>', '>=', 'between', 'in']);
const ARRAY_CAST = { text: '::text[]', number: '::float8[]', time: '::timestamptz[]' } as const;

function literal(v: TypedValue): string | number {
  return v.type === 'number' ? v.num! : v.type === 'time' ? v.time! : v.text;
}

export class ConditionCompiler {
  private alias = 0;

  constructor(
    private readonly params: SqlParams,
    private readonly column: TargetColumn,
    /**
     * Every condition a probe per entry (`EXISTS ... OFFSET 0`, `or` as OR of probes): for a
     * sample of entries, where a semi-join would read every match of the condition to keep a few.
     */
    private readonly probes = false,
  ) {}

  private next(prefix: string): string {
    this.alias += 1;
    return `${prefix}${this.alias}`;
  }

  /** Triples of the attribute, any type (for `exists` and `!=`). */
  private anyType(t: string, attribute: string): string {
    const a = this.params.add(attribute);
    return `((${t}.${PRESENT.text} OR ${t}.${PRESENT.number} OR ${t}.${PRESENT.time}) AND ${t}.attribute = ${a})`;
  }

  /** The condition a single triple row `t` must meet for a leaf (for `!=`: the equality it must not meet). */
  private tripleCondition(t: string, leaf: Extract<Condition, { kind: 'leaf' }>, probe = false): string {
    const a = (): string => this.params.add(leaf.attribute);
    // In a probe of one entry, a range or a pattern is checked on the entry's triples of the
    // attribute (the (object_id, attribute) index: one descent), not searched in the value's index:
    // there the entry's id only filters the range, so each probe would read every value in it. The
    // no-op expressions keep the value indexes out of the plan.
    const col = (ty: TypedValue['type']): string =>
      !probe
        ? `${t}.${COLUMN[ty]}`
        : ty === 'text'
          ? `(${t}.value || '')`
          : ty === 'number'
            ? `(${t}.num + 0)`
            : `(${t}.time + interval '0')`;
    switch (leaf.op) {
      case 'exists':
        return this.anyType(t, leaf.attribute);
      case 'like':
        return `(${t}.${PRESENT.text} AND ${t}.attribute = ${a()} AND ${col('text')} LIKE ${this.params.add(leaf.pattern)})`;
      case 'between': {
        const [lo, hi] = leaf.values as [TypedValue, TypedValue];
        const ty = lo.type;
        return `(${t}.${PRESENT[ty]} AND ${t}.attribute = ${a()} AND ${col(ty)} BETWEEN ${this.params.add(literal(lo), CAST[ty])} AND ${this.params.add(literal(hi), CAST[ty])})`;
      }
      case 'in': {
        const byType = new Map<TypedValue['type'], (string | number)[]>();
        for (const v of leaf.values) byType.set(v.type, [...(byType.get(v.type) ?? []), literal(v)]);
        const parts = [...byType].map(
          ([ty, vals]) =>
            `(${t}.${PRESENT[ty]} AND ${t}.attribute = ${a()} AND ${t}.${COLUMN[ty]} = ANY(${this.params.add(vals, ARRAY_CAST[ty])}))`,
        );
        return parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`;
      }
      default: {
        const v = leaf.values[0]!;
        const op = leaf.op === '!=' ? '=' : leaf.op;
        const c = op === '=' ? `${t}.${COLUMN[v.type]}` : col(v.type);
        return `(${t}.${PRESENT[v.type]} AND ${t}.attribute = ${a()} AND ${c} ${op} ${this.params.add(literal(v), CAST[v.type])})`;
      }
    }
  }

  /** A text equality, which `metadata_terms` can answer for objects. */
  private isTerm(c: Condition): c is Extract<Condition, { kind: 'leaf' }> {
    return this.column === 'object_id' && c.kind === 'leaf' && c.op === '=' && c.values[0]?.type === 'text';
  }

  /**
   * A comparison of numbers or times, which the terms row's measures can answer (an object's numbers
   * and times, `n:attribute` / `t:attribute`, the times in milliseconds).
   */
  private isMeasure(c: Condition): c is Extract<Condition, { kind: 'leaf' }> {
    if (c.kind !== 'leaf' || !MEASURE_OPS.has(c.op)) return false;
    const ty = c.values[0]?.type;
    return (ty === 'number' || ty === 'time') && c.values.every((v) => v.type === ty);
  }

  /**
   * A conjunction on objects with two or more text equalities answers them together from the
   * objects' terms (`metadata_terms`, `attribute=value` for each text triple): a GIN index intersects
   * them before any row is read, where an EXISTS per equality probes the triples once per candidate.
   * Comparisons of numbers and times are checked on the same row (its measures); the other
   * conditions are then checked per candidate. Left to the planner, a range would often be joined
   * instead: its row estimate mixes every attribute's numbers (`size between 1e9 and 5e9` estimated
   * at 7,500 triples, 372,000 in fact, which took 450 ms instead of 7 ms at 10 M triples).
   */
  private conjunction(children: Condition[], id: string): string {
    const terms = children.filter((c) => this.isTerm(c));
    if (terms.length < 2) return `(${children.map((c) => this.predicate(c, id)).join(' AND ')})`;
    const x = this.next('x');
    const parts = [
      `${id} IN (SELECT ${x}.object_id FROM metadata_terms ${x} WHERE ${this.onTerms(children, x)})`,
      ...children
        .filter((c) => !this.isTerm(c) && !this.isMeasure(c))
        .map((c) => this.predicate(c, id, true)),
    ];
    return `(${parts.join(' AND ')})`;
  }

  /**
   * When the objects' terms drive a condition (a single text equality, or a conjunction with two or
   * more, as in `conjunction`): what the terms row `x` answers of it, and the conditions left to
   * check per object. Otherwise null.
   */
  termsDriven(node: Condition, x: string): { onTerms: string; rest: Condition[] } | null {
    if (this.isTerm(node)) return { onTerms: this.onTerms([node], x), rest: [] };
    if (node.kind !== 'and' || node.children.filter((c) => this.isTerm(c)).length < 2) return null;
    return {
      onTerms: this.onTerms(node.children, x),
      rest: node.children.filter((c) => !this.isTerm(c) && !this.isMeasure(c)),
    };
  }

  /** What the terms row `x` answers of a conjunction: its text equalities and its measures. */
  private onTerms(children: Condition[], x: string): string {
    const list = children
      .filter((c) => this.isTerm(c))
      .map((t) => `metadata_term(${this.params.add(t.attribute)}, ${this.params.add(t.values[0]!.text)})`);
    const measures = children.filter((c) => this.isMeasure(c)).map((c) => this.measure(c, x));
    return [`${x}.terms @> ARRAY[${list.join(', ')}]`, ...measures].join(' AND ');
  }

  /** One of the measures of the terms row `x` satisfies the comparison `leaf`. */
  private measure(leaf: Extract<Condition, { kind: 'leaf' }>, x: string): string {
    const ty = leaf.values[0]!.type as 'number' | 'time';
    const v = (tv: TypedValue): string =>
      ty === 'number'
        ? this.params.add(tv.num!, '::float8')
        : `metadata_time_measure(${this.params.add(tv.time!, '::timestamptz')})`;
    const key = `metadata_measure_key('${ty}', ${this.params.add(leaf.attribute)})`;
    const m = this.next('m');
    let test: string;
    if (leaf.op === 'between') test = `${m}.v BETWEEN ${v(leaf.values[0]!)} AND ${v(leaf.values[1]!)}`;
    else if (leaf.op === 'in') {
      // One array parameter, as for the triples (an `in` may list 1,000 values).
      test =
        ty === 'number'
          ? `${m}.v = ANY(${this.params.add(
              leaf.values.map((x) => x.num!),
              '::float8[]',
            )})`
          : `${m}.v = ANY(ARRAY(SELECT metadata_time_measure(t) FROM unnest(${this.params.add(
              leaf.values.map((x) => x.time!),
              '::timestamptz[]',
            )}) AS t))`;
    } else test = `${m}.v ${leaf.op} ${v(leaf.values[0]!)}`;
    return `EXISTS (SELECT 1 FROM unnest(${x}.measure_keys, ${x}.measures) AS ${m}(k, v) WHERE ${m}.k = ${key} AND ${test})`;
  }

  /** A predicate on the entry whose id is `id`. */
  predicate(node: Condition, id: string, probe = false): string {
    if (this.probes && node.kind !== 'leaf') {
      return `(${node.children.map((c) => this.predicate(c, id, true)).join(node.kind === 'and' ? ' AND ' : ' OR ')})`;
    }
    if (node.kind !== 'leaf') {
      return node.kind === 'and' ? this.conjunction(node.children, id) : `${id} IN (${this.idSet(node)})`;
    }
    // `OFFSET 0` keeps PostgreSQL from turning the EXISTS into a join: it stays a probe per entry.
    const tail = probe || this.probes ? ' OFFSET 0' : '';
    const t = this.next('t');
    if (node.op === '!=') {
      const u = this.next('t');
      return (
        `(EXISTS (SELECT 1 FROM metadata_triples ${t} WHERE ${t}.${this.column} = ${id} AND ${this.anyType(t, node.attribute)}${tail})` +
        ` AND NOT EXISTS (SELECT 1 FROM metadata_triples ${u} WHERE ${u}.${this.column} = ${id} AND ${this.tripleCondition(u, node)}${this.probes ? tail : ''}))`
      );
    }
    return `EXISTS (SELECT 1 FROM metadata_triples ${t} WHERE ${t}.${this.column} = ${id} AND ${this.tripleCondition(t, node, probe || this.probes)}${tail})`;
  }

  /** A query returning the ids of matching entries (duplicates possible; used under IN). */
  idSet(node: Condition): string {
    if (node.kind === 'or') return node.children.map((c) => `(${this.idSet(c)})`).join(' UNION ALL ');
    if (node.kind !== 'leaf') {
      const x = this.next('x');
      const terms = node.children.filter((c) => this.isTerm(c));
      if (terms.length >= 2) {
        // As in a conjunction's predicate: the text equalities and measures from the objects' terms.
        const others = node.children.filter((c) => !this.isTerm(c) && !this.isMeasure(c));
        const where = [
          this.onTerms(node.children, x),
          ...others.map((c) => this.predicate(c, `${x}.object_id`, true)),
        ];
        return `SELECT ${x}.object_id FROM metadata_terms ${x} WHERE ${where.join(' AND ')}`;
      }
      const [first, ...rest] = node.children;
      return `SELECT ${x}.id FROM (${this.idSet(first!)}) ${x}(id) WHERE ${rest.map((c) => this.predicate(c, `${x}.id`)).join(' AND ')}`;
    }
    const t = this.next('t');
    if (node.op === '!=') {
      const u = this.next('t');
      return (
        `SELECT ${t}.${this.column} FROM metadata_triples ${t} WHERE ${t}.${this.column} IS NOT NULL AND ${this.anyType(t, node.attribute)}` +
        ` AND NOT EXISTS (SELECT 1 FROM metadata_triples ${u} WHERE ${u}.${this.column} = ${t}.${this.column} AND ${this.tripleCondition(u, node)}${this.probes ? ' OFFSET 0' : ''})`
      );
    }
    return `SELECT ${t}.${this.column} FROM metadata_triples ${t} WHERE ${t}.${this.column} IS NOT NULL AND ${this.tripleCondition(t, node)}`;
  }
}
