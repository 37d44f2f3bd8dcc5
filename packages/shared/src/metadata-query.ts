/**
 * Metadata conditions: the JSON form the API takes, its checks, and the compact text form
 * (`filetype = fits and size > 1e6 and project like 'coast%'`) with a parser whose errors point at
 * the offending position. Shared, so the portal and scripts can check a query before sending it.
 * Syntax: docs/metadata.md.
 */
import { hasControlCharacter } from './control-characters';

export const METADATA_VALUE_TYPES = ['text', 'number', 'time'] as const;
export type MetadataValueType = (typeof METADATA_VALUE_TYPES)[number];

export const COMPARE_OPS = ['=', '!=', '<', '<=', '>', '>='] as const;
export const CONDITION_OPS = [...COMPARE_OPS, 'between', 'in', 'like', 'prefix', 'exists'] as const;
export type ConditionOp = (typeof CONDITION_OPS)[number];

/** Attribute names: a letter or `_`, then letters, digits, `_`, `.`, `:` or `-`; at most 63 characters. */
export const ATTRIBUTE_PATTERN = /^[A-Za-z_][A-Za-z0-9_.:-]{0,62}$/;
export const MAX_VALUE_LENGTH = 512;
export const MAX_UNIT_LENGTH = 64;
/** Limits of one query: leaves, nesting, values of one `in`. */
export const MAX_QUERY_CONDITIONS = 64;
export const MAX_QUERY_DEPTH = 16;
export const MAX_IN_VALUES = 1000;

/** A JSON condition as the API takes it. */
export type ConditionJson =
  | { and: ConditionJson[] }
  | { or: ConditionJson[] }
  | {
      attribute: string;
      op: ConditionOp;
      /** A value; two for `between`; a list for `in`; none for `exists`. */
      value?: string | number | (string | number)[];
      /** How to read string values (default: strings are text, numbers are numbers). */
      type?: MetadataValueType;
    };

/** A typed value: `text` is the canonical text (numbers as JS prints them, times as ISO 8601 in UTC). */
export interface TypedValue {
  type: MetadataValueType;
  text: string;
  num?: number;
  time?: string;
}

/** A checked condition, ready to compile. */
export type Condition =
  | { kind: 'and' | 'or'; children: Condition[] }
  | { kind: 'leaf'; attribute: string; op: ConditionOp; values: TypedValue[]; pattern?: string };

/** Why a value or condition is refused, with where (a JSON path such as `where.and.1.value`). */
export class ConditionError extends Error {
  constructor(
    message: string,
    readonly at: string,
  ) {
    super(message);
    this.name = 'ConditionError';
  }
}

const ISO_TIME = /^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}(:?\d{2})?)?)?$/;

/** Reads a value as the given type (or infers it: JSON numbers are numbers, strings text). Throws a message. */
export function typedValue(value: unknown, type?: MetadataValueType): TypedValue {
  const want = type ?? (typeof value === 'number' ? 'number' : 'text');
  if (typeof value !== 'string' && typeof value !== 'number') throw new Error('must be a string or a number');
  if (want === 'number') {
    const num = typeof value === 'number' ? value : value.trim() === '' ? NaN : Number(value);
    if (!Number.isFinite(num)) throw new Error(`${JSON.stringify(value)} is not a finite number`);
    return { type: 'number', text: String(num), num };
  }
  const s = String(value);
  if (want === 'time') {
    const ms = ISO_TIME.test(s.trim()) ? Date.parse(s.trim().replace(' ', 'T')) : NaN;
    if (!Number.isFinite(ms)) {
      throw new Error(
        `${JSON.stringify(value)} is not a time (ISO 8601, e.g. 2024-05-01 or 2024-05-01T12:00:00Z)`,
      );
    }
    const iso = new Date(ms).toISOString();
    return { type: 'time', text: iso, time: iso };
  }
  if (s.length > MAX_VALUE_LENGTH) throw new Error(`must be at most ${MAX_VALUE_LENGTH} characters`);
  if (hasControlCharacter(s)) throw new Error('must not contain NUL or other control characters');
  return { type: 'text', text: s };
}

export function checkAttribute(name: unknown): string {
  if (typeof name !== 'string' || !ATTRIBUTE_PATTERN.test(name)) {
    throw new Error(
      `${JSON.stringify(name)} is not a valid attribute name (a letter or _, then letters, digits, _ . : -; at most 63)`,
    );
  }
  return name;
}

/** Escapes `%`, `_` and `\` so a text matches itself in LIKE. */
export function escapeLike(s: string): string {
  return s.replace(/[\\%_]/g, (c) => '\\' + c);
}

/** Checks a JSON condition and turns it into a Condition. Throws ConditionError with the JSON path. */
export function checkCondition(json: unknown, at = 'where'): Condition {
  let leaves = 0;
  const walk = (node: unknown, path: string, depth: number): Condition => {
    if (depth > MAX_QUERY_DEPTH)
      throw new ConditionError(`nested deeper than ${MAX_QUERY_DEPTH} levels`, path);
    if (typeof node !== 'object' || node === null || Array.isArray(node)) {
      throw new ConditionError(
        'must be an object: {attribute, op, value} or {and: [...]} or {or: [...]}',
        path,
      );
    }
    const o = node as Record<string, unknown>;
    for (const kind of ['and', 'or'] as const) {
      if (kind in o) {
        const list = o[kind];
        if (Object.keys(o).length !== 1) throw new ConditionError(`"${kind}" must be the only key`, path);
        if (!Array.isArray(list) || list.length === 0) {
          throw new ConditionError(`"${kind}" must be a non-empty list of conditions`, `${path}.${kind}`);
        }
        const children = list.map((c, i) => walk(c, `${path}.${kind}.${i}`, depth + 1));
        return children.length === 1 ? children[0]! : { kind, children };
      }
    }
    leaves += 1;
    if (leaves > MAX_QUERY_CONDITIONS) {
      throw new ConditionError(`at most ${MAX_QUERY_CONDITIONS} conditions in one query`, path);
    }
    let attribute: string;
    try {
      attribute = checkAttribute(o.attribute);
    } catch (err) {
      throw new ConditionError((err as Error).message, `${path}.attribute`);
    }
    const op = o.op;
    if (typeof op !== 'string' || !(CONDITION_OPS as readonly string[]).includes(op)) {
      throw new ConditionError(`op must be one of ${CONDITION_OPS.join(' ')}`, `${path}.op`);
    }
    const type = o.type;
    if (type !== undefined && !(METADATA_VALUE_TYPES as readonly unknown[]).includes(type)) {
      throw new ConditionError(`type must be one of ${METADATA_VALUE_TYPES.join(', ')}`, `${path}.type`);
    }
    const t = type as MetadataValueType | undefined;
    const one = (v: unknown, where: string): TypedValue => {
      try {
        return typedValue(v, t);
      } catch (err) {
        throw new ConditionError((err as Error).message, where);
      }
    };
    const value = o.value;
    const vpath = `${path}.value`;
    switch (op as ConditionOp) {
      case 'exists':
        if (value !== undefined) throw new ConditionError('"exists" takes no value', vpath);
        return { kind: 'leaf', attribute, op: 'exists', values: [] };
      case 'between': {
        if (!Array.isArray(value) || value.length !== 2) {
          throw new ConditionError('"between" takes a list of two values [low, high]', vpath);
        }
        const values = value.map((v, i) => one(v, `${vpath}.${i}`));
        if (values[0]!.type !== values[1]!.type) {
          throw new ConditionError('both ends of "between" must have the same type', vpath);
        }
        if (values[0]!.type === 'text') {
          throw new ConditionError('"between" compares numbers or times; use >= and <= for text', vpath);
        }
        return { kind: 'leaf', attribute, op: 'between', values };
      }
      case 'in': {
        if (!Array.isArray(value) || value.length === 0 || value.length > MAX_IN_VALUES) {
          throw new ConditionError(`"in" takes a list of 1 to ${MAX_IN_VALUES} values`, vpath);
        }
        return { kind: 'leaf', attribute, op: 'in', values: value.map((v, i) => one(v, `${vpath}.${i}`)) };
      }
      case 'like':
      case 'prefix': {
        if (typeof value !== 'string') throw new ConditionError(`"${op}" takes a text value`, vpath);
        if (t !== undefined && t !== 'text')
          throw new ConditionError(`"${op}" matches text values only`, `${path}.type`);
        const v = one(value, vpath);
        const pattern = op === 'prefix' ? escapeLike(v.text) + '%' : v.text;
        return { kind: 'leaf', attribute, op: 'like', values: [v], pattern };
      }
      default: {
        if (Array.isArray(value) || value === undefined) {
          throw new ConditionError(`"${op}" takes one value`, vpath);
        }
        return { kind: 'leaf', attribute, op: op as ConditionOp, values: [one(value, vpath)] };
      }
    }
  };
  return walk(json, at, 0);
}

// ---------------------------------------------------------------------------------------------
// The text form.

/** A syntax error in the text form; `position` is the 0-based offset of the offending part. */
export class QuerySyntaxError extends Error {
  constructor(
    readonly reason: string,
    readonly position: number,
    readonly text: string,
  ) {
    super(`${reason} at position ${position + 1}\n  ${text}\n  ${' '.repeat(position)}^`);
    this.name = 'QuerySyntaxError';
  }
}

type Token =
  | { kind: 'word'; text: string; pos: number }
  | { kind: 'string'; text: string; pos: number }
  | { kind: 'op'; text: string; pos: number }
  | { kind: 'punct'; text: '(' | ')' | ','; pos: number }
  | { kind: 'end'; pos: number };

const KEYWORDS = new Set(['and', 'or', 'between', 'in', 'like', 'prefix', 'exists']);
const WORD_CHAR = /[A-Za-z0-9_.:+\-/]/;

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  while (i < src.length) {
    const ch = src[i]!;
    if (/\s/.test(ch)) {
      i++;
      continue;
    }
    const pos = i;
    if (ch === "'" || ch === '"') {
      let s = '';
      i++;
      for (;;) {
        if (i >= src.length) throw new QuerySyntaxError(`unterminated string (missing ${ch})`, pos, src);
        if (src[i] === ch) {
          if (src[i + 1] === ch) {
            s += ch;
            i += 2;
            continue;
          }
          i++;
          break;
        }
        s += src[i];
        i++;
      }
      out.push({ kind: 'string', text: s, pos });
      continue;
    }
    if (ch === '(' || ch === ')' || ch === ',') {
      out.push({ kind: 'punct', text: ch, pos });
      i++;
      continue;
    }
    const two = src.slice(i, i + 2);
    if (two === '<=' || two === '>=' || two === '!=' || two === '<>') {
      out.push({ kind: 'op', text: two === '<>' ? '!=' : two, pos });
      i += 2;
      continue;
    }
    if (ch === '=' || ch === '<' || ch === '>') {
      out.push({ kind: 'op', text: ch, pos });
      i++;
      continue;
    }
    if (WORD_CHAR.test(ch)) {
      while (i < src.length && WORD_CHAR.test(src[i]!)) i++;
      out.push({ kind: 'word', text: src.slice(pos, i), pos });
      continue;
    }
    throw new QuerySyntaxError(`unexpected character ${JSON.stringify(ch)}`, pos, src);
  }
  out.push({ kind: 'end', pos: src.length });
  return out;
}

const NUMBER = /^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/;
const DATE_WORD = /^\d{4}-\d{2}-\d{2}(T[0-9:.]+(Z|[+-]\d{2}(:?\d{2})?)?)?$/;

function describe(t: Token): string {
  return t.kind === 'end' ? 'the end of the query' : `"${t.text}"`;
}

/**
 * Parses the text form into the JSON form. Values: numbers (`1e6`, `-3.5`) are numbers, dates
 * (`2024-05-01`, `2024-05-01T12:00:00Z`) are times, quoted strings and other bare words are text.
 * Keywords (case-insensitive): and, or, between, in, like, prefix, exists; `and` binds tighter than `or`.
 */
export function parseQueryText(src: string): ConditionJson {
  if (src.trim() === '') throw new QuerySyntaxError('the query is empty', 0, src);
  const tokens = tokenize(src);
  let at = 0;
  const peek = (): Token => tokens[at]!;
  const next = (): Token => tokens[at++]!;
  const isWord = (t: Token, w: string): boolean => t.kind === 'word' && t.text.toLowerCase() === w;
  const fail = (reason: string, t: Token = peek()): never => {
    throw new QuerySyntaxError(reason, t.pos, src);
  };

  const value = (): { value: string | number; type?: MetadataValueType } => {
    const t = next();
    if (t.kind === 'string') return { value: t.text };
    if (t.kind === 'word' && !KEYWORDS.has(t.text.toLowerCase())) {
      if (NUMBER.test(t.text)) return { value: Number(t.text) };
      if (DATE_WORD.test(t.text)) {
        try {
          return { value: typedValue(t.text, 'time').text, type: 'time' };
        } catch {
          return fail(`${t.text} is not a valid date`, t);
        }
      }
      return { value: t.text };
    }
    return fail(`expected a value, found ${describe(t)}`, t);
  };

  const condition = (): ConditionJson => {
    const t = next();
    if (t.kind !== 'word' || KEYWORDS.has(t.text.toLowerCase())) {
      return fail(`expected an attribute name, found ${describe(t)}`, t);
    }
    if (!ATTRIBUTE_PATTERN.test(t.text)) return fail(`"${t.text}" is not a valid attribute name`, t);
    const attribute = t.text;
    const o = next();
    if (o.kind === 'op') {
      const v = value();
      return { attribute, op: o.text as ConditionOp, ...v };
    }
    const kw = o.kind === 'word' ? o.text.toLowerCase() : '';
    if (kw === 'exists') return { attribute, op: 'exists' };
    if (kw === 'like' || kw === 'prefix') {
      const v = next();
      if (v.kind !== 'string' && !(v.kind === 'word' && !KEYWORDS.has(v.text.toLowerCase()))) {
        return fail(`expected a text after ${kw}, found ${describe(v)}`, v);
      }
      return { attribute, op: kw, value: v.text };
    }
    if (kw === 'between') {
      const lowTok = peek();
      const low = value();
      if (!isWord(peek(), 'and'))
        fail(`expected "and" after the low end of between, found ${describe(peek())}`);
      next();
      const highTok = peek();
      const high = value();
      if ((low.type ?? typeof low.value) !== (high.type ?? typeof high.value)) {
        fail('both ends of between must be numbers or both times', highTok);
      }
      if (typeof low.value === 'string' && low.type !== 'time') {
        fail('between compares numbers or times; quote-free numbers or dates expected', lowTok);
      }
      return {
        attribute,
        op: 'between',
        value: [low.value, high.value],
        ...(low.type ? { type: low.type } : {}),
      };
    }
    if (kw === 'in') {
      const open = next();
      if (open.kind !== 'punct' || open.text !== '(')
        fail(`expected "(" after in, found ${describe(open)}`, open);
      const values: (string | number)[] = [];
      let type: MetadataValueType | undefined;
      for (;;) {
        const v = value();
        values.push(v.value);
        if (v.type) type = v.type;
        const sep = next();
        if (sep.kind === 'punct' && sep.text === ')') break;
        if (sep.kind !== 'punct' || sep.text !== ',')
          fail(`expected "," or ")" in the list, found ${describe(sep)}`, sep);
      }
      if (type === 'time' && values.some((v) => typeof v === 'number')) {
        fail('a list mixes dates and numbers', open);
      }
      return { attribute, op: 'in', value: values, ...(type ? { type } : {}) };
    }
    return fail(
      `expected an operator (= != < <= > >= between in like prefix exists) after ${attribute}, found ${describe(o)}`,
      o,
    );
  };

  const primary = (depth: number): ConditionJson => {
    if (depth > MAX_QUERY_DEPTH) fail(`parentheses nested deeper than ${MAX_QUERY_DEPTH}`);
    const t = peek();
    if (t.kind === 'punct' && t.text === '(') {
      next();
      const inner = disjunction(depth + 1);
      const close = next();
      if (close.kind !== 'punct' || close.text !== ')')
        fail(`expected ")" to close the "(" at position ${t.pos + 1}, found ${describe(close)}`, close);
      return inner;
    }
    return condition();
  };
  const conjunction = (depth: number): ConditionJson => {
    const parts = [primary(depth)];
    while (isWord(peek(), 'and')) {
      next();
      parts.push(primary(depth));
    }
    return parts.length === 1 ? parts[0]! : { and: parts };
  };
  const disjunction = (depth: number): ConditionJson => {
    const parts = [conjunction(depth)];
    while (isWord(peek(), 'or')) {
      next();
      parts.push(conjunction(depth));
    }
    return parts.length === 1 ? parts[0]! : { or: parts };
  };

  const result = disjunction(0);
  const rest = peek();
  if (rest.kind !== 'end') {
    fail(`expected "and", "or" or the end of the query, found ${describe(rest)}`, rest);
  }
  return result;
}
